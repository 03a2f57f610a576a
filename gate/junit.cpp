#include "gate/junit.hpp"

#include <fmt/format.h>

namespace akv::gate {

std::string xml_escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        if ((c < 0x20 && c != '\t' && c != '\n') || c == 0x7f)
          out += "\xEF\xBF\xBD";  // U+FFFD: not a character XML 1.0 allows
        else
          out += static_cast<char>(c);
    }
  }
  return out;
}

std::string junit_xml(const std::vector<Check>& checks, const std::string& suite, const std::string& properties_line) {
  int failures = 0, skipped = 0;
  double total = 0;
  for (const Check& c : checks) {
    failures += c.result == "fail";
    skipped += c.result == "skipped";
    total += c.seconds;
  }
  std::string x = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  x += fmt::format("<testsuites tests=\"{}\" failures=\"{}\" skipped=\"{}\" time=\"{:.3f}\">\n", checks.size(), failures, skipped, total);
  x += fmt::format("  <testsuite name=\"akv gate: {}\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"{}\" time=\"{:.3f}\">\n",
                   xml_escape(suite), checks.size(), failures, skipped, total);
  x += fmt::format("    <properties><property name=\"run\" value=\"{}\"/></properties>\n", xml_escape(properties_line));
  for (const Check& c : checks) {
    x += fmt::format("    <testcase classname=\"{}\" name=\"{}\" time=\"{:.3f}\"", xml_escape("akv.gate." + c.op), xml_escape(c.property), c.seconds);
    if (c.result == "pass") {
      x += "/>\n";
      continue;
    }
    x += ">\n";
    if (c.result == "skipped") {
      x += fmt::format("      <skipped message=\"{}\"/>\n", xml_escape(c.message));
    } else {
      std::string text = c.message;
      if (!c.reproduce.empty()) text += "\nreproduce: RC_PARAMS=\"" + c.reproduce + "\" (with --check " + c.property + ")";
      if (!c.counterexample.empty()) text += "\ncounterexample: " + c.counterexample;
      if (!c.c_snippet.empty()) text += "\nC snippet: " + c.c_snippet;
      x += fmt::format("      <failure message=\"{}\" type=\"{}\">{}</failure>\n", xml_escape(c.message.substr(0, c.message.find('\n'))),
                       xml_escape(c.kind), xml_escape(text));
    }
    x += "    </testcase>\n";
  }
  x += "  </testsuite>\n</testsuites>\n";
  return x;
}

}  // namespace akv::gate
