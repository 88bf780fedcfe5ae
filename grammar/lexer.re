// The DSL lexer. re2c turns this file into DslLexer.cpp at build time (src/frontend/CMakeLists.txt).
// It is deliberately thin, in the style of ninja's lexer: the regular expressions only find token
// boundaries; numbers are decoded and checked in plain C++ below.
//
// End of input uses re2c's "sentinel with bounds check" method: the NUL that std::string keeps
// after its last byte is the sentinel, and a NUL inside the text is an ordinary (invalid) byte.

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cfloat>
#include <cmath>
#include <limits>
#include <cstdint>

#include <fmt/format.h>

#include "frontend/Lexer.h"

namespace rtcg::frontend {

Lexer::Lexer(const std::string& source, const LineMap& lines, Diagnostics& diags)
    : source_(source), lines_(lines), diags_(diags),
      cur_(reinterpret_cast<const unsigned char*>(source.c_str())),
      lim_(reinterpret_cast<const unsigned char*>(source.c_str()) + source.size()),
      startErrors_(diags.errorCount()) {}

void Lexer::error(int begin, int end, std::string message) {
  lastError_ = begin;
  diags_.error(lines_.loc({begin, end}), std::move(message));
}

Parser::symbol_type Lexer::next() {
  prevEnd_ = last_.end;
  Parser::symbol_type t = scan();
  last_ = t.location;
  return t;
}

bool Lexer::tooManyErrors() {
  if (diags_.errorCount() - startErrors_ < kMaxErrors) return false;
  if (!stopped_) diags_.note({}, "too many errors; stopping here");
  stopped_ = true;
  return true;
}

void Lexer::skipBlockComment(int begin) {
  size_t close = source_.find("*/", cur_ - reinterpret_cast<const unsigned char*>(source_.c_str()));
  if (close == std::string::npos) {
    error(begin, begin + 2, "unterminated comment: '/*' has no matching '*/'");
    cur_ = lim_;
  } else {
    // A NUL byte is refused in a `//` comment (it ends the comment and is an unexpected byte):
    // in a block comment too, once, at its place.
    const size_t from = size_t(cur_ - reinterpret_cast<const unsigned char*>(source_.c_str()));
    if (size_t nul = source_.find('\0', from); nul < close) error(int(nul), int(nul) + 1, "unexpected byte 0x00");
    cur_ = reinterpret_cast<const unsigned char*>(source_.c_str()) + close + 2;
  }
}

// The power of ten of a float literal's leading nonzero digit (2 for 123.4, -3 for 0.00123e0,
// 309 for 1e309), saturated far beyond any double's range; 0 for zero.
static int64_t decimalExponent(std::string_view body) {
  size_t e = body.find_first_of("eE");
  std::string_view mantissa = body.substr(0, e);
  int64_t exponent = 0;
  if (e != std::string_view::npos) {
    size_t i = e + 1;
    bool negative = i < body.size() && body[i] == '-';
    if (i < body.size() && (body[i] == '+' || body[i] == '-')) ++i;
    for (; i < body.size(); ++i) exponent = std::min<int64_t>(exponent * 10 + (body[i] - '0'), int64_t(1) << 40);
    if (negative) exponent = -exponent;
  }
  size_t dot = mantissa.find('.');
  std::string_view whole = mantissa.substr(0, dot);
  size_t lead = whole.find_first_not_of('0');
  if (lead != std::string_view::npos) return exponent + int64_t(whole.size() - lead) - 1;
  if (dot == std::string_view::npos) return 0;
  size_t first = mantissa.find_first_not_of('0', dot + 1);
  return first == std::string_view::npos ? 0 : exponent - int64_t(first - dot);
}

// Decodes a numeric literal token: digits, optional fraction and exponent, optional type suffix
// (the regular expression also swallows any identifier characters after the number, so that
// `2x` is one bad literal rather than `2` followed by `x`).
Parser::symbol_type Lexer::number(int begin, int end) {
  std::string_view text(source_.data() + begin, end - begin);
  size_t i = 0;
  auto digits = [&] { while (i < text.size() && std::isdigit((unsigned char)text[i])) ++i; };
  digits();
  bool floating = false;
  if (i + 1 < text.size() && text[i] == '.' && std::isdigit((unsigned char)text[i + 1])) {
    floating = true;
    ++i;
    digits();
  }
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    size_t j = i + 1;
    if (j < text.size() && (text[j] == '+' || text[j] == '-')) ++j;
    if (j < text.size() && std::isdigit((unsigned char)text[j])) {
      floating = true;
      i = j;
      digits();
    }
  }
  std::string_view body = text.substr(0, i), suffix = text.substr(i);
  ast::Span span{begin, end};

  ast::Number n;
  if (!suffix.empty()) {
    std::optional<ScalarType> t = parseTypeName(std::string(suffix));
    if (!t || *t == ScalarType::Bool || isHalf(*t)) {  // f16 and bf16 literals: f16(2.5) rounds explicitly
      error(begin + (int)i, end,
            fmt::format("invalid suffix '{}' on numeric literal; the type suffixes are i32, i64, u32, f32 "
                        "and f64", suffix));
      n.valid = false;
    } else if (floating && isIntegral(*t)) {
      error(begin, end, fmt::format("float literal '{}' cannot have the integer suffix '{}'", body, suffix));
      n.valid = false;
    } else {
      n.suffix = t;
      if (isFloat(*t)) floating = true;  // 2f32 is the float 2.0
    }
  }
  n.isFloat = floating;
  if (!n.valid) return Parser::make_NUMBER(n, span);

  if (floating) {
    auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), n.floatValue);
    // Out of range leaves the value as it was (0), so overflow and underflow are told apart by
    // the literal's decimal exponent, not by the value: 1e309 was silently 0.0.
    bool tooBig = ec == std::errc::result_out_of_range && decimalExponent(body) >= 0;
    if (ec == std::errc::result_out_of_range && !tooBig) n.floatValue = 0.0;  // underflow: 1e-999 is 0
    // As an f32, rounded once from the decimal text: through the double, a literal just below
    // FLT_MAX plus half an ulp (3.4028235677973366e38) became that midpoint and then infinity.
    auto [pf, ecf] = std::from_chars(body.data(), body.data() + body.size(), n.f32Value);
    if (ecf == std::errc::result_out_of_range)
      n.f32Value = decimalExponent(body) >= 0 ? std::numeric_limits<float>::infinity() : 0.0f;
    const bool f32 = n.suffix == ScalarType::F32;
    if (tooBig || std::isinf(n.floatValue) || (f32 && std::isinf(n.f32Value))) {
      error(begin, end, f32 && !tooBig && !std::isinf(n.floatValue)
                            ? fmt::format("float literal '{}' is out of range for f32: it rounds to infinity (the "
                                          "largest f32 is 3.4028235e38)", body)
                            : fmt::format("float literal '{}' is out of range for {}", body, f32 ? "f32" : "f64"));
      n.valid = false;
    } else if (f32) {
      n.floatValue = double(n.f32Value);  // exact: the literal is this f32 value
    }
  } else {
    uint64_t v = 0;
    auto [p, ec] = std::from_chars(body.data(), body.data() + body.size(), v);
    const ScalarType limitType = n.suffix == ScalarType::I32 || n.suffix == ScalarType::U32 ? *n.suffix : ScalarType::I64;
    int64_t limit = limitType == ScalarType::I32 ? INT32_MAX : limitType == ScalarType::U32 ? int64_t(UINT32_MAX) : INT64_MAX;
    if (ec != std::errc() || v > (uint64_t)limit) {
      error(begin, end, fmt::format("integer literal '{}' is too large for {} (the largest is {})",
                                    body, typeName(limitType), limit));
      n.valid = false;
    } else {
      n.intValue = (int64_t)v;
    }
  }
  return Parser::make_NUMBER(n, span);
}

// An identifier, refused (but still returned, so that parsing goes on) past kMaxIdentifierLength.
Parser::symbol_type Lexer::identifier(int begin, int end) {
  if (end - begin > kMaxIdentifierLength)
    error(begin, end, fmt::format("identifier is {} characters long; the limit is {}", end - begin, kMaxIdentifierLength));
  return Parser::make_IDENT(source_.substr(begin, end - begin), ast::Span{begin, end});
}

Parser::symbol_type Lexer::scan() {
  const unsigned char* base = reinterpret_cast<const unsigned char*>(source_.c_str());
  const unsigned char* mar = nullptr;
  for (;;) {
    // Checked per token and per skipped bad character, so that a binary file stops quickly.
    if (tooManyErrors()) return Parser::make_END({(int)source_.size(), (int)source_.size()});
    const unsigned char* tok = cur_;
    int b = (int)(tok - base);
    auto span = [&] { return ast::Span{b, (int)(cur_ - base)}; };
    (void)mar;
    /*!re2c
      re2c:api:style = free-form;
      re2c:define:YYCTYPE = "unsigned char";
      re2c:define:YYCURSOR = cur_;
      re2c:define:YYLIMIT = lim_;
      re2c:define:YYMARKER = mar;
      re2c:yyfill:enable = 0;
      re2c:eof = 0;

      ident  = [a-zA-Z_][a-zA-Z0-9_]*;
      number = [0-9]+ ("." [0-9]+)? ([eE] [+-]? [0-9]+)? [a-zA-Z0-9_]*;

      $                    { return Parser::make_END({b, b}); }
      [ \t\r\n\v\f]+       { continue; }
      "//" [^\n\x00]*      { continue; }
      "/*"                 { skipBlockComment(b); continue; }

      "kernel"             { return Parser::make_KERNEL(span()); }
      "for"                { return Parser::make_FOR(span()); }
      "in"                 { return Parser::make_IN(span()); }
      "out"                { return Parser::make_OUT(span()); }
      "inout"              { return Parser::make_INOUT(span()); }
      "let"                { return Parser::make_LET(span()); }
      "local"              { return Parser::make_LOCAL(span()); }
      ident                { return identifier(b, (int)(cur_ - base)); }
      number               { return number(b, (int)(cur_ - base)); }

      ".."                 { return Parser::make_DOTDOT(span()); }
      "<="                 { return Parser::make_LE(span()); }
      ">="                 { return Parser::make_GE(span()); }
      "=="                 { return Parser::make_EQ(span()); }
      "!="                 { return Parser::make_NE(span()); }
      "&&"                 { return Parser::make_AND(span()); }
      "||"                 { return Parser::make_OR(span()); }
      "<"                  { return Parser::make_LT(span()); }
      ">"                  { return Parser::make_GT(span()); }
      "!"                  { return Parser::make_NOT(span()); }
      "="                  { return Parser::make_ASSIGN(span()); }
      "+="                 { return Parser::make_PLUSASSIGN(span()); }
      "+"                  { return Parser::make_PLUS(span()); }
      "-"                  { return Parser::make_MINUS(span()); }
      "*"                  { return Parser::make_STAR(span()); }
      "/"                  { return Parser::make_SLASH(span()); }
      "%"                  { return Parser::make_PERCENT(span()); }
      "("                  { return Parser::make_LPAREN(span()); }
      ")"                  { return Parser::make_RPAREN(span()); }
      "["                  { return Parser::make_LBRACKET(span()); }
      "]"                  { return Parser::make_RBRACKET(span()); }
      "{"                  { return Parser::make_LBRACE(span()); }
      "}"                  { return Parser::make_RBRACE(span()); }
      ","                  { return Parser::make_COMMA(span()); }
      ";"                  { return Parser::make_SEMI(span()); }
      ":"                  { return Parser::make_COLON(span()); }

      [\x80-\xff]+         {
        error(b, (int)(cur_ - base), "non-ASCII characters are only allowed in comments");
        continue;
      }
      *                    {
        unsigned char c = *tok;
        if (std::isprint(c))
          error(b, b + 1, fmt::format("unexpected character '{}'", (char)c));
        else
          error(b, b + 1, fmt::format("unexpected byte 0x{:02x}", (unsigned)c));
        continue;
      }
    */
  }
}

}  // namespace rtcg::frontend
