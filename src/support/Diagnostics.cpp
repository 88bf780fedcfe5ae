#include "support/Diagnostics.h"

#include <fmt/format.h>

#include <algorithm>

#include "support/Error.h"

namespace rtcg {

void internalError(const char* file, int line, const std::string& message) {
  throw InternalError(fmt::format("internal error in rtcg at {}:{}: {}", file, line, message));
}

void Diagnostics::error(SourceLoc loc, std::string message) {
  add({Severity::Error, loc, std::move(message)});
}
void Diagnostics::warning(SourceLoc loc, std::string message) {
  add({Severity::Warning, loc, std::move(message)});
}
void Diagnostics::note(SourceLoc loc, std::string message) {
  add({Severity::Note, loc, std::move(message)});
}
void Diagnostics::add(Diagnostic d) {
  if (d.severity == Severity::Error && ++errorCount_ > kMaxStoredErrors && !dropping_) {
    dropping_ = true;
    list_.push_back({Severity::Note, {}, fmt::format("too many errors; only the first {} are shown", kMaxStoredErrors)});
  }
  if (!dropping_) list_.push_back(std::move(d));
}

static std::string_view lineOf(std::string_view source, int line) {
  size_t start = 0;
  for (int l = 1; l < line; ++l) {
    size_t nl = source.find('\n', start);
    if (nl == std::string_view::npos) return {};
    start = nl + 1;
  }
  size_t end = source.find('\n', start);
  if (end == std::string_view::npos) end = source.size();
  std::string_view text = source.substr(start, end - start);
  if (!text.empty() && text.back() == '\r') text.remove_suffix(1);
  return text;
}

namespace {

// `text` with control bytes other than tab shown as '?', one column each as the caret counts them:
// a NUL ended the output of every later diagnostic (C strings), and a lone carriage return moved
// the terminal's cursor back to the start of the line, so the caret pointed elsewhere.
std::string visible(std::string_view text) {
  std::string out(text);
  for (char& c : out)
    if (((unsigned char)c < 0x20 && c != '\t') || c == 0x7f) c = '?';
  return out;
}

// The echoed source line and where its caret goes (1-based column, length).
struct EchoedLine {
  std::string text;
  int col = 1, length = 1;
};

// `text` itself when it is at most kMaxEchoedLine long; else the kMaxEchoedLine characters around
// the caret (a third before it), "..." marking each cut, and the underline cut at the window's end.
// Every error of a one-line 289 KB program echoed the whole line before (quadratic output).
EchoedLine clipAroundCaret(std::string_view text, SourceLoc loc) {
  const int size = (int)text.size();
  if (size <= kMaxEchoedLine) return {visible(text), loc.col, loc.length};
  int begin = std::max(0, std::min(loc.col - 1 - kMaxEchoedLine / 3, size - kMaxEchoedLine));
  int end = std::min(size, begin + kMaxEchoedLine);
  std::string prefix = begin > 0 ? "..." : "", suffix = end < size ? "..." : "";
  EchoedLine e;
  e.text = prefix + visible(text.substr(begin, end - begin)) + suffix;
  e.col = loc.col - begin + (int)prefix.size();
  e.length = std::max(1, std::min(loc.length, end - (loc.col - 1)));
  return e;
}

}  // namespace

std::string renderDiagnostic(const Diagnostic& d, std::string_view fileName, std::string_view source) {
  const char* kind = d.severity == Severity::Error ? "error" : d.severity == Severity::Warning ? "warning" : "note";
  std::string out;
  if (d.loc.valid())
    out = fmt::format("{}:{}:{}: {}: {}\n", fileName, d.loc.line, d.loc.col, kind, d.message);
  else
    out = fmt::format("{}: {}: {}\n", fileName, kind, d.message);
  if (!d.loc.valid()) return out;
  std::string_view text = lineOf(source, d.loc.line);
  if (text.empty()) return out;
  EchoedLine echo = clipAroundCaret(text, d.loc);
  out += "  ";
  out += echo.text;
  out += "\n  ";
  // Keep tabs in the caret line so it stays aligned with the echoed source.
  for (int c = 1; c < echo.col && c - 1 < (int)echo.text.size(); ++c) out += echo.text[c - 1] == '\t' ? '\t' : ' ';
  out += '^';
  for (int i = 1; i < echo.length; ++i) out += '~';
  out += '\n';
  return out;
}

std::string Diagnostics::render(std::string_view fileName, std::string_view source) const {
  std::string out;
  for (const Diagnostic& d : list_) out += renderDiagnostic(d, fileName, source);
  return out;
}

}  // namespace rtcg
