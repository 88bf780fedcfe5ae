// rtcgc's exit codes (docs/rtcgc.md, the README) and the one mapping from an exception that left
// a command to its exit code and message, shared by every command.
#pragma once

#include <cstdio>
#include <exception>

namespace rtcgc {

enum ExitCode : int {
  kOk = 0,
  kInputError = 1,    // DSL program, sizes, schedule, unreadable input, the environment
  kUsage = 2,         // bad command line
  kNvrtcFailed = 3,   // generated code did not compile (a bug in rtcg)
  kNoDevice = 4,      // no CUDA driver or device
  kMismatch = 5,      // GPU result differs from the reference
  kInternal = 70,     // a bug in rtcg
};

// A failure that has already been reported; carries the exit code.
struct Fail {
  int code;
};

// The exit code of exception `e` (thrown by a command), after printing its message to `err`:
//   Fail                          its code (already reported)
//   rtcg::NoDeviceError           4
//   rtcg::InternalError           70 ("rtcgc: internal error at ...")
//   rtcg::Error, filesystem_error 1
//   std::bad_alloc                1 ("out of memory": the environment, not a bug)
//   another std::exception        1 without a message if standard output failed (main says so),
//                                 else 70
int exitCodeOf(const std::exception_ptr& e, std::FILE* err = stderr);

// Runs a command, mapping what it throws with exitCodeOf.
template <typename F>
int runCommand(F&& command, std::FILE* err = stderr) {
  try {
    return command();
  } catch (...) {
    return exitCodeOf(std::current_exception(), err);
  }
}

}  // namespace rtcgc
