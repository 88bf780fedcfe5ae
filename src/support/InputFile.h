// Reading an input file the way a compiler should: a bounded read that reports every failure.
#pragma once
#include <cstddef>
#include <string>

#include "rtcg/Error.h"

namespace rtcg {

// Thrown by readInputFile: what() is "cannot read 'PATH': why", reason() the why alone.
class InputFileError : public Error {
 public:
  InputFileError(const std::string& message, std::string reason) : Error(message), reason_(std::move(reason)) {}
  const std::string& reason() const { return reason_; }

 private:
  std::string reason_;
};

// The largest DSL source file rtcgc reads (`rtcgc check /dev/zero` read until memory ran out).
inline constexpr size_t kMaxSourceBytes = size_t(16) << 20;

// The contents of `path` (`-`: standard input, which may be a pipe). Throws InputFileError
// ("cannot read 'PATH': why") for a path that is not a regular file (a directory; a FIFO, whose
// open blocked until a writer came; /dev/zero, read until memory ran out; a socket), a read
// error (std::ifstream turned EIO from /proc/self/mem into an empty file, which `check` passed)
// or more than `maxBytes` bytes.
std::string readInputFile(const std::string& path, size_t maxBytes);

}  // namespace rtcg
