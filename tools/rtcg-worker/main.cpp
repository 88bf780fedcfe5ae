// rtcg-worker: the helper process of the tuner (`rtcgc tune`, rtcg::tune), in one of two modes:
//   --serve [--device N]  the measuring process (holds the CUDA context; src/tune/WorkerProtocol.h),
//                     with --device creating its context on device N at once (before the setup)
//   --compile-worker [--warm ARCH]  a compile process of the compile pool (NVRTC only;
//                     src/tune/CompilePool.h), with --warm compiling a tiny kernel for ARCH at start
// The tuner starts it with a socket on stdin/stdout; it is not meant to be run by hand.
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>
#include <optional>
#include <string>

#include "tune/CompilePool.h"
#include "tune/WorkerMain.h"

int main(int argc, char** argv) {
  std::optional<int> serveDevice = rtcg::worker::serveArgs(argc, argv);
  bool serve = serveDevice.has_value();
  std::optional<std::string> warmArch = rtcg::compileWorkerArgs(argc, argv);
  bool compile = warmArch.has_value();
  if (!serve && !compile) {
    fmt::print(stderr,
               "usage: rtcg-worker --serve [--device N] | --compile-worker [--warm ARCH]\n"
               "rtcg-worker is the measuring (--serve) and compiling (--compile-worker) process of the rtcg\n"
               "tuner (`rtcgc tune`); the tuner starts it with a socket on stdin/stdout. It is not meant to be\n"
               "run by hand.\n");
    return 2;
  }
  // The protocol runs on fd 0 (the socket is on both 0 and 1). Point stdout at stderr so that
  // nothing printed by a library can corrupt the protocol stream.
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    fmt::print(stderr, "rtcg-worker: cannot redirect stdout: {}\n", std::strerror(errno));
    return 1;
  }
  return serve ? rtcg::worker::serve(STDIN_FILENO, *serveDevice) : rtcg::serveCompileWorker(STDIN_FILENO, *warmArch);
}
