// Contractions on tensor cores: the plan of an `mma:` schedule (which nests qualify:
// schedule/Contraction.h).
//
// The plan: a block of warpsM x warpsN warps owns a (blockM x blockN) output tile and walks the
// reduction in steps of `k` values. Per step the block stages both operands' (rows x k) boxes in
// shared memory, converted once (TF32-rounded; tf32x3: the big and the small part, two tiles each;
// elements outside the domain are zeros, so partial tiles at odd sizes add nothing), with a pitch
// of k + padding where padding makes pitch = 4 (mod 8) words: the eight rows a fragment load
// touches then start in eight different 4-bank groups (no bank conflicts). Each warp loads its
// fragments from the tiles in the PTX layouts and issues tileM x tileN mma per fragment-k; the
// accumulators stay in registers. The epilogue maps each accumulator element to its output point,
// guards it against the domain and evaluates the statement with the sum replaced by it. With
// `stages N` the steps go to N buffers by cp.async (zero-filled outside the domain), N - 1 steps
// ahead: one barrier per step (cp.async cannot convert, so the operands must be plain loads of the
// contraction's type). Then the tiles are as loaded (TileForm::AsLoaded), tf32x3 splits each fragment
// register as it is loaded, and `tf32` passes the values as copied: the tensor cores read their top
// 19 bits (truncation; relative error about 7e-4 against 3e-4 rounded, docs/rtcgc.md), two
// instructions fewer per register, which the issue slots of the main loop need.
//
// FP64 (`f64`): m8n8k4, or on sm_90 m16n8k4, m16n8k8 and m16n8k16 (a 16 x 8 output fragment of
// four doubles a lane, the TF32 register pattern with 64-bit elements: A 2, 4 or 8 doubles, B 1, 2
// or 4). The tiles are (rows x k) doubles with pitch = 4 (mod 8) elements: a 64-bit fragment load
// is served per half-warp, whose 16 lanes (g = 0..3, t = 0..3) read row g, column t: the four rows
// start at four different multiples of 8 words (mod 32), the lanes' two banks each cover all 32
// banks once (no conflicts), for every shape.
//
// 16-bit arithmetics (`bf16`, `f16`, m16n8k16): an f32 contraction whose operands are both
// `f32(x[...])` of loads of one 16-bit type. The tiles hold the 16-bit values as loaded (no
// conversion), in the operand's contiguous direction: (rows x k) where k is contiguous, else
// (k x rows); the warps load fragments with ldmatrix (.trans from a (k x rows) tile). The pitch
// is an odd number of 16-byte pieces, so the eight row addresses of an 8x8 matrix fall in eight
// different 4-bank groups (no bank conflicts). Copies are cp.async of 16 bytes where every run of
// 8 elements starts 16-byte aligned in the array (emitter: the flat offset's coefficients), else
// of 8 or 4 bytes where runs of that size are aligned (not wgmma's core matrices), else element by
// element through registers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "schedule/Contraction.h"
#include "schedule/Schedule.h"
#include "schedule/StageRing.h"

namespace rtcg {

// What an mma plan is, beside its sizes: the instruction, where wgmma's A comes from, how a step
// overlaps the next, and the epilogue (each explained at its field of MmaPlan).
enum class MmaInstr : uint8_t { Sync, Wgmma };
enum class MmaASource : uint8_t { SharedTile, Registers };
enum class MmaOverlap : uint8_t { None, PrefetchFragments, InFlight, InFlightPingPong };
enum class MmaEpilogue : uint8_t { Fragments, SharedAlongN, SharedAlongM };

struct MmaPlan {
  MmaArith arith{};
  Contraction c;
  int64_t fragM = 16, fragN = 8, fragK = 8;  // the instruction's shape
  MmaShape shape = MmaShape::Native;         // f64: m8n8k4 (Native) or sm_90's m16n8k4/k8/k16
  int64_t blockM = 0, blockN = 0, blockK = 0;
  int64_t pitch = 0;        // elements between rows of a staged tile (blockK + padding)
  // 16-bit: each operand's tile is (k x rows) where its contiguous direction is not k (kMajor),
  // with its own pitch; elements of one buffer (a stage) of each operand's tile (OperandTile, a
  // and b below).
  ScalarType staged = ScalarType::F32;  // the tiles' element type
  // The tiles' form (schedule/StageRing.h): Padded, converted as stored (above); AsLoaded, in each
  // operand's contiguous direction (OperandTile::kMajor), copied 16 (or 8, 4) bytes at a time by cp.async
  // where aligned, fragments from (rows x k) tiles by ldmatrix: the 16-bit arithmetics, and TF32 /
  // tf32x3 with stages (cp.async copies the values unconverted; see planMma); wgmma's Canonical or
  // Swizzle128 (below).
  TileForm tiles = TileForm::Padded;
  // The ring of the steps' tiles (schedule/StageRing.h): `stages` buffers (1: loaded, converted and
  // stored per step), cp.async or TMA (`tma`), the block's barrier, the mbarrier (`tma`) or the
  // producer warpgroup (`producer`), the copies ring.ahead() steps ahead.
  StageRing ring;
  int tilesPerOperand = 1;  // tf32x3 without stages: 2 (big and small, converted when staged)
  int64_t tileBytes = 0;    // shared memory of all staged tiles
  // `epilogue shared`: the accumulators go to a (blockM x blockN) tile of the accumulator type laid
  // out along the output's contiguous direction (SharedAlongM: M fastest), pitch epiloguePitch
  // = 4 (mod 32) elements, in the operand tiles' space after the last step; then the block stores
  // the outputs in that order. sharedBytes: the larger of the two uses. Fragments: each lane
  // stores its accumulators.
  MmaEpilogue epilogue = MmaEpilogue::Fragments;
  bool sharedEpilogue() const { return epilogue != MmaEpilogue::Fragments; }
  bool epilogueAlongM() const { return epilogue == MmaEpilogue::SharedAlongM; }
  int64_t epiloguePitch = 0, epilogueBytes = 0, sharedBytes = 0;
  int64_t steps = 0;        // reduction steps of blockK
  // The fragment-ks the last step issues: blockK / fragK, but on a persistent wgmma ring without
  // register sets (!pingPong()) only those the reduction reaches (ceil((kExtent - (steps - 1) *
  // blockK) / fragK)): the consumers' last step of each tile is emitted apart, after the loop of
  // the others, and skips the fragment-ks of the padding (at N = 8, Np = 165: 1 of 4, an eighth
  // of a tile's wgmma). The tiles still hold the padding's zeros.
  int64_t lastStepFragments = 0;
  // The k each tile's wgmma or mma cover: steps * blockK less what the last step skips.
  int64_t issuedK() const { return lastStepFragments > 0 ? (steps - 1) * blockK + lastStepFragments * fragK : steps * blockK; }
  int64_t mmaPerStep = 0;   // mma instructions per warp per step (x3 for tf32x3); wgmma: per warpgroup
  int64_t threads = 0;      // of a block: 32 per warp (wgmma: 128 per warpgroup)
  // wgmma (MmaSchedule::wgmmaN): fragM x fragN = 64 x N per warpgroup, fragK 16 (bf16, f16) or 8
  // (tf32). Each operand's tile of a stage is in a canonical layout without swizzle of the PTX ISA:
  // core matrices of 8 rows of 16 bytes, each stored as 128 contiguous bytes. K-major (the rows
  // are M / N, the 16 bytes run along k): core (r / 8, k / E) (E = 16 bytes of elements) at
  // (r / 8) * SBO + (k / E) * LBO with LBO = 128 (a row group's cores adjacent along k) and SBO =
  // blockK * 8 elements (the whole step of a row group). MN-major (16-bit only, imm-trans = 1; the
  // rows are k, the 16 bytes run along M / N): core (r / E, k / 8) at (r / E) * SBO + (k / 8) * LBO
  // with SBO = 128 and LBO = rows * 8 elements. A tile is MN-major where the operand's contiguous
  // direction is M / N (kMajor above) and the arithmetic is 16-bit; a TF32 operand contiguous along
  // M / N (wgmma takes TF32 K-major only) is copied value by value into a K-major tile. LBO and SBO
  // in bytes (the descriptor holds them >> 4).
  //
  // `swizzle 128` (TileForm::Swizzle128): the 128-byte swizzled layouts instead (descriptor layout type 1).
  // An atom is 8 rows of 128 bytes (1024 bytes, 1024-byte aligned: the dynamic shared memory is,
  // and every buffer and row group is a multiple of 1024 bytes), the 16-byte chunk c of row r
  // stored at chunk c ^ (r % 8): the eight rows wgmma reads at one k fall in eight different bank
  // groups. K-major (rows M / N, 128 bytes of k each): the tile is blockK / W columns of atoms (W =
  // 128 bytes of elements), each the whole row extent (rows x 128 bytes), SBO = 1024 between row
  // groups, LBO unused (16); a wgmma's k moves the start address within the row (a k16 of bf16 is
  // 32 bytes), as the hardware applies the XOR to the address bits (4-6 by 7-9). MN-major (16-bit,
  // rows k, 128 bytes of M / N each): rows / W columns of atoms along M / N, each the whole step
  // (blockK rows of 128 bytes), LBO = blockK * 128 bytes between them, SBO = 1024 between groups
  // of 8 k. Either is what a TMA box of W x rows (K-major) or W x blockK (MN-major) elements with
  // 128-byte swizzle writes. K-major needs blockK a multiple of W, MN-major each warpgroup's M / N
  // (64 or wgmmaN) a multiple of W.
  MmaInstr instr = MmaInstr::Sync;
  bool isWgmma() const { return instr == MmaInstr::Wgmma; }
  // How a step overlaps the next (`overlap`). InFlight (wgmma, 3 or more stages): a step's wgmma
  // stays in flight while the next step is copied and issued (wait_group 1: the buffer refilled at
  // step s is the one step s - 2 read), so the copies run stages - 2 steps ahead; None with wgmma:
  // each step waits for its wgmma (wait_group 0), 1 step ahead. InFlightPingPong: InFlight with
  // two sets of A registers (below). PrefetchFragments (mma.sync, `fragments 2`, f64 with
  // stages): two sets of fragment registers. Fragment-k f + 1's registers
  // are loaded before fragment-k f's mma issue; at the step's last one the block first waits for
  // the next step's stage and meets at the barrier, refills this step's buffer (every fragment of
  // it is in registers by then: the copies run `stages` steps ahead instead of stages - 1) and
  // loads the next step's first fragments, then issues the last mma. No mma waits on a
  // shared-memory load after a barrier, and the barrier's wait overlaps the mma in flight.
  MmaOverlap overlap = MmaOverlap::None;
  // `copies hoisted` (with PrefetchFragments, FP64's sm_90 shapes, a block a tile): each thread's
  // copies of the ring are prepared once per block (their destinations, their sources at the first
  // step, the bytes their rows allow) and a step adds its k offset; past the last step (and past
  // the reduction's end within the last) they copy no bytes, so no branch separates them from the
  // step's mma, and they are issued after the barrier, before the step's last mma. The ring's
  // buffer index is carried instead of divided. Both operands must be plain loads of one array
  // each (an affine flat offset) over plain rows.
  bool hoistedCopies = false;
  bool prefetchFragments() const { return overlap == MmaOverlap::PrefetchFragments; }
  bool wgmmaInFlight() const { return overlap == MmaOverlap::InFlight || overlap == MmaOverlap::InFlightPingPong; }
  bool pingPong() const { return overlap == MmaOverlap::InFlightPingPong; }
  // `tma` (MmaPlan::ring: TMA, with TileForm::Swizzle128): each stage's tiles are boxes of a 2-D tensor map of the
  // operand's array, W (128 bytes) along its contiguous dimension by `boxOuter` rows (K-major: the
  // tile's rows; MN-major: blockK), written by cp.async.bulk.tensor with 128-byte swizzle, which is
  // the swizzled layout above; `boxes` per stage (K-major: blockK / W columns of atoms; MN-major:
  // rows / W). The map's extents are the array's, which must be the contraction's domain (TMA
  // zero-fills what lies outside the array, which then is what lies outside the domain), its rows
  // 16-byte multiples apart (TMA's global strides). One thread issues a stage's boxes after an
  // mbarrier.arrive.expect_tx of their bytes; every thread waits on the stage's mbarrier (parity:
  // the stage's use count) before the step's barrier. The mbarriers (8 bytes a stage) follow the
  // tiles and the epilogue at barrierOffset.
  struct TmaOperand {
    int array = -1;
    int64_t inner = 0, outer = 0;  // the array's extents: contiguous dimension, the other
    int64_t pitchBytes = 0;        // bytes between consecutive outer indices
    int64_t boxInner = 0, boxOuter = 0, boxes = 0;
    // A batched operand's leading dimensions, stacked into the rows: per batch loop (id) the rows
    // one of its steps moves the box (the outer coordinate adds the sum of value * rows).
    std::vector<std::pair<int, int64_t>> batchRows;
  };
  // Each operand's staged tile: its orientation (kMajor: (k x rows), the operand contiguous along
  // M / N; wgmma's mnMajor: the MN-major canonical layout, above), its pitch and the elements of
  // one buffer, wgmma's descriptor strides (bytes) and its TMA boxes. `a` and `b` are the tiles of
  // the contraction's operands c.a() and c.b() (after `transposed`).
  struct OperandTile {
    bool kMajor = false, mnMajor = false;
    int64_t pitch = 0, buffer = 0;
    int64_t lbo = 0, sbo = 0;
    TmaOperand tma;
  };
  OperandTile a, b;
  const OperandTile& tile(bool isA) const { return isA ? a : b; }
  // The block tiles along M and N, and the blocks along grid.x and grid.y (Plan.cpp: unbatched, the
  // N tiles along x and the M tiles along y; batched, all along x).
  int64_t mTiles() const { return (c.mExtent + blockM - 1) / blockM; }
  int64_t nTiles() const { return (c.nExtent + blockN - 1) / blockN; }
  // The output tiles of every batch (a block's each, unless persistent).
  int64_t tileCount() const {
    int64_t x = nTiles() * mTiles();
    for (int64_t e : c.batchExtent) x *= std::max<int64_t>(1, e);
    return x;
  }
  int64_t gridX() const {
    if (persistent()) return persistentBlocks;
    return c.batch.empty() ? nTiles() : tileCount();
  }
  int64_t gridY() const { return c.batch.empty() && !persistent() ? mTiles() : 1; }
  // `persistent` (producer-consumer rings only): persistentBlocks blocks along grid.x, at most the
  // tiles and about the blocks that can be resident at once (the device's multiprocessors times
  // the blocks each holds by threads, registers and shared memory). Block b runs tiles b, b +
  // grid, b + 2 grid, ...: tile t is the block tile that blockIdx.x = t would be in the batched
  // order above (the N tile fastest, then the M tile, then the batch), also where unbatched. The
  // producer and the consumers each loop over the block's tiles, the ring's step running on across
  // them (the r-th tile's step s is ring step r * steps + s: its buffer and phase), so the producer
  // fills the next tile's stages as soon as the consumers release them, while the consumers add
  // the last step and store the tile (the consumers release each tile's last stage before its
  // epilogue). 0: not persistent.
  int64_t persistentBlocks = 0;
  bool persistent() const { return persistentBlocks > 0; }
  // mma.sync's persistent ring without `blocks_per_sm`: the blocks per multiprocessor its grid
  // counts on (by threads, shared memory and mmaRegisterFloor), which the kernel's
  // __launch_bounds__ state as their second argument, so that the compiled kernel's registers let
  // that many be resident at once. 0: none (the schedule's blocks_per_sm, if any, is stated).
  int64_t boundBlocks = 0;
  // The second argument of the kernel's __launch_bounds__: blocks_per_sm, else boundBlocks.
  int64_t minBlocks(int64_t blocksPerSM) const { return blocksPerSM > 0 ? blocksPerSM : boundBlocks; }
  int64_t barrierOffset = 0;
  // TF32 operands stored along M / N (aSource Registers): wgmma takes TF32 tiles K-major only, but its A
  // may come from registers, which any layout feeds. A TF32 contraction whose second operand is
  // stored along N and whose first along K (matmul's a[i, k] b[k, j]) is planned transposed
  // (`transposed`: C^T = B^T A^T, the contraction's operands, M and N swapped, so the plan's M is
  // the output's column index); then the operand stored along M is A, staged as loaded in the
  // MN-major layout above (cp.async of 16 bytes, or TMA boxes of 128 bytes along M: the 16-bit
  // arithmetics' MN-major tile), and each warp loads its A fragment per fragment-k from it (the
  // m16n8k8 register pattern over its 16 rows: (g, t), (g + 8, t), (g, t + 4), (g + 8, t + 4)).
  MmaASource aSource = MmaASource::SharedTile;
  bool registerA() const { return aSource == MmaASource::Registers; }
  bool transposed = false;
  // tf32x3 on wgmma (splitBuffers > 0): after a step lands, the block splits each tile wgmma reads
  // from shared memory (B; A too unless registerA) in place into its big part (rounded to nearest)
  // and a small part in a tile of its own, whose ring has splitBuffers buffers; then an async proxy
  // fence and a barrier. Per fragment-k three wgmma: small A by big B, big A by small B, then big
  // by big, into partial sums of the step (fresh accumulators, the first wgmma with scale-d 0),
  // waited for and added to the block's in FP32 (rounded to nearest): the tensor cores truncate as
  // they accumulate, an error that grows with the reduction's length. Each step waits for its own
  // wgmma (no overlap), so one small buffer serves. smallOffset: the small tiles' start (elements
  // of the staged type), A's first where it has one.
  int64_t splitBuffers = 0, smallOffset = 0;
  // With 3 or more stages, registerA's fragments come in two sets picked by the step's parity
  // (InFlightPingPong), so that the step's wgmma stays in flight (wait_group 1) while the next step fills
  // the other set; a set is kept after the wait that retires it. Where two sets do not fit the
  // registers, each step waits for its own (no overlap); tf32x3 always does.
  // `producer` (with `tma`; warp specialization): the block has one warpgroup more, after the
  // consumers (the warpgroups of the output tile). Its thread 0 issues every step's TMA boxes as
  // soon as the stage's buffer is free (the consumers' mbarrier `empty` of the stage, one arrival
  // per consumer warp once the wgmma that read it is waited for), up to `stages` steps ahead; the
  // consumers wait for the stage's mbarrier (TMA's `full`; tf32x3: `ready`, which the producer's
  // other three warps arrive on after splitting the landed tiles, so the split runs beside the
  // consumers' wgmma and each stage has a small buffer of its own: splitBuffers = stages; the
  // big parts are the landed values truncated, as the tensor cores read them, and only the small
  // parts, the rest rounded to nearest, are written). No block-wide barrier per step. The
  // producer leaves after its last step, so the epilogue is the
  // fragments' (`epilogue shared` meets the whole block). Where the block's threads at the
  // registers the consumers need exceed the multiprocessor's, setmaxnreg moves registers from the
  // producer (producerRegisters) to the consumers (consumerRegisters); 0: no setmaxnreg.
  // mbarriers: full, empty and (tf32x3) ready, `stages` each, from barrierOffset.
  int64_t consumerThreads = 0, producerRegisters = 0, consumerRegisters = 0;
  // With two or more consumer warpgroups they issue their steps' wgmma in turn (orderedIssue:
  // warpgroup w after w - 1, the first after the last's previous step; an mbarrier each, after the
  // stages'), so that one's wgmma run while the other waits for its own and adds its partial sums,
  // instead of all issuing together and idling the tensor cores together (CUTLASS's ping-pong).
  bool orderedIssue = false;
  // `pingpong` (persistent, two or more consumer warpgroups C): the block tile is one warpgroup's
  // (64 x N, every consumer's origin the tile's) and consumer c runs the block's rounds c, c + C,
  // c + 2C, ... of its persistent tile list; the producer fills the ring in the rounds' order as
  // without. Each ring step is read by one consumer, which alone frees its stage (`empty` counts
  // one warpgroup's four warps). The consumers' main loops run in the rounds' order (a tile turn,
  // an mbarrier each after the stages': round r's consumer starts its steps once round r - 1's
  // consumer has issued its last step's wgmma): a stage's mbarrier is waited for by parity, which
  // tells its phase from the one before only, and a consumer that ran ahead of the one before it
  // could wait two phases ahead (its parity passes at once). So one consumer's epilogue and its
  // wait for the next turn run beneath the next consumer's steps (CUTLASS's ping-pong kernel).
  // No orderedIssue per step.
  bool alternatingTiles = false;
  // `resident` (persistent, unbatched): B's tiles of all `steps` stay in shared memory for the
  // block's tiles, which share one N tile (persistentBlocks is a multiple of nTiles, so block b's
  // tiles b + r * grid all have N tile b % nTiles). The producer's thread 0 copies them once, on
  // an mbarrier of their own (`resident full`), before the ring's first step; tf32x3's splitting
  // warps split them once into small tiles of their own (`resident ready`, which the consumers wait
  // for once). The ring's stages then carry A alone (expect_tx A's bytes). A step reads B's
  // buffer of its step in the tile, not the ring's. Where B is the contraction's small operand
  // reused by every tile (the DG rows' D: 192 of each tile's 256 rows), the per-tile split and
  // copy shrink to A's.
  bool residentB = false;
  // `group G` (MmaSchedule::group): the linear tile index (batched blockIdx.x, a persistent
  // grid's tile) walks groups of G M tiles, M fastest within a group, each group's N tiles in
  // turn; the last group holds the M tiles left. 0: N fastest (EmitMma.cpp, declareTileOrigin).
  int64_t groupM = 0;
  // The epilogue's reads of memory beside its sums (DG lifting's rhs[k, i] and invJ[k]), where a
  // producer runs the ring (planEpiloguePrefetch): its issuing thread prefetches each into L2 as it
  // starts a tile, the byte range from the tile's first point to its last (one
  // cp.async.bulk.prefetch.L2), so that the consumers' epilogue, a tile's steps later, finds them
  // there instead of waiting for DRAM, group after group of its values (Nsight Compute: the
  // winner's warps stalled on those loads about half their cycles; docs/bench.md, session 46).
  // Only loads of the signature's arrays at affine offsets whose range over a tile is dense (at
  // most kPrefetchSpread times the elements the tile reads), outside any select or && / ||, of one
  // unstacked statement.
  std::vector<Expr> epiloguePrefetch;
  // `resident` B that no TMA box copies (its rows are stacked statements' arrays, or not 16 bytes
  // apart; the streaming A still comes by TMA): the producer's 128 threads copy B's kept tiles
  // once by cp.async (zeros outside the domain), before thread 0 issues the ring, each arriving
  // on `resident full` once its copies have landed (cp.async.mbarrier.arrive.noinc: the mbarrier
  // counts the 128);
  // the consumers fence them for the async proxy after their wait. B has no tensor map (planTma
  // left it out).
  bool residentByThreads() const { return residentB && ring.tma() && b.tma.array < 0; }
  // A that no TMA box copies (rows not 16 bytes apart: the DG rows' u at N = 8, 660-byte rows),
  // under `tma producer` with B kept (`resident`, so the stages carry A alone): the producer's
  // 128 threads copy each stage of A by cp.async (4, 8 or 16 bytes as the rows allow, zeros
  // outside the domain) once the consumers have freed it, each arriving on the stage's `full`
  // (count 128) by cp.async.mbarrier.arrive.noinc; under tf32x3 the plain loads below (aCopy)
  // instead. The consumers fence each stage for the async proxy after their wait
  // (ring.fenceAsyncProxy). A has no tensor map.
  bool aByThreads() const { return residentB && ring.producer() && ring.tma() && a.tma.array < 0; }
  // aByThreads' copy engine (aCopy). Under tf32x3 (the producer splits: splitBuffers) Registers:
  // the producer's four warps load each step's K slice of A row by row with plain loads (a warp's
  // 32 lanes one row's 128 contiguous bytes of k, aRowsInFlight rows loaded before any is stored),
  // write the values (the big parts, as the tensor cores read them) and their small parts into
  // the swizzled stage themselves (a row's 32 values in 32 banks), fence for the async proxy and
  // arrive on the stage's `ready` (count 128); `full` is not used. No cp.async, no second pass of
  // the split over shared memory, no extra shared memory: measured faster than cp.async and the
  // splitters' pass on the DG rows at N = 8 (docs/bench.md, session 46), so it replaces that form
  // under tf32x3. Without a split (tf32) the threads' cp.async stays (CpAsync), no register holding
  // a value in flight. aRowsInFlight: 16 where the producer's registers hold them, else 8
  // (planProducerRegisters). aLoadsAhead, where a step's loads are all in flight at once (16 rows
  // of a 64-row tile's k 32): the ring steps whose values the registers carry ahead (1 to 3; 0:
  // none). Each ring step's values are loaded as soon as the stage aLoadsAhead steps before is
  // stored (the tile's later step, or the next tile's), so that their latency passes while the
  // producer waits for free stages; with 2 or 3 (a tile's steps a multiple of it, the registers
  // for them all) that many steps' loads are in flight at once, as many times the bytes an L2
  // round trip brings.
  CopyEngine aCopy = CopyEngine::CpAsync;
  int64_t aRowsInFlight = 0;
  int64_t aLoadsAhead = 0;
  // Under `pingpong`, stacked statements whose rows hold an odd count of values (no even column
  // pairs: dg_diff at N = 8); singleArrays: each chunk's array picked once, for the float2 pairs
  // of chunks inside one statement and the single stores of those crossing into the next
  // (EmitMmaOddRows.cpp, EmitMma.cpp), where setmaxnreg gives the consumers about 24 registers
  // beyond the estimate and the producer still keeps two or more steps' loads in flight
  // (aLoadsAhead >= 2); else single stores whose points branch over the statements, and the
  // registers are not counted (checkLaunch).
  bool singleArrays = false;
  bool aByLoads() const { return aByThreads() && aCopy == CopyEngine::Registers; }
  // aByLoads: a producer warp's loads of a step (a quarter of the tile's rows, blockK / 32 a row).
  int64_t warpLoadsPerStep() const { return blockM / 4 * (blockK / 32); }
  // mma.sync (`fragments 2`'s ring, f64) with `persistent` (and `resident`): the same loop over
  // the block's tiles without a producer. The ring's step runs on across the tiles (the r-th tile's
  // step s is ring step r * steps + s: its buffer), its copies `stages` steps ahead reaching into
  // the next tile, so each tile's first stages land while the block adds the last steps of the one
  // before and stores it (the fragment epilogue, in the loop after the tile's last step). Where
  // resident, B's kept tile is one (blockN x steps * blockK) box of the whole reduction (K x N
  // where kMajor), copied by cp.async once before the ring's first step in a group of its own,
  // with a pitch = 4 (mod 8) doubles over the whole reduction (conflict-free fragment loads as the
  // ring's); a step reads its columns from keptStep(step) on. planMma transposes the contraction
  // for `resident a` as for wgmma, so the kept operand is B (the N side: 8 rows a fragment, which
  // fits the DG rows' 3 Np rows more closely than A's 16).
  bool keptWhole() const { return residentB && !isWgmma(); }
  // `pingpong` on mma.sync's persistent ring (warpsM rows of warpsN warps): each warp row is a
  // group that owns whole tiles of its own, one warp row's (tileM fragments by the block's N: the
  // block tile, blockM), group g the block's rounds g, g + G, g + 2G, ... Each group has a ring of
  // `stages` buffers of its own (the tiles hold G rings: A's, and B's where not kept) and meets
  // at a named barrier of its own (bar.sync 1 + g, its warps' threads) instead of the block's,
  // so that one group's waits and epilogue run beneath the others' mma (a kept B is copied by the
  // whole block before the rings, which then meet once). No turns: the groups run freely. 0: none.
  int64_t rowGroups = 0;
  // The rings in the tiles: one per row group, else one.
  int64_t rings() const { return rowGroups > 0 ? rowGroups : 1; }
  // Buffers of A's tile: every ring's stages.
  int64_t aBuffers() const { return ring.stages * rings(); }
  int64_t keptStep(int64_t step) const { return step * blockK * (b.kMajor ? b.pitch : 1); }
  // Buffers of B's tile (and of its small tiles under tf32x3): one a step where resident (mma.sync:
  // one of the whole reduction, keptWhole), else every ring's stages.
  int64_t bBuffers() const { return residentB ? (isWgmma() ? steps : 1) : aBuffers(); }
  int64_t bSmallBuffers() const { return splitBuffers == 0 ? 0 : residentB ? steps : splitBuffers; }
  int64_t consumerGroups() const { return consumerThreads / 128; }
  // The warpgroups that free each stage: one where they alternate tiles, else every consumer.
  int64_t releasingWarps() const { return alternatingTiles ? 4 : consumerThreads / 32; }
};

// A prefetched range's bytes over the elements a tile reads (MmaPlan::epiloguePrefetch): at most.
constexpr int64_t kPrefetchSpread = 2;

// Registers per thread of a wgmma plan: the accumulators (N / 2), tf32x3's partial sums and
// registerA's fragments (per set), ~40 others.
int64_t wgmmaPlanRegisters(const MmaPlan& p);

// The plan of `s.mma` for nest `nest`, or the reasons why none exists (appended to `reasons`):
// the nest does not qualify, the arithmetic does not fit its type, other clauses beside `mma:`,
// the launch exceeds `limits`.
std::optional<MmaPlan> planMma(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits,
                               std::vector<std::string>& reasons);

// Registers per thread of a wgmma m64nN schedule: N / 2 f32 accumulators and ~40 others.
int64_t wgmmaRegisters(int64_t n);

// Whether statement `st`'s output offset has unit stride along loop `fast` and its other strides
// and its start (the offset's constant plus `lo`) are multiples of v: v neighbours along `fast`
// from a multiple of v then lie in one v-aligned run of the array (pairedStores' pairs, the
// shared epilogue's vectors).
bool offsetInRunsOf(const Kernel& k, const Stmt& st, int fast, int64_t lo, int64_t v);

// How many outputs the shared epilogue (MmaPlan::sharedEpilogue) stores at once along its tile's
// fast direction, one 16-byte vector (f64: 2, f32: 4), or 1. Vectors where nest `nest`'s statement
// stores its sum alone (one statement, no epilogue arithmetic, the sum's type), its output's
// offset has unit stride along the fast direction (a plain loop) and every other stride, its start,
// that direction's extent, the block's tile and the epilogue pitch are whole vectors, and arrays
// are aligned to `arrayAlignment` >= 16 bytes: then every vector lies in the domain or outside it,
// and in one aligned 16 bytes of the output and of the tile.
int64_t epilogueVectorWidth(const Kernel& k, int nest, const MmaPlan& p, int arrayAlignment);

// The mma arithmetics `precision` allows for a contraction of type `t`: f32 under tf32x3 gets
// tf32x3; under tf32 both tf32 and tf32x3; f64 gets f64 under every policy; others none.
std::vector<MmaArith> mmaAriths(Precision precision, ScalarType t);
// The same for contraction `c`: where both operands are conversions of 16-bit loads, their
// arithmetic (bf16 / f16: exact products) first, under every policy.
std::vector<MmaArith> mmaAriths(Precision precision, const Contraction& c);

// Why `precision` cannot apply to the bound kernel (empty: it can): tf32 and tf32x3 round f32
// operands, so a kernel that computes only in f64 refuses them; fp64x and fp32x need a
// contraction they can rewrite (applyPolicy, schedule/PolicyRewrite.h).
std::string precisionObstacle(const Kernel& k, Precision precision);

// Why schedule `s` may not run under `precision` (empty: it may): an `mma:` clause whose
// arithmetic the policy does not allow.
std::vector<std::string> precisionReasons(const Schedule& s, Precision precision);

}  // namespace rtcg
