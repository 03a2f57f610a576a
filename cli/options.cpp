#include "cli/options.hpp"
#include <unistd.h>
#include <fstream>
#include <cstdio>

#include <iostream>
#include <nlohmann/json.hpp>

#include "reference/error.hpp"
#include "reference/strict.hpp"

namespace akv::cli {

CLI::Validator decimal(uint64_t lo, uint64_t hi) {
  const std::string range = "[" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
  return CLI::Validator(
      [lo, hi, range](std::string& s) -> std::string {
        if (parse_decimal(s, lo, hi)) return {};
        return "'" + printable(s, 40) + "' is not a decimal integer in " + range;
      },
      "INT in " + range);
}

CLI::Validator nonempty() {
  return CLI::Validator([](std::string& s) -> std::string { return s.empty() ? "empty value" : ""; }, "");
}

CLI::Validator one_of(const std::vector<std::string>& names) {
  return CLI::Validator(
      [names](std::string& s) -> std::string {
        for (const auto& n : names)
          if (s == n) return {};
        return "'" + printable(s, 40) + "' is not one of " + names_help(names);
      },
      "");
}

std::string names_help(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : " | ") + n;
  return s;
}

std::vector<size_t> index_list(const std::string& option, const std::string& text) {
  std::vector<size_t> out;
  size_t at = 0;
  for (;;) {
    const size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    const auto v = parse_decimal(item, 0, SIZE_MAX);
    if (!v)
      throw Error(ErrorCode::kBadInput, option + ": '" + printable(item, 40) + "' in '" + printable(text, 80) +
                                            "' is not a message index (a decimal integer >= 0)");
    out.push_back(static_cast<size_t>(*v));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

void print_json(const nlohmann::json& j) {
  std::cout << j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n" << std::flush;
}

int& json_error_fd() {
  static int fd = 1;
  return fd;
}

void write_text_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f << text;
    f.flush();
    if (!f) {
      std::remove(tmp.c_str());
      throw Error(ErrorCode::kBadInput, printable(path, 200) + ": cannot be written");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    throw Error(ErrorCode::kBadInput, printable(path, 200) + ": cannot be written");
  }
}

}  // namespace akv::cli
