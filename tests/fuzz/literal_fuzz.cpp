// libFuzzer target for rtcg-scan's string-literal decoding: any token spelling is decoded or refused
// with a message; a decoded literal has one C++ position per byte, each within the spelling's
// lines, and every DSL position maps to a position (past the end: the end). Never a crash or a
// sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "LiteralDecode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string spelling(reinterpret_cast<const char*>(data), size);
  rtcg::MappedText out;
  std::string error;
  rtcg::CppPos start{3, 7};
  if (!rtcg::appendLiteralToken(spelling, start, out, &error)) {
    if (error.empty()) __builtin_trap();
    return 0;
  }
  if (out.pos.size() != out.text.size()) __builtin_trap();
  int lines = 1;
  for (char c : spelling) lines += c == '\n';
  for (const rtcg::CppPos& p : out.pos)
    if (p.line < start.line || p.line >= start.line + lines || p.col < 1) __builtin_trap();
  int line = 1, col = 1;
  for (size_t i = 0; i <= out.text.size(); ++i) {
    rtcg::CppPos p = rtcg::mapDslPosition(out, line, col);
    if (p.line < 1) __builtin_trap();
    if (i < out.text.size() && out.text[i] == '\n') ++line, col = 1;
    else ++col;
  }
  return 0;
}
