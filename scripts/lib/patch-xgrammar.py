#!/usr/bin/env python3
"""Three fixes to xgrammar 0.2.8's JSON-schema converter, applied by scripts/fetch-xgrammar to the
pinned sdist's cpp/json_schema_converter.cc before it builds. Without them a grammar admits JSON
that is not valid (spec/serving.md SV14; chat/README.md):

  A. a string with minLength/maxLength (and no pattern or format) took the raw control
     characters U+0000-U+001F other than \\r and \\n: `"a<TAB>b"` is not JSON (RFC 8259 section 7);
  B. a \\uXXXX escape took the surrogate code units \\uD800-\\uDFFF, alone too: `"\\ud800"` is no
     Unicode text and strict parsers (nlohmann-json) refuse it. Escapes are now the 63488 others;
     a character beyond U+FFFF is written as its UTF-8 bytes.

  C. a number without bounds took any count of digits and any exponent: `8e847` and a
     400-digit integer are JSON text, but overflow a double (nlohmann-json refuses them, others
     read infinity). Such an integer now has at most 18 digits (within int64), such a number at
     most 16 before its point and an exponent of at most 2 digits (within 1e116).

Each fix must match the source exactly once, else the file is left as it was and the exit is 1.
Usage: patch-xgrammar.py PATH/TO/json_schema_converter.cc
"""
import sys

PATCHES = [
    (
        "A",
        """builder_.AddCharacterClass({{'"', '"'}, {'\\\\', '\\\\'}, {'\\r', '\\r'}, {'\\n', '\\n'}}, true);""",
        """builder_.AddCharacterClass({{0, 0x1f}, {'"', '"'}, {'\\\\', '\\\\'}}, true);""",
    ),
    (
        "B",
        """  int32_t unicode_escape = Sequence(
      {ByteString("u"),
       hexadecimal_character,
       hexadecimal_character,
       hexadecimal_character,
       hexadecimal_character}
  );
  builder_.UpdateRuleBody(kBasicEscape, Choice({escaped_character, unicode_escape}));""",
        """  int32_t unicode_escape_not_d = Sequence(
      {ByteString("u"),
       builder_.AddCharacterClass({{'0', '9'}, {'A', 'C'}, {'E', 'F'}, {'a', 'c'}, {'e', 'f'}}),
       hexadecimal_character,
       hexadecimal_character,
       hexadecimal_character}
  );
  int32_t unicode_escape_d = Sequence(
      {ByteString("u"),
       builder_.AddCharacterClass({{'D', 'D'}, {'d', 'd'}}),
       builder_.AddCharacterClass({{'0', '7'}}),
       hexadecimal_character,
       hexadecimal_character}
  );
  builder_.UpdateRuleBody(
      kBasicEscape, Choice({escaped_character, unicode_escape_not_d, unicode_escape_d})
  );""",
    ),
    (
        "C: integer digits",
        """            builder_.AddCharacterClassStar({{'0', '9'}})}
       )}
  );
}

int32_t JSONSchemaConverter::GenerateIntegerMultipleOfDFA(""",
        """            Repeat(rule_name + "_digits", builder_.AddCharacterClass({{'0', '9'}}), 0, 17)}
       )}
  );
}

int32_t JSONSchemaConverter::GenerateIntegerMultipleOfDFA(""",
    ),
    (
        "C: number digits",
        """           {builder_.AddCharacterClass({{'1', '9'}}), builder_.AddCharacterClassStar({{'0', '9'}})}""",
        """           {builder_.AddCharacterClass({{'1', '9'}}),
            Repeat(rule_name + "_integer_digits", builder_.AddCharacterClass({{'0', '9'}}), 0, 15)}""",
    ),
    (
        "C: exponent digits",
        """            Choice({Empty(), builder_.AddCharacterClass({{'+', '+'}, {'-', '-'}})}),
            one_or_more_digits}""",
        """            Choice({Empty(), builder_.AddCharacterClass({{'+', '+'}, {'-', '-'}})}),
            Repeat(rule_name + "_exponent_digits", builder_.AddCharacterClass({{'0', '9'}}), 1, 2)}""",
    ),
]


def main() -> int:
    if len(sys.argv) != 2:
        print("usage: patch-xgrammar.py json_schema_converter.cc", file=sys.stderr)
        return 2
    path = sys.argv[1]
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for name, old, new in PATCHES:
        if text.count(old) != 1:
            print(f"patch {name}: its source text is not in {path} exactly once", file=sys.stderr)
            return 1
        text = text.replace(old, new)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
