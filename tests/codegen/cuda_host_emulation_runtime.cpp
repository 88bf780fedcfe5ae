// The host emulation's runtime (cuda_host_emulation.h declares it): the launch of a grid, the
// block's barrier, the mbarriers and the wgmma queues. The build compiles it once with the
// emulation's options (tests/CMakeLists.txt); the emulation links the object into every kernel's
// shared object, so each loaded kernel has its own copy of this state, as of the header's.
#include "cuda_host_emulation.h"

#include <barrier>
#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace {
thread_local std::barrier<>* rtcg_emu_barrier = nullptr;
thread_local std::barrier<>* rtcg_emu_warp_barrier = nullptr;
}  // namespace

void __syncthreads() { rtcg_emu_barrier->arrive_and_wait(); }
void rtcg_emu_warp_sync() { rtcg_emu_warp_barrier->arrive_and_wait(); }

// The wgmma queues: this thread's issued wgmma, run at the wait that needs them.
namespace {
struct rtcg_emu_wgmma_op {
  int kind, n, transA, transB;
  unsigned long long descA, descB;
  std::vector<float*> d;
  bool registerA = false;  // A from registers: this thread's rows g and g + 8, k 0-7, in aRows
  float aRows[2][8] = {};
  int scaleD = 1;  // 0: D = A B (the accumulators' values ignored)
};
// This thread's wgmma issued since the last commit, and its committed groups, oldest first.
struct rtcg_emu_wgmma_queue {
  std::vector<rtcg_emu_wgmma_op> issued;
  std::vector<std::vector<rtcg_emu_wgmma_op>> groups;
  ~rtcg_emu_wgmma_queue() {
    if (!issued.empty() || !groups.empty()) {
      std::fprintf(stderr, "a thread ended with wgmma not waited for\n");
      std::abort();
    }
  }
};
thread_local rtcg_emu_wgmma_queue rtcg_emu_wgmma_pending;
}  // namespace

void rtcg_emu_wgmma(int kind, int n, int transA, int transB, unsigned long long descA, unsigned long long descB,
                    float* const d[], int scaleD) {
  rtcg_emu_wgmma_pending.issued.push_back(
      {kind, n, transA, transB, descA, descB, std::vector<float*>(d, d + n / 2), false, {}, scaleD});
}
void rtcg_emu_wgmma_rs(int n, const float a[4], unsigned long long descB, float* const d[], int scaleD) {
  const unsigned int tid = rtcg_emu_linear_tid, base = tid - tid % 32, g = tid % 32 / 4;
  for (int r = 0; r < 4; ++r) rtcg_emu_mma_slots[tid][r] = rtcg_emu_tf32_operand(a[r]);
  rtcg_emu_warp_sync();
  rtcg_emu_wgmma_op op{2, n, 0, 0, 0, descB, std::vector<float*>(d, d + n / 2)};
  op.registerA = true, op.scaleD = scaleD;
  for (unsigned int t = 0; t < 4; ++t) {
    const double* s = rtcg_emu_mma_slots[base + 4 * g + t];
    op.aRows[0][t] = float(s[0]), op.aRows[1][t] = float(s[1]), op.aRows[0][t + 4] = float(s[2]),
    op.aRows[1][t + 4] = float(s[3]);
  }
  rtcg_emu_warp_sync();
  rtcg_emu_wgmma_pending.issued.push_back(std::move(op));
}
void rtcg_wgmma_commit() {
  rtcg_emu_wgmma_pending.groups.push_back(std::move(rtcg_emu_wgmma_pending.issued));
  rtcg_emu_wgmma_pending.issued.clear();
}
// wgmma.wait_group N: the oldest groups run until at most N are in flight.
void rtcg_emu_wgmma_wait(size_t inFlight) {
  auto& groups = rtcg_emu_wgmma_pending.groups;
  while (groups.size() > inFlight) {
    for (const rtcg_emu_wgmma_op& op : groups.front())
      rtcg_emu_wgmma_run(op.kind, op.n, op.transA, op.transB, op.descA, op.descB, op.d.data(),
                         op.registerA ? op.aRows : nullptr, op.scaleD);
    groups.erase(groups.begin());
  }
}

// The mbarriers, keyed by their shared memory address.
namespace {
struct rtcg_emu_mbarrier {
  int count = 0, pending = 0;
  long long tx = 0;
  unsigned long long completed = 0;
};
std::mutex rtcg_emu_mbar_mutex;
std::condition_variable rtcg_emu_mbar_phase;  // notified when a phase completes
std::map<const void*, rtcg_emu_mbarrier> rtcg_emu_mbars;

rtcg_emu_mbarrier& rtcg_emu_mbar_at(void* bar) {
  const std::ptrdiff_t at = static_cast<unsigned char*>(bar) - rtcg_emu_dynamic_smem;
  if (at < 0 || at + 8 > std::ptrdiff_t(sizeof rtcg_emu_dynamic_smem) || at % 8 != 0) {
    std::fprintf(stderr, "mbarrier at %p: not an 8-byte aligned address of the dynamic shared memory\n", bar);
    std::abort();
  }
  return rtcg_emu_mbars[bar];
}
void rtcg_emu_mbar_complete(rtcg_emu_mbarrier& b) {
  if (b.pending == 0 && b.tx == 0) ++b.completed, b.pending = b.count, rtcg_emu_mbar_phase.notify_all();
}
// An arrival, with the bytes it expects (expect_tx) or none.
void rtcg_emu_mbar_arrive(void* bar, unsigned int bytes) {
  std::lock_guard<std::mutex> lock(rtcg_emu_mbar_mutex);
  rtcg_emu_mbarrier& b = rtcg_emu_mbar_at(bar);
  if (b.count == 0 || b.pending == 0) {
    std::fprintf(stderr, "mbarrier at %p: arrive on an uninitialized barrier or past its count\n", bar);
    std::abort();
  }
  b.tx += bytes, --b.pending;
  rtcg_emu_mbar_complete(b);
}
}  // namespace

void rtcg_mbar_init(void* bar, unsigned int count) {
  std::lock_guard<std::mutex> lock(rtcg_emu_mbar_mutex);
  rtcg_emu_mbar_at(bar) = {int(count), int(count), 0, 0};
}
void rtcg_mbar_expect_tx(void* bar, unsigned int bytes) { rtcg_emu_mbar_arrive(bar, bytes); }
void rtcg_mbar_arrive(void* bar) { rtcg_emu_mbar_arrive(bar, 0); }
void rtcg_mbar_wait(void* bar, unsigned int parity) {
  std::unique_lock<std::mutex> lock(rtcg_emu_mbar_mutex);
  rtcg_emu_mbarrier& b = rtcg_emu_mbar_at(bar);  // std::map: the reference stays valid
  if (b.count == 0) {
    std::fprintf(stderr, "mbarrier at %p: wait on an uninitialized barrier\n", bar);
    std::abort();
  }
  rtcg_emu_mbar_phase.wait(lock, [&] { return (b.completed & 1) != (parity & 1); });
}
void rtcg_emu_mbar_complete_tx(void* bar, long long bytes) {
  std::lock_guard<std::mutex> lock(rtcg_emu_mbar_mutex);
  rtcg_emu_mbarrier& b = rtcg_emu_mbar_at(bar);
  b.tx -= bytes;
  rtcg_emu_mbar_complete(b);
}

// Runs kernel(context) on every thread of the grid: the blocks one after another in
// rtcg_emu_block_order, the threads of a block as std::threads meeting at its barrier.
void rtcg_emu_launch(const unsigned int grid[3], const unsigned int block[3], void (*kernel)(void*), void* context) {
  const unsigned int threads = block[0] * block[1] * block[2];
  std::vector<rtcg_emu_dim3> blocks;
  for (unsigned int bz = 0; bz < grid[2]; ++bz)
    for (unsigned int by = 0; by < grid[1]; ++by)
      for (unsigned int bx = 0; bx < grid[0]; ++bx) blocks.push_back({bx, by, bz});
  if (rtcg_emu_block_order == 1) std::reverse(blocks.begin(), blocks.end());
  if (rtcg_emu_block_order == 2) {
    uint64_t state = 0x9e3779b97f4a7c15ull;  // a fixed xorshift permutation
    for (size_t i = blocks.size(); i > 1; --i) {
      state ^= state << 13, state ^= state >> 7, state ^= state << 17;
      std::swap(blocks[i - 1], blocks[state % i]);
    }
  }
  for (const rtcg_emu_dim3& b : blocks) {
    std::barrier<> barrier((std::ptrdiff_t)threads);
    // A barrier per warp, of its lanes (the last warp's may be partial).
    std::vector<std::unique_ptr<std::barrier<>>> warps;
    for (unsigned int w = 0; w * 32 < threads; ++w)
      warps.push_back(std::make_unique<std::barrier<>>((std::ptrdiff_t)std::min(32u, threads - w * 32)));
    std::vector<std::thread> pool;
    pool.reserve(threads);
    for (unsigned int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        rtcg_emu_barrier = &barrier;
        rtcg_emu_warp_barrier = warps[t / 32].get();
        rtcg_emu_linear_tid = t;
        threadIdx = {t % block[0], (t / block[0]) % block[1], t / (block[0] * block[1])};
        blockIdx = b;
        kernel(context);
      });
    for (std::thread& th : pool) th.join();
  }
}
