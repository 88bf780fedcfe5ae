// NVRTC throughput: how many tiled-matmul candidates per second can be compiled with T threads in
// one process, against the same candidates split over P processes (this program re-spawned with
// --child). NVRTC flattens at about 60 candidates/s beyond 2 threads in one process on the
// 16-core GPU host while processes keep scaling, which is why the tuner's compile pool
// (src/tune/CompilePool.h) uses worker processes; run this on a new host to see how it scales there.
//
//   nvrtc_throughput [--candidates 200] [--n 1024] [--threads 1,2,4,8,16] [--processes 1,2,4,8,16]
//
// Every mode compiles the same candidates (a deterministic sample of the matmul schedule space,
// emitted once up front; the emission time per candidate is printed too). Process mode counts
// the whole wall time, process start-up and each child's own emission included.
#include <fmt/format.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "codegen/Emitter.h"
#include "codegen/Nvrtc.h"
#include "driver/Pipeline.h"
#include "schedule/Space.h"

extern char** environ;
using namespace rtcg;
using Clock = std::chrono::steady_clock;

namespace {

double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

std::vector<int> parseList(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    const char* comma = std::strchr(p, ',');
    if (!comma) break;
    p = comma + 1;
  }
  return out;
}

// The candidates' CUDA sources; `emitSeconds` gets the emission time.
std::vector<std::string> candidateSources(int count, int n, double* emitSeconds) {
  Diagnostics diags;
  SourceText src{"matmul.rtcg", "kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {\n"
                                "  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }\n}\n"};
  std::optional<Kernel> bound = proveKernel(src, {{"n", n}}, "", diags);
  if (!bound) {
    fmt::print(stderr, "{}", renderDiagnostics(diags, src));
    std::exit(1);
  }
  SpaceOptions so;
  so.maxCandidates = count;
  Space space = enumerateSchedules(*bound, so);
  std::vector<std::string> out;
  Clock::time_point t0 = Clock::now();
  for (const Candidate& c : space.candidates) out.push_back(emitCuda(*bound, c.schedule).source);
  if (emitSeconds) *emitSeconds = since(t0);
  return out;
}

// Compiles sources[i] for i in [first, size) stepping by `stride`, on `threads` threads. Returns
// the number that failed.
int compileAll(const std::vector<std::string>& sources, int threads, size_t first, size_t stride) {
  std::atomic<size_t> next{0};
  std::atomic<int> failed{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t)
    pool.emplace_back([&] {
      for (;;) {
        size_t i = first + stride * next.fetch_add(1);
        if (i >= sources.size()) break;
        if (!compileGenerated("matmul", sources[i], "sm_90").success) ++failed;
      }
    });
  for (std::thread& t : pool) t.join();
  return failed;
}

}  // namespace

int main(int argc, char** argv) {
  int candidates = 200, n = 1024;
  std::vector<int> threads = {1, 2, 4, 8, 16}, processes = {1, 2, 4, 8, 16};
  if (argc == 6 && std::strcmp(argv[1], "--child") == 0) {  // --child INDEX COUNT CANDIDATES N
    int index = std::atoi(argv[2]), count = std::atoi(argv[3]);
    std::vector<std::string> sources = candidateSources(std::atoi(argv[4]), std::atoi(argv[5]), nullptr);
    return compileAll(sources, 1, size_t(index), size_t(count)) == 0 ? 0 : 1;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string opt = argv[i];
    if (opt == "--candidates") candidates = std::atoi(argv[i + 1]);
    else if (opt == "--n") n = std::atoi(argv[i + 1]);
    else if (opt == "--threads") threads = parseList(argv[i + 1]);
    else if (opt == "--processes") processes = parseList(argv[i + 1]);
    else {
      fmt::print(stderr, "usage: {} [--candidates N] [--n SIZE] [--threads 1,2,4] [--processes 1,2,4]\n", argv[0]);
      return 2;
    }
  }
  if (argc % 2 == 0) {
    fmt::print(stderr, "usage: {} [--candidates N] [--n SIZE] [--threads 1,2,4] [--processes 1,2,4]\n", argv[0]);
    return 2;
  }

  double emitSeconds = 0;
  std::vector<std::string> sources = candidateSources(candidates, n, &emitSeconds);
  fmt::print("{} matmul n={} candidates; emitting CUDA C took {:.3f} ms per candidate; {} hardware threads\n",
             sources.size(), n, emitSeconds * 1e3 / double(std::max<size_t>(1, sources.size())),
             std::thread::hardware_concurrency());
  // Warm NVRTC up (library loading, built-in headers) outside the measurements.
  compileGenerated("warmup", sources.front(), "sm_90");

  fmt::print("{:<10} {:>8} {:>10} {:>14} {:>9}\n", "mode", "workers", "seconds", "candidates/s", "speedup");
  double base = 0;
  for (int t : threads) {
    Clock::time_point t0 = Clock::now();
    int failed = compileAll(sources, t, 0, 1);
    double s = since(t0);
    double rate = double(sources.size()) / s;
    if (base == 0) base = rate;
    fmt::print("{:<10} {:>8} {:>10.2f} {:>14.1f} {:>8.2f}x{}\n", "threads", t, s, rate, rate / base,
               failed ? fmt::format("  ({} failed to compile)", failed) : "");
    std::fflush(stdout);
  }
  std::string self = "/proc/self/exe";
  for (int p : processes) {
    Clock::time_point t0 = Clock::now();
    std::vector<pid_t> pids;
    for (int i = 0; i < p; ++i) {
      std::vector<std::string> args = {argv[0], "--child", std::to_string(i), std::to_string(p),
                                       std::to_string(candidates), std::to_string(n)};
      std::vector<char*> cargs;
      for (std::string& a : args) cargs.push_back(a.data());
      cargs.push_back(nullptr);
      pid_t pid = 0;
      if (int rc = posix_spawn(&pid, self.c_str(), nullptr, nullptr, cargs.data(), environ); rc != 0) {
        fmt::print(stderr, "cannot spawn a child: {}\n", std::strerror(rc));
        return 1;
      }
      pids.push_back(pid);
    }
    int bad = 0;
    for (pid_t pid : pids) {
      int status = 0;
      waitpid(pid, &status, 0);
      if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) ++bad;
    }
    double s = since(t0);
    double rate = double(sources.size()) / s;
    fmt::print("{:<10} {:>8} {:>10.2f} {:>14.1f} {:>8.2f}x{}\n", "processes", p, s, rate, rate / base,
               bad ? fmt::format("  ({} children failed)", bad) : "");
    std::fflush(stdout);
  }
  return 0;
}
