// Decoding C++ string-literal tokens as they are spelled in the file, keeping the position of
// every decoded byte: raw strings (`R"delim(...)delim"`), encoding prefixes, escape sequences and
// line continuations. Adjacent literals ("a" "b") are decoded one token after another into the
// same MappedText.
#pragma once

#include <string>
#include <string_view>

#include "Findings.h"

namespace rtcg {

// Appends the characters of the literal token `spelling` (which starts at `start` in the C++ file)
// to `out`. Returns false, with `error` set, when the spelling is not a string literal it can read.
bool appendLiteralToken(std::string_view spelling, CppPos start, MappedText& out, std::string* error);

// The C++ position of the DSL text position (line, col) (1-based, byte columns, as rtcg's
// Diagnostics report them); a position past the end of the text maps to `text.end`.
CppPos mapDslPosition(const MappedText& text, int line, int col);

}  // namespace rtcg
