#include "LiteralDecode.h"

#include <fmt/format.h>

namespace rtcg {
namespace {

// Walks a token's spelling, tracking the C++ line and column of the current byte.
struct Cursor {
  std::string_view s;
  size_t i = 0;
  CppPos at;
  bool done() const { return i >= s.size(); }
  char peek(size_t ahead = 0) const { return i + ahead < s.size() ? s[i + ahead] : '\0'; }
  void advance() {
    if (s[i] == '\n') {
      ++at.line;
      at.col = 1;
    } else {
      ++at.col;
    }
    ++i;
  }
};

bool isOctal(char c) { return c >= '0' && c <= '7'; }
int hexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void appendUtf8(uint32_t cp, CppPos at, MappedText& out) {
  auto put = [&](uint32_t byte) {
    out.text += char(byte);
    out.pos.push_back(at);
  };
  if (cp < 0x80) {
    put(cp);
  } else if (cp < 0x800) {
    put(0xC0 | (cp >> 6)), put(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    put(0xE0 | (cp >> 12)), put(0x80 | ((cp >> 6) & 0x3F)), put(0x80 | (cp & 0x3F));
  } else {
    put(0xF0 | (cp >> 18)), put(0x80 | ((cp >> 12) & 0x3F)), put(0x80 | ((cp >> 6) & 0x3F)), put(0x80 | (cp & 0x3F));
  }
}

// One escape sequence; the cursor is on the backslash. Every byte it produces maps to the backslash.
bool decodeEscape(Cursor& c, MappedText& out, std::string* error) {
  CppPos at = c.at;
  c.advance();  // the backslash
  if (c.done()) return *error = "a string literal ends in a backslash", false;
  char e = c.peek();
  auto put = [&](char byte) {
    out.text += byte;
    out.pos.push_back(at);
  };
  switch (e) {
    case 'n': c.advance(), put('\n'); return true;
    case 't': c.advance(), put('\t'); return true;
    case 'r': c.advance(), put('\r'); return true;
    case 'v': c.advance(), put('\v'); return true;
    case 'f': c.advance(), put('\f'); return true;
    case 'a': c.advance(), put('\a'); return true;
    case 'b': c.advance(), put('\b'); return true;
    case '\\': case '"': case '\'': case '?': c.advance(), put(e); return true;
    case '\n': c.advance(); return true;  // a line continuation: no character
    case 'x': {
      c.advance();
      uint32_t v = 0;
      int digits = 0;
      for (; hexValue(c.peek()) >= 0; ++digits) v = v * 16 + hexValue(c.peek()), c.advance();
      if (digits == 0) return *error = "\\x without hexadecimal digits", false;
      put(char(v & 0xFF));
      return true;
    }
    case 'u': case 'U': {
      c.advance();
      int want = e == 'u' ? 4 : 8;
      uint32_t v = 0;
      for (int k = 0; k < want; ++k) {
        if (hexValue(c.peek()) < 0) return *error = fmt::format("\\{} needs {} hexadecimal digits", e, want), false;
        v = v * 16 + hexValue(c.peek()), c.advance();
      }
      appendUtf8(v, at, out);
      return true;
    }
    default:
      if (isOctal(e)) {
        uint32_t v = 0;
        for (int k = 0; k < 3 && isOctal(c.peek()); ++k) v = v * 8 + (c.peek() - '0'), c.advance();
        put(char(v & 0xFF));
        return true;
      }
      return *error = fmt::format("unknown escape sequence '\\{}'", e), false;
  }
}

}  // namespace

bool appendLiteralToken(std::string_view spelling, CppPos start, MappedText& out, std::string* error) {
  size_t quote = spelling.find('"');
  if (quote == std::string_view::npos || spelling.size() < quote + 2 || spelling.back() != '"')
    return *error = "not a string literal", false;
  std::string_view prefix = spelling.substr(0, quote);
  bool raw = !prefix.empty() && prefix.back() == 'R';
  Cursor c{spelling, 0, start};
  while (c.i <= quote) c.advance();  // prefix and opening quote

  if (raw) {
    size_t open = spelling.find('(', quote);
    if (open == std::string_view::npos) return *error = "a raw string literal without '('", false;
    std::string closing = fmt::format("){}\"", spelling.substr(quote + 1, open - quote - 1));
    if (spelling.size() < open + 1 + closing.size() || !spelling.ends_with(closing))
      return *error = "a raw string literal without its closing delimiter", false;
    while (c.i <= open) c.advance();
    size_t contentEnd = spelling.size() - closing.size();
    while (c.i < contentEnd) {
      out.text += c.peek();
      out.pos.push_back(c.at);
      c.advance();
    }
  } else {
    size_t contentEnd = spelling.size() - 1;
    while (c.i < contentEnd) {
      if (c.peek() == '\\') {
        if (!decodeEscape(c, out, error)) return false;
        continue;
      }
      out.text += c.peek();
      out.pos.push_back(c.at);
      c.advance();
    }
  }
  while (c.i + 1 < spelling.size()) c.advance();  // the closing delimiter
  out.end = c.at;                                  // the closing quote
  return true;
}

CppPos mapDslPosition(const MappedText& text, int line, int col) {
  size_t offset = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = text.text.find('\n', offset);
    if (nl == std::string::npos) return text.end;
    offset = nl + 1;
  }
  offset += size_t(col > 0 ? col - 1 : 0);
  return offset < text.pos.size() ? text.pos[offset] : text.end;
}

}  // namespace rtcg
