// A fake rtcg-worker for the supervision tests: speaks the protocol but misbehaves as
// RTCG_FAKE_WORKER_MODE says:
//   die-at-setup   exits with status 7 before reading anything (after a line on stderr)
//   no-device      answers setup with an error saying there is no device
//   garbage-setup  answers setup with bytes that are not a frame
//   mixed          ready; then by candidate id % 5: 0 verified (median 1 + id ms), 1 segfault,
//                  2 hang, 3 garbage reply, 4 fatal 'faulted' result then exit 3
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>

#include "tune/WorkerProtocol.h"

using namespace rtcg::worker;

int main() {
  const char* env = std::getenv("RTCG_FAKE_WORKER_MODE");
  std::string mode = env ? env : "mixed";
  if (mode == "die-at-setup") {
    fmt::print(stderr, "fake worker: dying at setup\n");
    return 7;
  }
  Channel ch(STDIN_FILENO);
  Channel::Received in = ch.receive();
  if (in.status != Channel::Status::Message || !std::holds_alternative<SetupMessage>(*in.message)) return 2;
  if (mode == "no-device") {
    ch.send(ErrorMessage{"no CUDA device (fake)", true});
    return 4;
  }
  if (mode == "garbage-setup") {
    const char junk[] = "this is not a frame at all\n";
    (void)!::write(STDOUT_FILENO, junk, sizeof junk - 1);
    std::this_thread::sleep_for(std::chrono::seconds(60));
    return 0;
  }
  ch.send(ReadyMessage{"Fake GPU", "sm_90", 13000, 0.01});
  for (;;) {
    in = ch.receive();
    if (in.status != Channel::Status::Message || std::holds_alternative<QuitMessage>(*in.message)) return 0;
    const auto& c = std::get<CandidateMessage>(*in.message);
    switch (c.id % 5) {
      case 0: {
        ch.send(ProgressMessage{c.id, 0.5, 1, 3});
        ResultMessage r;
        r.id = c.id;
        r.medianMs = r.minMs = 1.0 + double(c.id);
        r.repeats = 3;
        r.registers = int(c.cubin.size());  // lets the test check the blob arrived
        ch.send(r);
        break;
      }
      case 1:
        fmt::print(stderr, "fake worker: crashing on candidate {}\n", c.id);
        std::fflush(stderr);
        ::raise(SIGSEGV);
        return 1;
      case 2:
        std::this_thread::sleep_for(std::chrono::seconds(600));
        return 0;
      case 3: {
        const char junk[] = "RTCG\xff\xff\xff\xff garbage";
        (void)!::write(STDOUT_FILENO, junk, sizeof junk - 1);
        break;
      }
      case 4: {
        ResultMessage r;
        r.id = c.id;
        r.outcome = Outcome::Faulted;
        r.reason = "cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS (fake)";
        r.fatal = true;
        ch.send(r);
        return 3;
      }
    }
  }
}
