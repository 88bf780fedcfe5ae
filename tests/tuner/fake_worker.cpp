// A fake rtcg-worker for the supervision tests: speaks the protocol but misbehaves as
// RTCG_FAKE_WORKER_MODE says:
//   die-at-setup   exits with status 7 before reading anything (after a line on stderr)
//   no-device      answers setup with an error saying there is no device
//   garbage-setup  answers setup with bytes that are not a frame
//   mixed          ready; then by candidate id % 5: 0 verified (median 1 + id ms), 1 segfault,
//                  2 hang, 3 garbage reply, 4 fatal 'faulted' result then exit 3
//   verified       ready; every candidate verified, its median a function of its cubin's bytes
//                  (0.1 to 1.1 ms: the same candidate measures the same on every rank), after
//                  $RTCG_FAKE_WORKER_DELAY_MS milliseconds (default 0); with $RTCG_FAKE_WORKER_PER_LAUNCH,
//                  a module of several launches each timed by its launch configuration, summed. With
//                  $RTCG_FAKE_WORKER_KILL_RANK=R it kills its parent (the MPI rank, by
//                  $OMPI_COMM_WORLD_RANK or $PMI_RANK) with SIGKILL at its first candidate when
//                  that rank is R: a rank that dies in the middle of a search.
// Its ready message names its device "Fake GPU", with " (device N from its start)" when its command
// line was `--serve --device N` (the parent started it before its setup) and
// RTCG_FAKE_WORKER_NAME_DEVICE is set (else every rank's fake has one name, as GPUs of one model do).
// With --compile-worker [--warm ARCH] it is the real compile worker (tune/CompilePool.h): a search on a machine
// without a GPU (rtcgc tune with $RTCG_TEST_DEVICE) compiles with NVRTC and measures here. With
// $RTCG_FAKE_COMPILE_WORKER_KILL_RANK=R it says hello, then kills its parent (the MPI rank) with
// SIGKILL when its first compile request arrives and that rank is R: a rank that dies holding
// compile work for rank 0.
#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <optional>
#include <string>
#include <thread>

#include "tune/CompilePool.h"
#include "tune/WorkerMain.h"
#include "tune/WorkerProtocol.h"

using namespace rtcg::worker;

namespace {

// FNV-1a of the cubin: a stand-in median that is the same for a candidate wherever it is measured.
double fakeMedianMs(const std::string& cubin) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : cubin) h = (h ^ c) * 1099511628211ULL;
  return 0.1 + double(h % 1000) / 1000.0;
}

const char* rankOfParent() {
  for (const char* name : {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"})
    if (const char* v = std::getenv(name)) return v;
  return nullptr;
}

// Mode "verified": see the head comment.
int serveVerified(Channel& ch) {
  const char* delay = std::getenv("RTCG_FAKE_WORKER_DELAY_MS");
  const char* killRank = std::getenv("RTCG_FAKE_WORKER_KILL_RANK");
  const char* rank = rankOfParent();
  bool kill = killRank && rank && std::strcmp(killRank, rank) == 0;
  for (;;) {
    Channel::Received in = ch.receive();
    if (in.status != Channel::Status::Message || std::holds_alternative<QuitMessage>(*in.message)) return 0;
    const auto& c = std::get<CandidateMessage>(*in.message);
    if (kill) {
      fmt::print(stderr, "fake worker: killing rank {} (pid {})\n", rank, ::getppid());
      ::kill(::getppid(), SIGKILL);
      return 9;
    }
    if (delay) std::this_thread::sleep_for(std::chrono::milliseconds(std::atoi(delay)));
    ch.send(ProgressMessage{c.id, 0.5, 1, 3});
    ResultMessage r;
    r.id = c.id;
    r.medianMs = r.minMs = fakeMedianMs(c.cubin);
    // With RTCG_FAKE_WORKER_PER_LAUNCH: a module of several launches times each by its own launch
    // configuration alone (as a nest's schedule decides its launch's time), the median their sum.
    if (std::getenv("RTCG_FAKE_WORKER_PER_LAUNCH") && c.launches.size() > 1) {
      r.medianMs = 0;
      for (const rtcg::LaunchSpec& l : c.launches) {
        const double ms = 0.1 + double((l.grid[0] * 7 + l.grid[1] * 3 + l.block[0] * 5 + l.block[1] + l.dynamicSharedBytes) % 97) / 10;
        r.launchMs.push_back(ms);
        r.medianMs += ms;
      }
      r.minMs = r.medianMs;
    }
    r.repeats = 3;
    r.registers = 32;
    r.occupancy = 1;
    ch.send(r);
  }
}

// --compile-worker with $RTCG_FAKE_COMPILE_WORKER_KILL_RANK naming its rank: see the head comment.
int killRankAtFirstCompile(const char* rank) {
  std::string hello = R"({"type":"hello","pid":0})";
  std::string frame = "RTCG";
  for (int i = 0; i < 4; ++i) frame.push_back(char((hello.size() >> (8 * i)) & 0xff));
  frame.append(8, '\0');
  frame += hello;
  if (::write(STDOUT_FILENO, frame.data(), frame.size()) != ssize_t(frame.size())) return 1;
  char byte;
  if (::read(STDIN_FILENO, &byte, 1) != 1) return 0;  // the pool ended first
  fmt::print(stderr, "fake compile worker: killing rank {} (pid {})\n", rank, ::getppid());
  ::kill(::getppid(), SIGKILL);
  return 9;
}

}  // namespace

int main(int argc, char** argv) {
  if (std::optional<std::string> warmArch = rtcg::compileWorkerArgs(argc, argv)) {
    const char* killRank = std::getenv("RTCG_FAKE_COMPILE_WORKER_KILL_RANK");
    const char* rank = rankOfParent();
    if (killRank && rank && std::strcmp(killRank, rank) == 0) return killRankAtFirstCompile(rank);
    return rtcg::serveCompileWorker(STDIN_FILENO, *warmArch);
  }
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
  std::optional<int> device = serveArgs(argc, argv);
  std::string name = "Fake GPU";
  if (device && *device >= 0 && std::getenv("RTCG_FAKE_WORKER_NAME_DEVICE"))
    name += fmt::format(" (device {} from its start)", *device);
  ch.send(ReadyMessage{name, "sm_90", 13000, 0.01});
  if (mode == "verified") return serveVerified(ch);
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
