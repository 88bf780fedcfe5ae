// The host emulation's runtime (cuda_host_emulation.h declares it): the launch of a grid, the
// block's barrier, the mbarriers and the wgmma queues. The build compiles it once with the
// emulation's options (tests/CMakeLists.txt); the emulation links the object into every kernel's
// shared object, so each loaded kernel has its own copy of this state, as of the header's.
#include "cuda_host_emulation.h"

#include <sys/mman.h>
#include <ucontext.h>

#include <map>
#include <vector>

// The threads of a block are fibers (ucontext) of the one thread that runs the launch: each runs
// until it waits (a block or warp barrier, an mbarrier's phase), then the scheduler resumes the
// next thread whose wait is over. A barrier of 256 threads costs 256 context switches in user
// space instead of 256 futex wake-ups that the OS schedules (which, on a loaded machine, made the
// emulated kernels' run take longer than their compiles). The per-thread state the header keeps
// in globals (threadIdx, the cp.async queues) and the wgmma queue are saved and restored around
// each switch. A block whose threads all wait and none can go on is a deadlock: reported, aborted.
namespace {

// A barrier of `expected` arrivals; its generation counts the completed phases.
struct rtcg_emu_fiber_barrier {
  unsigned int expected = 0, arrived = 0;
  unsigned long long generation = 0;
};

// The wgmma queues: this thread's issued wgmma, run at the wait that needs them.
struct rtcg_emu_wgmma_op {
  int kind, n, transA, transB;
  unsigned long long descA, descB;
  std::vector<float*> d;
  bool registerA = false;  // A from registers: this thread's rows g and g + 8, k 0-7, in aRows
  float aRows[2][8] = {};
  int scaleD = 1;  // 0: D = A B (the accumulators' values ignored)
  std::vector<int*> di;  // s8 (kind 3): the s32 accumulators instead of d
};
// This thread's wgmma issued since the last commit, and its committed groups, oldest first.
struct rtcg_emu_wgmma_queue {
  std::vector<rtcg_emu_wgmma_op> issued;
  std::vector<std::vector<rtcg_emu_wgmma_op>> groups;
};

struct rtcg_emu_mbarrier {
  int count = 0, pending = 0;
  long long tx = 0;
  unsigned long long completed = 0;
};

// One emulated thread: its context and stack, what it waits for, and its saved state.
struct rtcg_emu_fiber {
  ucontext_t context;
  unsigned char* stack = nullptr;
  rtcg_emu_dim3 thread;
  unsigned int linear = 0;
  bool done = false;
  const rtcg_emu_fiber_barrier* barrier = nullptr;  // waiting for its generation to pass `generation`
  unsigned long long generation = 0;
  const rtcg_emu_mbarrier* mbar = nullptr;  // waiting for a completed phase of another parity than `parity`
  unsigned int parity = 0;
  std::vector<rtcg_emu_copy> uncommitted;
  std::vector<std::vector<rtcg_emu_copy>> groups;
  rtcg_emu_wgmma_queue wgmma;
};

// A fiber's stack: the kernel's locals (register tiles, the mma helpers' fragments) need a few
// KiB; the lowest page is a guard, so an overflow faults instead of writing another stack.
constexpr size_t kFiberStack = 256 * 1024, kGuard = 4096;

ucontext_t rtcg_emu_scheduler;
rtcg_emu_fiber* rtcg_emu_current = nullptr;
rtcg_emu_fiber_barrier rtcg_emu_block_barrier;
std::vector<rtcg_emu_fiber_barrier> rtcg_emu_warp_barriers;
rtcg_emu_fiber_barrier rtcg_emu_named_barriers[16];  // bar.sync 1 to 15 (rtcg_emu_bar_sync)
void (*rtcg_emu_kernel)(void*) = nullptr;
void* rtcg_emu_kernel_context = nullptr;

// The running thread stops here and the scheduler goes on.
void rtcg_emu_yield() { swapcontext(&rtcg_emu_current->context, &rtcg_emu_scheduler); }

void rtcg_emu_arrive_and_wait(rtcg_emu_fiber_barrier& b) {
  if (++b.arrived == b.expected) {  // the last arrival completes the phase and runs on
    b.arrived = 0, ++b.generation;
    return;
  }
  rtcg_emu_current->barrier = &b, rtcg_emu_current->generation = b.generation;
  rtcg_emu_yield();
}

rtcg_emu_wgmma_queue& rtcg_emu_wgmma_pending() { return rtcg_emu_current->wgmma; }

}  // namespace

void __syncthreads() { rtcg_emu_arrive_and_wait(rtcg_emu_block_barrier); }
void rtcg_emu_bar_sync(int id, int threads) {
  if (id < 1 || id > 15 || threads <= 0 || threads % 32 != 0 || unsigned(threads) > rtcg_emu_block_barrier.expected) {
    std::fprintf(stderr, "bar.sync %d, %d: the id must be 1 to 15 and the count whole warps of the block's %u threads\n",
                 id, threads, rtcg_emu_block_barrier.expected);
    std::abort();
  }
  rtcg_emu_fiber_barrier& b = rtcg_emu_named_barriers[size_t(id)];
  if (b.arrived == 0) b.expected = unsigned(threads);
  if (b.expected != unsigned(threads)) {
    std::fprintf(stderr, "bar.sync %d: %d threads where this phase's first arrival said %u\n", id, threads, b.expected);
    std::abort();
  }
  rtcg_emu_arrive_and_wait(b);
}
void rtcg_emu_warp_sync() { rtcg_emu_arrive_and_wait(rtcg_emu_warp_barriers[rtcg_emu_linear_tid / 32]); }

void rtcg_emu_wgmma(int kind, int n, int transA, int transB, unsigned long long descA, unsigned long long descB,
                    float* const d[], int scaleD) {
  rtcg_emu_wgmma_pending().issued.push_back(
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
  rtcg_emu_wgmma_pending().issued.push_back(std::move(op));
}
void rtcg_emu_wgmma_s8(int n, unsigned long long descA, unsigned long long descB, int* const d[], int scaleD) {
  rtcg_emu_wgmma_op op{3, n, 0, 0, descA, descB, {}};
  op.di.assign(d, d + n / 2), op.scaleD = scaleD;
  rtcg_emu_wgmma_pending().issued.push_back(std::move(op));
}
void rtcg_wgmma_commit() {
  rtcg_emu_wgmma_pending().groups.push_back(std::move(rtcg_emu_wgmma_pending().issued));
  rtcg_emu_wgmma_pending().issued.clear();
}
// wgmma.wait_group N: the oldest groups run until at most N are in flight.
void rtcg_emu_wgmma_wait(size_t inFlight) {
  auto& groups = rtcg_emu_wgmma_pending().groups;
  while (groups.size() > inFlight) {
    for (const rtcg_emu_wgmma_op& op : groups.front())
      if (op.kind == 3)
        rtcg_emu_wgmma_run_s8(op.n, op.descA, op.descB, op.di.data(), op.scaleD);
      else
        rtcg_emu_wgmma_run(op.kind, op.n, op.transA, op.transB, op.descA, op.descB, op.d.data(),
                           op.registerA ? op.aRows : nullptr, op.scaleD);
    groups.erase(groups.begin());
  }
}

// The mbarriers, keyed by their shared memory address.
namespace {
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
  if (b.pending == 0 && b.tx == 0) ++b.completed, b.pending = b.count;
}
// An arrival, with the bytes it expects (expect_tx) or none.
void rtcg_emu_mbar_arrive(void* bar, unsigned int bytes) {
  rtcg_emu_mbarrier& b = rtcg_emu_mbar_at(bar);
  if (b.count == 0 || b.pending == 0) {
    std::fprintf(stderr, "mbarrier at %p: arrive on an uninitialized barrier or past its count\n", bar);
    std::abort();
  }
  b.tx += bytes, --b.pending;
  rtcg_emu_mbar_complete(b);
}
bool rtcg_emu_mbar_passed(const rtcg_emu_mbarrier& b, unsigned int parity) { return (b.completed & 1) != (parity & 1); }
}  // namespace

void rtcg_mbar_init(void* bar, unsigned int count) { rtcg_emu_mbar_at(bar) = {int(count), int(count), 0, 0}; }
void rtcg_mbar_expect_tx(void* bar, unsigned int bytes) { rtcg_emu_mbar_arrive(bar, bytes); }
void rtcg_mbar_arrive(void* bar) { rtcg_emu_mbar_arrive(bar, 0); }
void rtcg_mbar_wait(void* bar, unsigned int parity) {
  const rtcg_emu_mbarrier& b = rtcg_emu_mbar_at(bar);  // std::map: the reference stays valid
  if (b.count == 0) {
    std::fprintf(stderr, "mbarrier at %p: wait on an uninitialized barrier\n", bar);
    std::abort();
  }
  if (rtcg_emu_mbar_passed(b, parity)) return;
  rtcg_emu_current->mbar = &b, rtcg_emu_current->parity = parity;
  rtcg_emu_yield();
}
void rtcg_emu_mbar_complete_tx(void* bar, long long bytes) {
  rtcg_emu_mbarrier& b = rtcg_emu_mbar_at(bar);
  b.tx -= bytes;
  rtcg_emu_mbar_complete(b);
}

namespace {

// A fiber's body: the kernel, then its end (uc_link returns to the scheduler).
void rtcg_emu_fiber_main() {
  rtcg_emu_kernel(rtcg_emu_kernel_context);
  rtcg_emu_fiber& f = *rtcg_emu_current;
  if (!f.wgmma.issued.empty() || !f.wgmma.groups.empty()) {
    std::fprintf(stderr, "a thread ended with wgmma not waited for\n");
    std::abort();
  }
  f.done = true;
}

// Whether a fiber's wait is over (clearing it then).
bool rtcg_emu_ready(rtcg_emu_fiber& f) {
  if (f.barrier && f.barrier->generation == f.generation) return false;
  if (f.mbar && !rtcg_emu_mbar_passed(*f.mbar, f.parity)) return false;
  f.barrier = nullptr, f.mbar = nullptr;
  return true;
}

// Runs `f` until it waits or ends, with the header's per-thread globals set to its state.
void rtcg_emu_resume(rtcg_emu_fiber& f) {
  threadIdx = f.thread;
  rtcg_emu_linear_tid = f.linear;
  rtcg_emu_uncommitted = std::move(f.uncommitted);
  rtcg_emu_groups = std::move(f.groups);
  rtcg_emu_current = &f;
  swapcontext(&rtcg_emu_scheduler, &f.context);
  f.uncommitted = std::move(rtcg_emu_uncommitted);
  f.groups = std::move(rtcg_emu_groups);
  rtcg_emu_uncommitted.clear(), rtcg_emu_groups.clear();
  rtcg_emu_current = nullptr;
}

// Runs the threads of block `b` to their end. Each pass resumes, in thread order (reversed on
// every other pass, so that a missing barrier shows whichever thread writes first), every
// thread whose wait is over; a pass that resumes none while some have not ended is a deadlock.
void rtcg_emu_run_block(std::vector<rtcg_emu_fiber>& fibers, const rtcg_emu_dim3& b) {
  for (rtcg_emu_fiber& f : fibers) {
    f = rtcg_emu_fiber{.stack = f.stack, .thread = f.thread, .linear = f.linear};
    getcontext(&f.context);
    f.context.uc_stack.ss_sp = f.stack;
    f.context.uc_stack.ss_size = kFiberStack;
    f.context.uc_link = &rtcg_emu_scheduler;
    makecontext(&f.context, rtcg_emu_fiber_main, 0);
  }
  blockIdx = b;
  for (rtcg_emu_fiber_barrier& named : rtcg_emu_named_barriers) named = {};
  for (size_t pass = 0;; ++pass) {
    size_t resumed = 0, live = 0;
    for (size_t i = 0; i < fibers.size(); ++i) {
      rtcg_emu_fiber& f = fibers[pass % 2 ? fibers.size() - 1 - i : i];
      if (f.done) continue;
      ++live;
      if (!rtcg_emu_ready(f)) continue;
      rtcg_emu_resume(f);
      ++resumed;
    }
    if (live == 0) return;
    if (resumed == 0) {
      std::fprintf(stderr, "block (%u, %u, %u): every thread that has not ended waits (a barrier or an mbarrier "
                   "phase that never completes)\n", b.x, b.y, b.z);
      std::abort();
    }
  }
}

}  // namespace

// Runs kernel(context) on every thread of the grid: the blocks one after another in
// rtcg_emu_block_order, the threads of a block as fibers (rtcg_emu_run_block).
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
  // The fibers and their stacks, made once for the launch and reused by each block.
  const size_t stride = kFiberStack + kGuard;
  void* stacks = mmap(nullptr, stride * threads, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (stacks == MAP_FAILED) {
    std::fprintf(stderr, "cannot map the stacks of %u emulated threads\n", threads);
    std::abort();
  }
  std::vector<rtcg_emu_fiber> fibers(threads);
  for (unsigned int t = 0; t < threads; ++t) {
    unsigned char* base = static_cast<unsigned char*>(stacks) + t * stride;
    mprotect(base, kGuard, PROT_NONE);
    fibers[t].stack = base + kGuard;
    fibers[t].linear = t;
    fibers[t].thread = {t % block[0], (t / block[0]) % block[1], t / (block[0] * block[1])};
  }
  rtcg_emu_block_barrier = {threads, 0, 0};
  // A barrier per warp, of its lanes (the last warp's may be partial).
  rtcg_emu_warp_barriers.clear();
  for (unsigned int w = 0; w * 32 < threads; ++w) rtcg_emu_warp_barriers.push_back({std::min(32u, threads - w * 32), 0, 0});
  rtcg_emu_kernel = kernel, rtcg_emu_kernel_context = context;
  for (const rtcg_emu_dim3& b : blocks) rtcg_emu_run_block(fibers, b);
  fibers.clear();
  munmap(stacks, stride * threads);
}
