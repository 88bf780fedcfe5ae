// The exceptions rtcg throws at its users.
#pragma once
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace rtcg {

// A user error: bad DSL (the message holds the rendered diagnostics), bad schedule, bad sizes,
// bad arguments. The message says what to change.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// No CUDA driver (libcuda.so.1) or no CUDA device on this machine.
class NoDeviceError : public Error {
 public:
  using Error::Error;
};

// One diagnostic of the compiler, as data: where (1-based line and column, 0 when it has no
// location; `length` characters are underlined), how bad, and what.
struct DiagnosticRecord {
  std::string file;
  int line = 0, column = 0, length = 0;
  std::string severity;  // "error", "warning", "note"
  std::string message;
};

// Bad DSL source, sizes or schedule: what() is the rendered diagnostics (file:line:col, the source
// line, a caret), as rtcgc prints them; diagnostics() are the same as records, for tools and
// bindings (the Python package's rtcg.CompileError). Context::compile and rtcg/compiler.h throw it.
class CompileError : public Error {
 public:
  CompileError(const std::string& rendered, std::vector<DiagnosticRecord> diagnostics)
      : Error(rendered), diagnostics_(std::move(diagnostics)) {}
  const std::vector<DiagnosticRecord>& diagnostics() const { return diagnostics_; }

 private:
  std::vector<DiagnosticRecord> diagnostics_;
};

}  // namespace rtcg
