// rtcg-worker: the measuring process of the tuner (`rtcgc tune`, rtcg::tune). The tuner starts it
// with `--serve` and a socket on stdin/stdout and speaks the protocol of src/tune/WorkerProtocol.h;
// it is not meant to be run by hand.
#include <fmt/format.h>
#include <unistd.h>

#include <cstring>

#include "tune/WorkerMain.h"

int main(int argc, char** argv) {
  if (argc != 2 || std::strcmp(argv[1], "--serve") != 0) {
    fmt::print(stderr,
               "usage: rtcg-worker --serve\n"
               "rtcg-worker is the measuring process of the rtcg tuner (`rtcgc tune`); the tuner starts it\n"
               "with a socket on stdin/stdout. It is not meant to be run by hand.\n");
    return 2;
  }
  // The protocol runs on fd 0 (the socket is on both 0 and 1). Point stdout at stderr so that
  // nothing printed by a library can corrupt the protocol stream.
  if (::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    fmt::print(stderr, "rtcg-worker: cannot redirect stdout: {}\n", std::strerror(errno));
    return 1;
  }
  return rtcg::worker::serve(STDIN_FILENO);
}
