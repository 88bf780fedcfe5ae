// The exceptions rtcg throws at its users.
#pragma once
#include <stdexcept>

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

}  // namespace rtcg
