// The schedule space of a bound kernel: every legal way to slice its loops onto a GPU launch,
// enumerated ("dumb enumeration beats fragile heuristics"), with a cheap static model that prunes
// candidates that cannot be good and says why.
//
// For each parallel index: how it is split and where the parts go (grid, thread, reg, serial),
// and which index runs along thread.x (coalescing). For each reduction index: the step staged per
// iteration, unrolling, and splitting across the threads of a block, and -- for nests with few
// output points (a dot product, a matrix-vector product with few rows) -- across blocks. For each read-only operand:
// global or staged in shared memory. Sizes that do not divide are fine (the emitter guards them).
// Staging and split reductions are offered only when validateSchedule accepts them (probed per
// nest), so the space grows with the emitter without changes here.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"

namespace rtcg {

// What the static model knows of the target. Defaults are an H100/H200 (sm_90); other devices:
// schedule/DeviceModels.h.
struct DeviceModel {
  int multiprocessors = 132;
  int maxThreadsPerBlock = 1024;
  int maxThreadsPerMultiprocessor = 2048;
  int maxBlocksPerMultiprocessor = 32;
  int64_t sharedPerBlockOptin = 227 * 1024;
  int64_t sharedPerMultiprocessor = 228 * 1024;
  int registersPerMultiprocessor = 65536;
  double memoryBandwidth = 3.0e12;  // bytes per second, sustained (H100 SXM: 3.35 TB/s peak)
  double peakFlops = 50e12;         // fp32 operations per second without tensor cores, sustained
  // The device's peaks (operations per second), from multiprocessors, clock and architecture
  // (schedule/DeviceModels.h; these: 132 multiprocessors at 1.98 GHz). peakFlops, which the model
  // divides by, is the fp32 peak times kSustainedFp32Fraction.
  double peakFp32Flops = 66.9e12, peakFp64Flops = 33.5e12, peakTensorFlops = 1070e12;
  double launchOverhead = 3e-6;     // seconds per kernel launch
  // 90: sm_90 (schedule/DeviceModels.h sets it with the peaks). Which mma shapes the space offers
  // (FP64's m16n8k*: sm_90) and at what rate the model counts them.
  int computeCapability = 90;
  // Whether the device runs Hopper's warpgroup MMA (wgmma, sm_90a: compute capability 9.0 only,
  // not sm_100's): the space offers `mma: ... wgmma` schedules there.
  bool warpgroupMma() const { return computeCapability == 90; }
};

struct SpaceOptions {
  int64_t minThreads = 32;      // per block (user constraint, as in Loo.py)
  int64_t minBlocks = 1;        // per launch (user constraint)
  // 0: no limit; else a deterministic sample of this many: the best-predicted half, the best few
  // of each family of choices the model cannot value (cp.async, pipelined positions, early loads,
  // split-K, blocks_per_sm) that the half lacks, and a seeded random sample of the rest.
  int64_t maxCandidates = 0;
  uint64_t seed = 1;            // for sampling
  bool allowShared = true;      // offer shared-memory staging where the emitter supports it
  // Which tensor-core arithmetic the space offers (`mma:` schedules of qualifying contractions,
  // schedule/Mma.h): under ieee f64 only, tf32x3 adds 3xTF32 for f32, tf32 adds plain TF32.
  Precision precision = Precision::Ieee;
  // Threads that enumerate a nest's placements (space/NestSpace.h, runJobs): 0, the cores this
  // process may use (support/Cores.h) up to 8; 1, the calling thread alone. The space is the same
  // for every count (candidates, their order, the pruned entries and the counts).
  int threads = 0;
  DeviceModel device;
  ScheduleLimits limits;
};

// One candidate with what the static model estimates of it.
struct Candidate {
  Schedule schedule;
  std::string text;           // printSchedule(schedule)
  int64_t threadsPerBlock = 0;
  int64_t blocks = 0;
  int64_t registerTile = 1;   // outputs per thread held in registers at once
  int64_t sharedBytes = 0;    // staged shared memory per block (model estimate)
  double occupancy = 0;       // resident threads / maximum, from threads, registers and shared memory
  double estimatedBytes = 0;  // global-memory bytes moved, from footprints and coalescing
  double estimatedFlops = 0;
  // Rows of unequal length: block-slot use against equal blocks (NestEstimate::balance; 1: equal).
  double balance = 1;
  double score = 0;           // lower is better: the model's predicted time in microseconds
  // One per nest: the plan the model valued (planNest), shared by the candidates of several-nest
  // products; the emitter and the report read it instead of planning again.
  std::vector<std::shared_ptr<const NestPlan>> plans;
  std::vector<FusionGroup> fusions;  // the nests a fused candidate runs in one launch (planFusion)
  // For several nests: threads/blocks/tile/shared/occupancy are those of the nest with the largest
  // predicted time; bytes, flops and score are sums over the nests.
};

// The candidate's plan for the emitter (emitCuda): its nests' plans and fusion groups, as the
// space planned and valued them (the same as planSchedule of its schedule under the space's limits).
SchedulePlan candidatePlan(const Candidate& c);

struct PrunedCandidate {
  std::string text;
  std::string reason;  // "threads per block 16 < min_threads 32", "uncoalesced: thread.x on i (stride 500)", ...
};

struct Space {
  std::vector<Candidate> candidates;  // legal and kept, best predicted first; the default schedule is always included
  // Illegal or pruned variants with their reasons (in several-nest kernels prefixed "nest N: ").
  // A family the validator rejects wholesale (staging, split reductions not supported by the
  // emitter) is one entry: "split reductions not offered (5 variants): ...".
  std::vector<PrunedCandidate> pruned;
  int64_t enumerated = 0;             // every distinct variant generated, before pruning and sampling
  int64_t sampledOut = 0;             // dropped only by maxCandidates (or by capping the product of nests)
  // The legal candidates that sampling down to maxCandidates left out, best predicted first: the
  // tuner's refinement rounds draw the neighbours of its fastest measured candidates from them.
  std::vector<Candidate> reserve;
  bool sharedStaging = false;         // validateSchedule accepted staging variants (some nest)
  bool splitReductions = false;       // validateSchedule accepted split-reduction variants (some nest)
  bool crossBlockReductions = false;  // ... and reductions split across blocks (some nest)
};

// Enumerates the space of the bound kernel (the static model is described in SpaceModel.h).
// Every kept candidate passes validateSchedule(options.limits) and round-trips through
// printSchedule/parseSchedule; each launch other than a nest's default schedule honors minThreads
// and minBlocks. The default schedule is always kept (unless options.limits exclude it, which is
// reported in `pruned`). Several nests: the product of the nests' spaces, each nest capped to its
// best-predicted schedules when the product would pass 200000; beside the product, for every run of
// nests that may share one launch (fusionConflicts, ir/Analysis.h), fused candidates (`fuse: N`,
// the other nests at their best-predicted schedule). Deterministic for a given seed.
// Throws rtcg::Error only if the kernel is not bound.
Space enumerateSchedules(const Kernel& bound, const SpaceOptions& options = {});

// How far apart two schedules of the same kernel are, for local search: per index, 2 when the
// outer part's placement differs, but 1 when only the distribution of the same tile differs: a
// grid part followed by a serial part (positions walked, or a reduction's share per block)
// against the grid part alone, or against a serial outer part (a split reduction against the same
// steps unsplit); plus per placement of the other parts |log2| of the ratio of their factors (a
// missing part counts as factor 1), capped at 2; 3 per index only one has; 1.5
// per array staged in only one, 1 per array staged the other way round; 1 per differing
// blocks_per_sm, buffers, copy or loads clause, 2 per differing fuse clause; two tensor-core
// schedules of one arithmetic by their parts (|log2| of each count's ratio capped at 2, 1 per
// flag or shape, 2 between mma.sync and wgmma), at most the mma clause's 4, which is also the
// distance to a schedule without one or of another arithmetic. 0 for equal schedules; infinite
// for different nest counts.
double scheduleDistance(const Schedule& a, const Schedule& b);

}  // namespace rtcg
