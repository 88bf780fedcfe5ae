// Compiler-style diagnostics: `file:line:col: error: message`, the source line, and a caret
// under the offending range. Several diagnostics can be collected per run.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rtcg {

// A position in DSL source text. Lines and columns are 1-based; line 0 means "no location".
// `length` is the number of characters the caret line underlines (at least 1).
struct SourceLoc {
  int line = 0;
  int col = 0;
  int length = 1;
  bool valid() const { return line > 0; }
  bool operator==(const SourceLoc&) const = default;
};

enum class Severity { Error, Warning, Note };

struct Diagnostic {
  Severity severity = Severity::Error;
  SourceLoc loc;
  std::string message;
};

class Diagnostics {
 public:
  // Errors kept past this many are counted but not stored: the first one past it is replaced by
  // a note saying so, and everything after it (notes of dropped errors too) is dropped. A
  // 55 KB program of errors rendered 328 MB before.
  static constexpr int kMaxStoredErrors = 50;

  void error(SourceLoc loc, std::string message);
  void warning(SourceLoc loc, std::string message);
  void note(SourceLoc loc, std::string message);
  void add(Diagnostic d);

  bool hasErrors() const { return errorCount_ > 0; }
  int errorCount() const { return errorCount_; }
  const std::vector<Diagnostic>& all() const { return list_; }
  bool empty() const { return list_.empty(); }

  // Renders every diagnostic as `file:line:col: error: msg`, followed by the source line and a
  // caret line when the location is valid and `source` holds that line.
  std::string render(std::string_view fileName, std::string_view source) const;

 private:
  std::vector<Diagnostic> list_;
  int errorCount_ = 0;
  bool dropping_ = false;  // past kMaxStoredErrors
};

// Renders one diagnostic (see Diagnostics::render). A source line longer than kMaxEchoedLine is
// echoed clipped to a window around the caret, with "..." where it was cut.
inline constexpr int kMaxEchoedLine = 160;
std::string renderDiagnostic(const Diagnostic& d, std::string_view fileName, std::string_view source);

}  // namespace rtcg
