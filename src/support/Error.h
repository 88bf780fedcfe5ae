// Two kinds of failure, kept apart (as in Halide):
//  - a *user error* is something wrong with the input (a DSL program, a schedule, a size binding,
//    an argument). It is reported as Diagnostics with a source location, or thrown as rtcg::Error
//    whose message says what to change. The CLI turns it into a non-zero exit.
//  - an *internal error* is a bug in rtcg. RTCG_ASSERT throws InternalError naming the rtcg source
//    line; it must never be reachable from any input.
#pragma once
#include <stdexcept>
#include <string>

#include "rtcg/Error.h"  // rtcg::Error, rtcg::NoDeviceError (public)

namespace rtcg {

class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

[[noreturn]] void internalError(const char* file, int line, const std::string& message);

}  // namespace rtcg

#define RTCG_ASSERT(cond, msg)                                          \
  do {                                                                  \
    if (!(cond)) ::rtcg::internalError(__FILE__, __LINE__, (msg));      \
  } while (0)
