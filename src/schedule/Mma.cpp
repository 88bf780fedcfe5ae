#include "schedule/Mma.h"

#include <fmt/format.h>

#include <algorithm>
#include <set>

#include "ir/Analysis.h"
#include "ir/IntOps.h"
#include "ir/Printer.h"
#include "ir/Walk.h"
#include "schedule/Domain.h"
#include "schedule/PolicyRewrite.h"
#include "schedule/SpaceModel.h"

namespace rtcg {

namespace {

// The storage type a packed arithmetic (mmaPacked) multiplies: its tiles' element type.
ScalarType packedType(MmaArith a) {
  return a == MmaArith::F16 ? ScalarType::F16 : a == MmaArith::S8 ? ScalarType::I8 : ScalarType::BF16;
}

// Clauses that an `mma:` schedule does not take: index clauses and every other clause row.
void checkAlone(const NestSchedule& s, std::vector<std::string>& reasons) {
  if (!s.indices.empty())
    reasons.push_back(fmt::format("'mma:' maps the nest's indices itself: no index clause beside it ('{}')",
                                  printIndexSchedule(s.indices[0])));
  for (const ClauseRow& row : clauseTable())
    if (row.kind != ClauseKind::Mma && row.name != std::string("blocks_per_sm") && row.name != std::string("stores") &&
        !clauseAtDefault(row, s))
      reasons.push_back(fmt::format("'{}:' does not apply beside 'mma:'", row.name));
}

// The shared epilogue's tile (MmaPlan::sharedEpilogue): along M where the output's offset has unit
// stride in M and not in N (a column of the output is contiguous), else along N.
void planEpilogue(const Kernel& k, int nest, const NestSchedule& s, MmaPlan& p) {
  p.sharedBytes = p.tileBytes;
  if (!s.mma.sharedEpilogue) return;
  const Stmt& st = k.nests[size_t(nest)].body[size_t(p.c.statement())];
  auto form = flatOffset(k, st.array, st.indices);
  const bool alongM = form && form->coeff(p.c.m) == 1 && form->coeff(p.c.n) != 1;
  p.epilogue = alongM ? MmaEpilogue::SharedAlongM : MmaEpilogue::SharedAlongN;
  const int64_t fast = alongM ? p.blockM : p.blockN, slow = alongM ? p.blockN : p.blockM;
  // The fragments' writes spread over the banks: along M (word col * pitch + row per lane) a pitch
  // of 4 (mod 32) puts the 32 lanes of one store in 32 banks; along N the f32 accumulators go as
  // pairs (float2, columns 2t and 2t + 1 of row g) and a pitch of 8 (mod 32) puts each half-warp's
  // 16 pairs in 32 banks (with 4 (mod 32), single floats: 2-way conflicts, 4-way measured).
  const bool pairs = !alongM && p.c.type == ScalarType::F32;
  p.epiloguePitch = fast + ((pairs ? 40 : 36) - fast % 32) % 32;
  p.epilogueBytes = slow * p.epiloguePitch * typeBytes(p.c.type);
  p.sharedBytes = std::max(p.tileBytes, p.epilogueBytes);
}

}  // namespace

bool offsetInRunsOf(const Kernel& k, const Stmt& st, int fast, int64_t lo, int64_t v) {
  auto form = flatOffset(k, st.array, st.indices);
  if (!form || form->coeff(fast) != 1 || (form->constant + lo) % v != 0) return false;
  for (const auto& [var, coeff] : form->coeffs)
    if (var != fast && coeff % v != 0) return false;
  return true;
}

int64_t epilogueVectorWidth(const Kernel& k, int nest, const MmaPlan& p, int arrayAlignment) {
  if (!p.sharedEpilogue() || p.c.parts.size() != 1 || arrayAlignment < 16) return 1;
  const Stmt& st = k.nests[size_t(nest)].body[size_t(p.c.statement())];
  if (st.value != p.c.sum() || k.params[size_t(st.array)].type != p.c.type) return 1;
  const bool alongM = p.epilogueAlongM();
  if (!plainRows(p.c, alongM)) return 1;
  const int64_t v = 16 / typeBytes(p.c.type);
  const int fast = alongM ? p.c.m : p.c.n;
  const int64_t lo = alongM ? p.c.mLo : p.c.nLo, extent = alongM ? p.c.mExtent : p.c.nExtent;
  const int64_t block = alongM ? p.blockM : p.blockN;
  if (!offsetInRunsOf(k, st, fast, lo, v)) return 1;
  return extent % v == 0 && block % v == 0 && p.epiloguePitch % v == 0 ? v : 1;
}

namespace {

// `swizzle 128`'s part of a wgmma plan (TileForm::Swizzle128): the swizzled layouts' strides, and
// the reasons where a tile does not fill whole 128-byte rows of atoms.
void planSwizzle128(const MmaSchedule& ms, MmaPlan& p, std::vector<std::string>& reasons) {
  p.tiles = TileForm::Swizzle128;
  const int64_t bytes = typeBytes(p.staged), w = 128 / bytes;
  auto operand = [&](const char* name, bool mnMajor, int64_t groupRows, int64_t& lbo, int64_t& sbo) {
    if (!mnMajor && p.blockK % w != 0)
      reasons.push_back(fmt::format("mma: 'swizzle 128' needs 128-byte rows of k: k a multiple of {} for {} (the "
                                    "{} tile is K-major), not {}", w, mmaArithName(p.arith), name, p.blockK));
    if (mnMajor && groupRows % w != 0)
      reasons.push_back(fmt::format("mma: 'swizzle 128' needs 128-byte rows along {}: the {} tile is MN-major and "
                                    "a warpgroup's {} is {}, not a multiple of {}", name[0] == 'A' ? "M" : "N", name,
                                    name[0] == 'A' ? "M" : "N", groupRows, w));
    lbo = mnMajor ? p.blockK * 128 : 16;
    sbo = 1024;
  };
  operand("A", p.a.mnMajor, 64, p.a.lbo, p.a.sbo);
  operand("B", p.b.mnMajor, ms.wgmmaN, p.b.lbo, p.b.sbo);
}

// `tma`'s part (MmaPlan::ring: TMA): each operand's tensor map and boxes, or the reasons why TMA cannot
// copy it: the box must be a 2-D array read whole as [outer, inner] by the contraction's own
// indices (TMA's zero fill at the array's edge is then the domain's), with rows a multiple of 16
// bytes apart, not batched, and as stored (TF32 stored along M / N needs a transposition). A B
// that `resident` keeps (keptB) and no box can copy is the producer's threads' to copy
// (MmaPlan::residentByThreads); so is A (K-major) where B is kept and a producer runs the ring
// (MmaPlan::aByThreads).
void planTma(const Kernel& k, bool keptB, bool producer, MmaPlan& p, std::vector<std::string>& reasons) {
  p.ring.engine = CopyEngine::Tma;
  p.ring.handOver = HandOver::Mbarrier;
  p.ring.fenceAsyncProxy = false;  // TMA writes through the async proxy itself
  const int64_t bytes = typeBytes(p.staged), w = 128 / bytes;
  auto operand = [&](bool isA, MmaPlan::TmaOperand& t, std::vector<std::string>& reasons) {
    const char* name = isA ? "A" : "B";
    const Expr& e = isA ? p.c.a() : p.c.b();
    const Expr& load = e->kind == ExprKind::Load ? e : e->operands[0];
    const bool mnContiguous = p.tile(isA).kMajor, mnMajor = p.tile(isA).mnMajor;
    const int rowVar = isA ? p.c.m : p.c.n;
    const int64_t rows = isA ? p.blockM : p.blockN;
    const int64_t rowLo = isA ? p.c.mLo : p.c.nLo, rowExtent = isA ? p.c.mExtent : p.c.nExtent;
    auto refuse = [&](const std::string& why) {
      reasons.push_back(fmt::format("mma: 'tma' cannot copy {} ('{}'): {}", name, printExpr(e, &k), why));
    };
    if (mnContiguous && !mnMajor) return refuse("TF32 tiles are K-major and TMA copies boxes as stored, along M / N");
    if (!plainRows(p.c, isA))
      return refuse(fmt::format("its rows ({}) are several indices or stacked statements, not one dimension of a "
                                "2-D box", isA ? "M" : "N"));
    const std::vector<int64_t> shape = arrayShape(k, load->array);
    auto form = flatOffset(k, load->array, load->operands);
    const int innerVar = mnContiguous ? rowVar : p.c.kLoop()->id, outerVar = mnContiguous ? p.c.kLoop()->id : rowVar;
    const int64_t innerExtent = mnContiguous ? rowExtent : p.c.kExtent, outerExtent = mnContiguous ? p.c.kExtent : rowExtent;
    // Leading dimensions indexed by batch loops (each alone, from 0, over its whole extent) make
    // one 2-D array of their rows stacked: [b.., row, k] is [(b..) rows + row, k]. Only with K
    // contiguous: a box past a batch's last row reads the next batch's rows, which feed only
    // outputs past the domain (not stored); past K it would feed the sums.
    const size_t lead = shape.size() >= 2 ? shape.size() - 2 : 0;
    std::vector<std::pair<int, int64_t>> batchRows;
    int64_t stacked = outerExtent;
    for (size_t d = lead; d-- > 0;) {
      const Expr& ix = load->operands[d];
      const auto at = ix->kind == ExprKind::Var && ix->varKind == VarKind::Index
                          ? std::find(p.c.batch.begin(), p.c.batch.end(), ix->varId) : p.c.batch.end();
      if (at == p.c.batch.end() || mnContiguous) return refuse(
          "it must be a 2-D array read whole by the contraction's indices, as [row, column] from 0, or K-major with "
          "batch indices before them");
      const size_t b = size_t(at - p.c.batch.begin());
      if (p.c.batchLo[b] != 0 || p.c.batchExtent[b] != shape[d])
        return refuse("its batch dimensions must be read whole, from 0");
      batchRows.emplace_back(*at, stacked);
      stacked *= shape[d];
    }
    if (shape.size() < 2 || !form || form->constant != 0 || form->coeffs.size() != 2 + lead ||
        form->coeff(innerVar) != 1 || form->coeff(outerVar) != shape[lead + 1] || rowLo != 0 || p.c.kLo != 0 ||
        shape[lead + 1] != innerExtent || shape[lead] != outerExtent)
      return refuse("it must be a 2-D array read whole by the contraction's indices, as [row, column] from 0");
    t.array = load->array;
    t.inner = shape[lead + 1], t.outer = stacked, t.pitchBytes = shape[lead + 1] * bytes;
    t.batchRows = std::move(batchRows);
    if (t.pitchBytes % 16 != 0)
      refuse(fmt::format("its rows are {} bytes apart, not a multiple of 16 (TMA's global strides)", t.pitchBytes));
    t.boxInner = w, t.boxOuter = mnMajor ? p.blockK : rows, t.boxes = mnMajor ? rows / w : p.blockK / w;
    if (t.boxOuter > 256) refuse(fmt::format("a box of {} rows, more than TMA's 256", t.boxOuter));
  };
  // A that no box copies: the producer's threads' where B is kept (the stages carry A alone).
  std::vector<std::string> aReasons;
  operand(true, p.a.tma, aReasons);
  if (keptB && producer && !aReasons.empty() && !p.a.kMajor && !p.a.mnMajor && p.c.batch.empty()) {
    p.a.tma = {};                  // MmaPlan::aByThreads
    p.ring.fenceAsyncProxy = true;  // the threads' copies reach wgmma through the async proxy
  } else {
    for (std::string& r : aReasons) reasons.push_back(std::move(r));
  }
  // A kept B (`resident`) that no box copies is copied by the producer's threads instead.
  std::vector<std::string> bReasons;
  operand(false, p.b.tma, bReasons);
  if (keptB && !bReasons.empty()) {
    p.b.tma = {};  // MmaPlan::residentByThreads
  } else {
    for (std::string& r : bReasons) reasons.push_back(std::move(r));
  }
}

// `producer`'s part (MmaPlan::ring: producer-consumer): a warpgroup more, which issues the TMA boxes (and
// splits tf32x3's tiles, then a small buffer per stage), or the reasons why it cannot.
void planProducer(const MmaSchedule& ms, MmaPlan& p, std::vector<std::string>& reasons) {
  p.ring.handOver = HandOver::ProducerConsumer;
  p.ring.release = StageRelease::BeforeRefill;  // the consumers' `empty`
  if (ms.sharedEpilogue)
    reasons.push_back("mma: 'producer' leaves after its last step, and 'epilogue shared' meets the whole block at "
                      "barriers: give one of them");
  if (p.splitBuffers) p.splitBuffers = p.ring.stages;
  // `pingpong`: the consumers own whole tiles, ordered per tile instead of per step.
  p.alternatingTiles = ms.pingpong;
  p.orderedIssue = ms.warpsM * ms.warpsN > 1 && !ms.pingpong;
}

// aByThreads' copy engine (MmaPlan::aCopy, aRowsInFlight): under tf32x3 the producer's plain loads,
// as many rows in flight (16 or 8) as its `registers` hold beside kLoadRegisters others (the loop,
// the addresses, the split): with setmaxnreg's 40, 16 rows spilled 64 bytes in ptxas and 8 none;
// with the launch's 168, 16 ran 25% faster than 8 (docs/bench.md, session 46). Rows a batch divide
// a warp's loads of a step (a quarter of the tile's rows, blockK / 32 loads a row).
constexpr int64_t kLoadRegisters = 32;
// The producer's registers for `sets` steps' loads of 16 rows carried ahead (planProducerLoads).
constexpr int64_t stepLoadRegisters(int64_t sets) { return sets * 16 + kLoadRegisters + 8; }

void planProducerLoads(MmaPlan& p, int64_t registers) {
  if (!p.aByThreads() || !p.splitBuffers) return;
  p.aCopy = CopyEngine::Registers;
  const int64_t loads = p.warpLoadsPerStep();
  p.aRowsInFlight = std::min<int64_t>(loads, registers >= 16 + kLoadRegisters ? 16 : 8);
  // A step's loads all in flight at once: carried ahead one ring step, or two or three where the
  // tile's steps group by that many and the registers hold them all: the loads' round trips
  // through L2 pace the producer (N = 8: u read by four N tiles' blocks), and each set in flight
  // carries a step's bytes more.
  if (p.aRowsInFlight != loads) return;
  p.aLoadsAhead = 1;
  for (int64_t sets : {3, 2})
    if (p.steps % sets == 0 && registers >= sets * loads + kLoadRegisters) {
      p.aLoadsAhead = sets;
      break;
    }
}

// The producer's registers (MmaPlan::producerRegisters, consumerRegisters): none moved where the
// consumers' `regs` fit the registers __launch_bounds__ leaves every thread of the block (in 8s);
// else setmaxnreg within the pool the launch gets, the producer keeping 40 (its loops and
// addresses; NVRTC 13 spills none of them, tf32x3's split included), as many as that leaves the
// consumers (at most 240). Whether the consumers then fit is planMma's register check. (Loading
// the next step's A registers into a second set while the step's wgmma run, before its wait,
// measured no faster: docs/bench.md.)
void planProducerRegisters(MmaPlan& p, int64_t regs, int64_t blocksPerSM) {
  p.consumerThreads = p.threads - 128;
  p.producerRegisters = p.consumerRegisters = p.aRowsInFlight = p.aLoadsAhead = 0;
  const int64_t launch = std::min<int64_t>(248, 65536 / (p.threads * std::max<int64_t>(1, blocksPerSM)) / 8 * 8);
  auto consumers = [&](int64_t producer) {
    return std::min<int64_t>(240, (p.threads * launch - 128 * producer) / p.consumerThreads / 8 * 8);
  };
  if (regs > launch) {
    // A producer that loads a step's 16 rows a warp keeps what three steps of them need, where a
    // tile's steps group by three, or else two (planProducerLoads carries them ahead), where the
    // consumers still fit.
    const bool loads = p.aByThreads() && p.splitBuffers && p.warpLoadsPerStep() == 16;
    p.producerRegisters = 40;
    for (int64_t sets : {3, 2})
      if (loads && (sets == 2 || p.steps % sets == 0) && consumers(stepLoadRegisters(sets)) >= regs) {
        p.producerRegisters = stepLoadRegisters(sets);
        break;
      }
    p.consumerRegisters = consumers(p.producerRegisters);
  }
  planProducerLoads(p, p.producerRegisters > 0 ? p.producerRegisters : launch);
}

// The loads the producer prefetches for the epilogue (MmaPlan::epiloguePrefetch): those of the
// statement's value outside its sum and outside any select or && / ||, whose flat offset is affine
// in M, N and the batch indices with strides >= 0 and whose range over one tile (first point to
// last) is at most kPrefetchSpread times the elements the tile reads of it; arrays of the
// signature (not a kernel's local ones). One unstacked statement (plain rows), under a producer.
void planEpiloguePrefetch(const Kernel& k, int nest, MmaPlan& p) {
  if (!p.ring.producer() || p.sharedEpilogue() || p.c.parts.size() != 1 || !plainRows(p.c, true) ||
      !plainRows(p.c, false))
    return;
  const int64_t bm = std::min(p.blockM, p.c.mExtent), bn = std::min(p.blockN, p.c.nExtent);
  auto dense = [&](const Expr& load) {
    auto form = flatOffset(k, load->array, load->operands);
    if (!form) return false;
    for (const auto& [var, coeff] : form->coeffs)
      if (coeff < 0 || (var != p.c.m && var != p.c.n &&
                        std::find(p.c.batch.begin(), p.c.batch.end(), var) == p.c.batch.end()))
        return false;
    const int64_t a = form->coeff(p.c.m), b = form->coeff(p.c.n);
    const int64_t range = a * (bm - 1) + b * (bn - 1) + 1, elements = (a ? bm : 1) * (b ? bn : 1);
    return range <= kPrefetchSpread * elements;
  };
  for (const EpilogueLoad& l : epilogueLoads(k.nests[size_t(nest)], p.c))
    if (!l.conditional && size_t(l.load->array) < k.numSignatureParams() && dense(l.load))
      p.epiloguePrefetch.push_back(l.load);
}

// wgmma's part of the plan (MmaPlan::wgmma): the instruction's shape, the block tile of 64 x N
// per warpgroup, the canonical tile layouts and their descriptor strides. The arithmetic must be one
// wgmma takes, and the tiles are copied by cp.async (`stages`): wgmma reads shared memory itself.
void planWgmma(const MmaSchedule& ms, MmaPlan& p, std::vector<std::string>& reasons) {
  if (!mmaWgmmaArith(p.arith))
    reasons.push_back(fmt::format("mma: wgmma multiplies bf16, f16, tf32, tf32x3 or s8 operands, not '{}'", mmaArithName(p.arith)));
  if (p.arith == MmaArith::S8 && (!p.c.aAlongK || !p.c.bAlongK))
    reasons.push_back("mma: s8 wgmma reads both operands K-major (contiguous along the reduction index)");
  if (p.ring.stages < 2)
    reasons.push_back("mma: wgmma reads tiles copied by cp.async: give 'stages 2' to 'stages 4'");
  p.instr = MmaInstr::Wgmma;
  p.fragM = 64, p.fragN = ms.wgmmaN, p.fragK = mmaFragK(p.arith);
  p.blockM = ms.warpsM * 64, p.blockN = ms.warpsN * ms.wgmmaN;
  // `pingpong` (MmaPlan::alternatingTiles): each consumer warpgroup owns whole tiles of its own.
  if (ms.pingpong) p.blockM = 64, p.blockN = ms.wgmmaN;
  // TF32 stored along M / N goes through A's registers (MmaPlan::registerA): B stored along N
  // with A along K makes the transposed product, whose A is then the one stored along M.
  const bool tf32 = p.arith == MmaArith::Tf32 || p.arith == MmaArith::Tf32x3;
  // `resident a`: the kept operand goes to wgmma's N side (MmaPlan::residentB), as wide as 256.
  const bool tf32Forced = tf32 && !p.c.bAlongK && p.c.aAlongK;
  if (ms.resident == MmaOperand::A && tf32 && !p.c.aAlongK)
    reasons.push_back("mma: 'resident a' keeps the product's first operand as wgmma's B, which TF32 reads K-major "
                      "only, and it is stored along M (keep 'b', or none)");
  if (ms.resident == MmaOperand::B && tf32Forced)
    reasons.push_back("mma: 'resident b' keeps the product's second operand as wgmma's B, which TF32 reads K-major "
                      "only, and it is stored along N (keep 'a', or none)");
  if (tf32Forced || ms.resident == MmaOperand::A) {
    transpose(p.c);
    p.transposed = true;
  }
  p.a.kMajor = !p.c.aAlongK, p.b.kMajor = !p.c.bAlongK;
  p.aSource = tf32 && p.a.kMajor ? MmaASource::Registers : MmaASource::SharedTile;
  p.a.mnMajor = p.a.kMajor && (mmaIs16Bit(p.arith) || p.registerA()), p.b.mnMajor = p.b.kMajor && mmaIs16Bit(p.arith);
  p.tiles = TileForm::Canonical;
  // Unpadded tiles: (rows x k) values of a stage each, in core matrices (the canonical layouts).
  p.a.pitch = p.a.kMajor ? p.blockM : p.blockK, p.b.pitch = p.b.kMajor ? p.blockN : p.blockK;
  p.pitch = p.a.pitch;
  const int64_t bytes = typeBytes(p.staged);
  auto strides = [&](bool mnMajor, int64_t rows, int64_t& lbo, int64_t& sbo) {
    lbo = mnMajor ? rows * 8 * bytes : 128;
    sbo = mnMajor ? 128 : p.blockK * 8 * bytes;
  };
  // tf32x3: its split tiles and a partial sum per step (more accurate than cublasSgemm, and the
  // fastest of the three forms measured: docs/bench.md); one small buffer, as each step waits
  // (below).
  const bool x3 = p.arith == MmaArith::Tf32x3;
  if (x3) p.splitBuffers = 1;
  // A in registers is read while its wgmma runs: registers may be reused only once it is waited
  // for (H200: with one set and wait_group 1 the loop's next A registers overwrote those of the
  // wgmma in flight, wrong results), hence two sets where they fit (InFlightPingPong).
  // tf32x3 does not overlap: ptxas serializes wgmma whose partial sums the other parity adds (two
  // register sets ran slower than one and wait_group 0: docs/bench.md).
  if (p.ring.stages >= 3 && !x3) p.overlap = p.registerA() ? MmaOverlap::InFlightPingPong : MmaOverlap::InFlight;
  const int64_t threads = ms.warpsM * ms.warpsN * 128;
  if (p.pingPong() && (wgmmaPlanRegisters(p) > 255 || threads * wgmmaPlanRegisters(p) > 65536))
    p.overlap = MmaOverlap::None;
  p.ring.release = p.wgmmaInFlight() ? StageRelease::AfterNextStep : StageRelease::AtStepEnd;
  p.ring.fenceAsyncProxy = true;
  strides(p.a.mnMajor, p.blockM, p.a.lbo, p.a.sbo);
  strides(p.b.mnMajor, p.blockN, p.b.lbo, p.b.sbo);
  if (ms.swizzle == 128) planSwizzle128(ms, p, reasons);
}

// `fragments 2` (MmaPlan::prefetchFragments): the step's fragments come from a stage that is
// resident one barrier before the step's last mma, so it needs the cp.async ring, and it is
// emitted for FP64's register layout (value-by-value loads; TF32's conversions and the 16-bit
// ldmatrix path keep one set).
void planFragments(const MmaSchedule& ms, MmaPlan& p, std::vector<std::string>& reasons) {
  if (ms.fragments < 2) return;
  p.overlap = MmaOverlap::PrefetchFragments;
  p.ring.release = StageRelease::BeforeRefill;  // every fragment of the step is in registers before the refill
  if (p.ring.stages < 2)
    reasons.push_back("mma: 'fragments 2' loads the next step's fragments from its stage before the step ends: "
                      "give 'stages 2' to 'stages 4'");
  if (p.isWgmma())
    reasons.push_back("mma: 'fragments 2' double-buffers mma.sync's fragment registers; wgmma reads shared memory");
  else if (p.arith != MmaArith::F64)
    reasons.push_back(fmt::format("mma: 'fragments 2' is emitted for 'f64' only, not '{}'", mmaArithName(p.arith)));
}

// `copies hoisted` (MmaPlan::hoistedCopies), or the reasons why it cannot: it prepares the copies
// of `fragments 2`'s ring of a block a tile, of tiles as loaded (FP64's sm_90 shapes), whose
// sources are each one array's affine offset from a row and k.
void planHoisted(const Kernel& k, const MmaSchedule& ms, MmaPlan& p, std::vector<std::string>& reasons) {
  if (!ms.hoistCopies) return;
  if (!p.prefetchFragments() || p.isWgmma()) {
    reasons.push_back("mma: 'copies hoisted' prepares the copies of 'fragments 2''s ring: give 'stages N fragments 2'");
    return;
  }
  if (ms.persistent) {
    reasons.push_back("mma: 'copies hoisted' prepares a block's copies for one output tile, and 'persistent' moves "
                      "them to the next tile as the ring runs on: give one of them");
    return;
  }
  if (p.tiles != TileForm::AsLoaded) {
    reasons.push_back(fmt::format("mma: 'copies hoisted' prepares copies of tiles as loaded (f64 m16n8k4 / k8 / k16 "
                                  "with stages), not of shape '{}'", mmaShapeName(ms)));
    return;
  }
  for (bool isA : {true, false}) {
    const Expr& op = isA ? p.c.a() : p.c.b();
    if (!plainRows(p.c, isA) || p.c.parts.size() != 1 || op->kind != ExprKind::Load ||
        !flatOffset(k, op->array, op->operands))
      reasons.push_back(fmt::format("mma: 'copies hoisted' needs each operand a load at an affine offset of one "
                                    "row index and k; '{}' is not", printExpr(op, &k)));
  }
  p.hoistedCopies = true;
}

}  // namespace

int64_t wgmmaRegisters(int64_t n) { return n / 2 + 40; }

int64_t wgmmaPlanRegisters(const MmaPlan& p) {
  const int64_t sets = p.pingPong() ? 2 : 1, x3 = p.splitBuffers ? 2 : 1;
  const int64_t partials = p.splitBuffers ? p.fragN / 2 * sets : 0;
  const int64_t a = p.registerA() ? 4 * (p.blockK / p.fragK) * x3 * sets : 0;
  return p.fragN / 2 + partials + a + 40;
}

namespace {

// The arithmetic against the contraction's type, the instruction shape against the arithmetic and
// the target (p.fragM, fragN, fragK, shape).
void planArithmetic(const Kernel& k, const NestSchedule& s, const ScheduleLimits& limits, MmaPlan& p,
                    std::vector<std::string>& reasons) {
  const ScalarType want = p.arith == MmaArith::F64 ? ScalarType::F64 : p.arith == MmaArith::S8 ? ScalarType::I32
                                                                                                : ScalarType::F32;
  if (p.c.type != want)
    reasons.push_back(fmt::format("mma: '{}' computes {} contractions; this one is {}", mmaArithName(p.arith),
                                  typeName(want), typeName(p.c.type)));
  else if (mmaPacked(p.arith) && p.c.narrowOperands != packedType(p.arith))
    reasons.push_back(fmt::format("mma: '{0}' multiplies {1} values: both operands must be {2}({1} load), "
                                  "here '{3}' and '{4}'", mmaArithName(p.arith), typeName(packedType(p.arith)),
                                  typeName(want), printExpr(p.c.a(), &k), printExpr(p.c.b(), &k)));
  // ldmatrix moves 16-bit elements: transposed (.trans) it would swap the bytes of 8-bit pairs, so
  // s8 tiles are (rows x k), copied along k: both operands contiguous along the reduction.
  else if (p.arith == MmaArith::S8 && (!p.c.aAlongK || !p.c.bAlongK))
    reasons.push_back(fmt::format("mma: 's8' loads its fragments with ldmatrix, which has no 8-bit transpose: '{}' "
                                  "must be contiguous along the reduction index '{}' (store it transposed)",
                                  printExpr(p.c.aAlongK ? p.c.b() : p.c.a(), &k), p.c.kLoop()->name));
  const MmaDims dims = mmaDims(s.mma);
  p.fragM = dims.m, p.fragN = dims.n, p.fragK = dims.k;
  p.shape = s.mma.shape;
  if (p.shape != MmaShape::Native && p.arith != MmaArith::F64)
    reasons.push_back(fmt::format("mma: shape '{}' is an f64 shape; '{}' takes '{}'", mmaShapeName(s.mma),
                                  mmaArithName(p.arith), mmaShapeName(p.arith)));
  // FP64's m16n8k* exist on sm_90 only (PTX ISA 7.8); a target known to be older refuses them.
  const int need = mmaMinComputeCapability(s.mma);
  if (limits.computeCapability > 0 && limits.computeCapability < need)
    reasons.push_back(fmt::format("mma: shape '{}' of '{}' needs sm_{} or later (mma.sync.m16n8k*.f64); the target "
                                  "is sm_{} (use 'm8n8k4')", mmaShapeName(s.mma), mmaArithName(p.arith), need,
                                  limits.computeCapability));
  // wgmma is sm_90a's alone (not in sm_80's nor in later architectures' PTX): a target known to be
  // another refuses it here, with the reason, before NVRTC meets the emitted code's #error.
  if (s.mma.wgmmaN > 0 && limits.computeCapability > 0 && limits.computeCapability != 90)
    reasons.push_back(fmt::format("mma: wgmma (wgmma.mma_async) exists on sm_90 only (compiled for sm_90a); the "
                                  "target is sm_{} (use mma.sync: 'mma: {} {} warps ...')", limits.computeCapability,
                                  mmaArithName(p.arith), mmaShapeName(p.arith)));
}

// The stages and the block tile, the staged type and the tiles' layouts and pitches.
void planTiles(const Kernel& k, const NestSchedule& s, MmaPlan& p, std::vector<std::string>& reasons) {
  const bool half = mmaPacked(p.arith);
  // The parser's range, for schedules built in code too: the rings' waits are emitted for 0 to 2
  // groups in flight (a cp.async ring of 5 stages met an internal error; deeper TMA rings ran no
  // faster on an H200: docs/bench.md, session 59).
  if (s.mma.stages < 1 || s.mma.stages > 4)
    reasons.push_back(fmt::format("mma: 'stages {}': the rings take 2 to 4 stages (or none)", s.mma.stages));
  p.ring.stages = s.mma.stages;
  p.ring.engine = p.ring.stages > 1 ? CopyEngine::CpAsync : CopyEngine::Registers;
  p.tilesPerOperand = p.arith == MmaArith::Tf32x3 && p.ring.stages == 1 ? 2 : 1;
  if (p.ring.stages > 1 && !half)
    for (const Expr* op : {&p.c.a(), &p.c.b()})
      if ((*op)->kind != ExprKind::Load || (*op)->type != p.c.type)
        reasons.push_back(fmt::format("mma: 'stages' copies the operands with cp.async, which does not convert: "
                                      "'{}' is not a load of {}", printExpr(*op, &k), typeName(p.c.type)));
  p.blockM = s.mma.warpsM * s.mma.tileM * p.fragM;
  p.blockN = s.mma.warpsN * s.mma.tileN * p.fragN;
  // `pingpong` on mma.sync's persistent ring: each warp row owns whole tiles (MmaPlan::rowGroups;
  // planPingpong refuses what it cannot run).
  if (s.mma.wgmmaN == 0 && s.mma.pingpong && s.mma.persistent && s.mma.warpsM >= 2)
    p.rowGroups = s.mma.warpsM, p.blockM = s.mma.tileM * p.fragM;
  p.blockK = s.mma.k;
  p.pitch = p.blockK + (12 - p.blockK % 8) % 8;  // pitch = 4 (mod 8): conflict-free fragment loads
  p.staged = p.c.type;
  p.a.pitch = p.b.pitch = p.pitch;
  if (half) {
    // Rows of an odd number of 16-byte pieces: ldmatrix's eight row addresses hit eight bank groups.
    const int64_t piece = 16 / typeBytes(packedType(p.arith));
    auto oddPieces = [&](int64_t len) { return len + ((len / piece) % 2 == 0 ? piece : 0); };
    p.staged = packedType(p.arith);
    p.a.kMajor = !p.c.aAlongK, p.b.kMajor = !p.c.bAlongK;
    p.a.pitch = oddPieces(p.a.kMajor ? p.blockM : p.blockK);
    p.b.pitch = oddPieces(p.b.kMajor ? p.blockN : p.blockK);
    p.pitch = p.a.pitch;
  }
  // TF32 and tf32x3 with stages: cp.async copies values as they are, so the tiles may follow each
  // operand's contiguous direction as the 16-bit ones do: 16-byte copies (four values) instead of
  // one per value, and an A or B fragment of a (rows x k) tile is four 8 x 4-word matrices, what
  // ldmatrix (b16) gives. A (k x rows) tile has pitch = 8 (mod 32) words: the fragment loads at
  // (k = t, row = g) then hit 32 different banks; a (rows x k) tile keeps pitch = 4 (mod 8), whose
  // 16-byte rows ldmatrix reads without conflicts. FP64 keeps its layout (m8n8k4 has no ldmatrix form).
  const bool tf32 = p.arith == MmaArith::Tf32 || p.arith == MmaArith::Tf32x3;
  // FP64's sm_90 shapes with stages likewise: 16-byte copies (two doubles) along each operand's
  // contiguous direction, fragments loaded value by value from either tile. A (k x rows) tile has
  // pitch = 4 (mod 16) doubles (8 (mod 32) words, as TF32's): a half-warp's 64-bit loads at (k = t,
  // row = g) fall on 16 different 8-byte bank pairs. m8n8k4 keeps its layout, as it was.
  const bool f64Loaded = p.arith == MmaArith::F64 && p.shape != MmaShape::Native && p.ring.stages > 1;
  p.tiles = half || (tf32 && p.ring.stages > 1) || f64Loaded ? TileForm::AsLoaded : TileForm::Padded;
  if ((tf32 && p.ring.stages > 1) || f64Loaded) {
    auto kMajorPitch = [&](int64_t rows) {
      return f64Loaded ? rows + (20 - rows % 16) % 16 : rows + (40 - rows % 32) % 32;
    };
    p.a.kMajor = !p.c.aAlongK, p.b.kMajor = !p.c.bAlongK;
    p.a.pitch = p.a.kMajor ? kMajorPitch(p.blockM) : p.pitch;
    p.b.pitch = p.b.kMajor ? kMajorPitch(p.blockN) : p.pitch;
  }
}

// `persistent`'s grid (MmaPlan::persistentBlocks), or the reasons why it does not apply: a loop
// over tiles on a ring that runs on across them, so wgmma with `tma producer`, or mma.sync with
// `fragments 2`'s ring (f64; its fragment epilogue in the loop: the shared one would reuse the
// ring's space). The blocks a multiprocessor
// holds: by threads (2048), blocks (32), registers (the launch's per thread: setmaxnreg's pool,
// or the plan's estimate in 8s) and shared memory (each block's and the 1 KiB the driver reserves
// per block, of the multiprocessor's: where unknown, the largest a block may have, which is less);
// times the multiprocessors, which must be known (a guess would leave blocks idle or in a second
// wave), at most the tiles. mma.sync's ring without blocks_per_sm: the most blocks whose register
// cap holds mmaRegisterFloor, stated in the kernel's __launch_bounds__ (MmaPlan::boundBlocks); the
// estimate (mmaRegisters) overcounts these rings by up to ~50 registers, and a grid sized by it
// left a multiprocessor a block or two short of what fits.
void planPersistent(const NestSchedule& s, const ScheduleLimits& limits, MmaPlan& p, std::vector<std::string>& reasons) {
  const bool syncRing = !p.isWgmma() && p.prefetchFragments() && p.ring.stages > 1;
  if (p.isWgmma() ? !p.ring.producer() : !syncRing) {
    reasons.push_back(p.isWgmma() ? "mma: 'persistent' loops over output tiles on a producer warpgroup's ring: it needs "
                                    "'wgmma ... swizzle 128 tma producer' before it"
                                  : "mma: 'persistent' loops over output tiles on a ring that runs on across them: on "
                                    "mma.sync it needs 'stages N' and 'fragments 2' (f64)");
    return;
  }
  if (syncRing && p.sharedEpilogue()) {
    reasons.push_back("mma: 'persistent' stores each tile while the ring copies the next tile's steps, and 'epilogue "
                      "shared' puts the accumulators in the ring's shared memory: give one of them");
    return;
  }
  if (limits.multiprocessors <= 0) {
    reasons.push_back("mma: 'persistent' launches the blocks the device's multiprocessors hold at once, and the "
                      "multiprocessor count is not known here (plan for a device; rtcgc emit and explain take --multiprocessors)");
    return;
  }
  const int64_t threads = std::max<int64_t>(1, p.threads);
  const int64_t launch = std::min<int64_t>(248, 65536 / (threads * std::max<int64_t>(1, s.blocksPerSM)) / 8 * 8);
  const int64_t planned = p.isWgmma() ? wgmmaPlanRegisters(p) : mmaRegisters(s.mma, p.c.type);
  const int64_t regs = p.consumerRegisters > 0 ? launch : std::min(launch, (planned + 7) / 8 * 8);
  const int64_t smShared = limits.sharedPerMultiprocessor > 0 ? limits.sharedPerMultiprocessor : limits.maxSharedBytes;
  int64_t perSm = std::min<int64_t>(32, 2048 / threads);
  perSm = std::min(perSm, smShared / (p.sharedBytes + 1024));
  if (syncRing && s.blocksPerSM == 0) {
    const int64_t floor = mmaRegisterFloor(s.mma);
    auto cap = [&](int64_t blocks) { return std::min<int64_t>(255, 65536 / (threads * blocks) / 8 * 8); };
    while (perSm > 1 && cap(perSm) < floor) --perSm;
    p.boundBlocks = std::max<int64_t>(1, perSm);
  } else {
    perSm = std::min(perSm, 65536 / (threads * std::max<int64_t>(8, regs)));
  }
  p.persistentBlocks = std::max<int64_t>(1, std::min(p.tileCount(), limits.multiprocessors * std::max<int64_t>(1, perSm)));
}

// `group`'s order (MmaPlan::groupM), or the reasons why it cannot: it reorders a linear tile index
// (a batched contraction's blocks, a persistent grid's tiles), which `resident` ties to the
// block's N tile.
void planGroup(const MmaSchedule& ms, MmaPlan& p, std::vector<std::string>& reasons) {
  if (p.c.batch.empty() && !ms.persistent)
    reasons.push_back("mma: 'group' orders a linear tile index (a batched contraction's blocks, a persistent grid's "
                      "tiles); this contraction's blocks take their M tile from blockIdx.y");
  else if (ms.resident != MmaOperand::None)
    reasons.push_back("mma: 'group' reorders the tiles, and 'resident' keeps each block's N tile: give one of them");
  p.groupM = ms.group;
}

// `resident`'s part (MmaPlan::residentB), or the reasons why it cannot: the kept operand's tiles
// stay for the block's output tiles, so those must share them (a persistent grid over an
// unbatched contraction), and the producer copies them (mma.sync: the block, before its ring;
// MmaPlan::keptWhole). planWgmma (mma.sync: planMma) put the operand on B.
void planResident(const MmaSchedule& ms, MmaPlan& p, std::vector<std::string>& reasons) {
  if (!ms.persistent || (p.isWgmma() && !p.ring.producer())) {
    reasons.push_back(fmt::format("mma: 'resident' keeps an operand's tiles for a persistent block's output tiles: it "
                                  "needs '{}' before it",
                                  p.isWgmma() ? "wgmma ... swizzle 128 tma producer persistent" : "persistent"));
    return;
  }
  if (!p.c.batch.empty()) {
    reasons.push_back("mma: 'resident' keeps one operand tile for all of a block's output tiles, and a batched "
                      "contraction's operands change with the batch");
    return;
  }
  p.residentB = true;
}

// `resident`'s grid: a multiple of the N tiles, so that each block's tiles share one (block b's
// all have N tile b % nTiles), at most the blocks that fit at once (planPersistent).
void residentGrid(MmaPlan& p, std::vector<std::string>& reasons) {
  const int64_t nTiles = p.nTiles();
  if (p.persistentBlocks < nTiles) {
    reasons.push_back(fmt::format("mma: 'resident' gives each block one of the kept operand's {} tiles of {} rows, "
                                  "and only {} blocks fit at once (give a wider {})",
                                  nTiles, p.blockN, p.persistentBlocks, p.isWgmma() ? "wgmma N" : "block tile along N"));
    return;
  }
  p.persistentBlocks = p.persistentBlocks / nTiles * nTiles;
}

// `pingpong`'s refusals (MmaPlan::alternatingTiles): it alternates a persistent block's tiles
// between two or more consumer warpgroups, so it needs `persistent` (planned: its reasons are
// persistent's own), the warpgroups, and at least a tile per consumer in every block. On
// mma.sync (MmaPlan::rowGroups, planTiles) 2 to 15 warp rows, one named barrier each; a row with
// no tile only meets itself.
void planPingpong(const NestSchedule& s, MmaPlan& p, std::vector<std::string>& reasons) {
  const int64_t consumers = s.mma.warpsM * s.mma.warpsN;
  if (!s.mma.persistent) {
    reasons.push_back(s.mma.wgmmaN > 0 ? "mma: 'pingpong' alternates a persistent block's tiles between its consumer "
                                         "warpgroups: it needs 'wgmma ... swizzle 128 tma producer persistent' before it"
                                       : "mma: 'pingpong' gives a persistent block's warp rows whole tiles of their own: "
                                         "it needs 'stages N persistent' and 'fragments 2' (f64)");
    return;
  }
  if (!p.persistent()) return;
  if (!p.isWgmma()) {
    // mma.sync: the warp rows own whole tiles (MmaPlan::rowGroups), each meeting at a named barrier
    // of its own (ids 1 to 15).
    if (s.mma.warpsM < 2 || s.mma.warpsM > 15)
      reasons.push_back(fmt::format("mma: 'pingpong' on mma.sync gives each warp row whole tiles of its own and a "
                                    "barrier of its own: it needs 2 to 15 warp rows ('warps 4x5'), not {}x{}",
                                    s.mma.warpsM, s.mma.warpsN));
    return;
  }
  if (consumers < 2) {
    reasons.push_back(fmt::format("mma: 'pingpong' gives each consumer warpgroup whole tiles in turn, so that one's "
                                  "epilogue runs beneath another's wgmma: it needs two or more warpgroups "
                                  "('warpgroups 2x1'), not {}x{}", s.mma.warpsM, s.mma.warpsN));
    return;
  }
  if (p.tileCount() < consumers * p.persistentBlocks)
    reasons.push_back(fmt::format("mma: 'pingpong' needs a tile per consumer warpgroup in every block: {} tiles of "
                                  "{}x{} over {} blocks leave some of the {} consumers none (give 'warpgroups 1x1' "
                                  "without 'pingpong', or a smaller tile)",
                                  p.tileCount(), p.blockM, p.blockN, p.persistentBlocks, consumers));
}

// Under `pingpong`, stacked statements whose rows hold an odd count of values (no column pairs;
// dg_diff at N = 8) store single values, each chunk's array picked once (MmaPlan::singleArrays)
// only with about 24 registers more than the estimate (NVRTC 13 spilled 88 bytes a thread at
// m64n128 tf32x3 within the launch's 168; docs/bench.md, session 49).
constexpr int64_t kSingleArrayRegisters = 24;
bool pingpongSingleStores(const MmaPlan& p) {
  return p.isWgmma() && p.alternatingTiles && p.aByThreads() && p.splitBuffers && stackedRows(p.c, false) &&
         p.c.nRows.size() == 2 && p.c.nRows.back().extent % 2 != 0;
}

// The consumers' registers per thread, with the producer's split by setmaxnreg planned for them
// (planProducerRegisters). Pingpong's single stores take their extra registers only where
// setmaxnreg gives the consumers them and the producer keeps two or more steps' loads in flight (measured
// slower with its loads 8 rows in flight: docs/bench.md, session 47); else the plan is made
// without them.
int64_t planLaunchRegisters(MmaPlan& p, int64_t blocksPerSM) {
  const int64_t regs = wgmmaPlanRegisters(p);
  if (!p.ring.producer()) return regs;
  if (pingpongSingleStores(p)) {
    planProducerRegisters(p, regs + kSingleArrayRegisters, blocksPerSM);
    if (p.consumerRegisters >= regs + kSingleArrayRegisters && p.aLoadsAhead >= 2) {
      p.singleArrays = true;
      return regs + kSingleArrayRegisters;
    }
  }
  planProducerRegisters(p, regs, blocksPerSM);
  return regs;
}

// The block's threads, registers, shared memory and grid against the limits.
void checkLaunch(const NestSchedule& s, const ScheduleLimits& limits, MmaPlan& p, std::vector<std::string>& reasons) {
  p.mmaPerStep = s.mma.tileM * s.mma.tileN * (p.blockK / p.fragK) * (p.arith == MmaArith::Tf32x3 ? 3 : 1);
  const int64_t threads = p.threads = s.mma.warpsM * s.mma.warpsN * (p.isWgmma() ? 128 : 32) + (p.ring.producer() ? 128 : 0);
  if (s.blocksPerSM > 0 && threads * s.blocksPerSM > 2048)
    reasons.push_back(fmt::format("mma: blocks_per_sm {} with {} threads per block exceeds 2048 threads per multiprocessor",
                                  s.blocksPerSM, threads));
  if (threads > limits.maxThreadsPerBlock || threads > limits.maxBlockDim[0])
    reasons.push_back(fmt::format("mma: {} {} are {} threads, more than a block holds ({})",
                                  s.mma.warpsM * s.mma.warpsN, p.isWgmma() ? "warpgroups" : "warps", threads,
                                  limits.maxThreadsPerBlock));
  // wgmma: every thread holds N / 2 f32 accumulators besides ~40 registers of addresses, loop
  // counters and descriptors; the block must fit a multiprocessor's 65536 registers.
  // tf32x3 holds its partial sums too, and A's registers (registerA) their big and small parts.
  const int64_t accumulators = s.mma.wgmmaN / 2 * (p.splitBuffers ? 2 : 1);
  const int64_t regs = planLaunchRegisters(p, s.blocksPerSM);
  // Stacked statements (dg_diff's three) need no registers beyond the estimate since their
  // epilogue takes each chunk's statement once: where the estimate fills the launch's exactly
  // (m64n128 tf32x3, m64n256 tf32 by two consumers), NVRTC 13 compiles dg_diff's forms at Np 56 to
  // 165 in 152-162 of 168 without spills. Counting 8 more for them moved registers to the consumers
  // by setmaxnreg and left the producer's plain loads 8 rows in flight instead of 16: dg_diff N8's
  // pingpong form ran 0.493 ms with it, 0.357 without (docs/bench.md, session 47).
  // With setmaxnreg (producer) the consumers' share counts; else the whole block's.
  if (p.consumerRegisters > 0 && regs > p.consumerRegisters)
    reasons.push_back(fmt::format("mma: {} warpgroups of m64n{} need about {} registers per thread ({} accumulators); "
                                  "with the producer's {} setmaxnreg leaves them {} of the block's",
                                  s.mma.warpsM * s.mma.warpsN, s.mma.wgmmaN, regs, accumulators, p.producerRegisters,
                                  p.consumerRegisters));
  else if (p.isWgmma() && p.consumerRegisters == 0 && threads * regs > 65536)
    reasons.push_back(fmt::format("mma: {} warpgroups of m64n{} need about {} registers per thread ({} accumulators), "
                                  "{} per block: more than a multiprocessor's 65536",
                                  s.mma.warpsM * s.mma.warpsN, s.mma.wgmmaN, regs, accumulators, threads * regs));
  else if (p.isWgmma() && regs > 255)
    reasons.push_back(fmt::format("mma: m64n{} needs about {} registers per thread ({} accumulators{}), more than 255",
                                  s.mma.wgmmaN, regs, accumulators, p.splitBuffers ? " with tf32x3's partial sums" : ""));
  // Past 48 KiB the tiles go to dynamic shared memory, up to what the limits (the device) allow.
  const int64_t maxShared = limits.maxSharedBytes;
  if (p.sharedBytes > maxShared)
    reasons.push_back(fmt::format("mma: the staged tiles{} take {} bytes of shared memory, more than {}",
                                  p.sharedEpilogue() ? " (or the epilogue's)" : "", p.sharedBytes, maxShared));
  if (s.mma.persistent) planPersistent(s, limits, p, reasons);
  if (p.residentB && p.persistent()) residentGrid(p, reasons);
  if (s.mma.pingpong) planPingpong(s, p, reasons);
  const int64_t grid[3] = {p.gridX(), p.gridY(), 1};
  for (int a = 0; a < 3; ++a)
    if (grid[a] > limits.maxGridDim[a])
      reasons.push_back(fmt::format("mma: {} blocks along grid.{}, more than {}", grid[a], "xyz"[a],
                                    limits.maxGridDim[a]));
}

// mma.sync's kept B (MmaPlan::keptWhole): one tile of the whole reduction, steps * blockK values
// along k; (N x K) with a pitch of K = 4 (mod 8) doubles past it, or (K x N) with the ring's pitch.
void keepWhole(MmaPlan& p) {
  const int64_t k = p.steps * p.blockK;
  if (!p.b.kMajor) p.b.pitch = k + (12 - k % 8) % 8;
  p.b.buffer = (p.b.kMajor ? k : p.blockN) * p.b.pitch;
}

}  // namespace

std::optional<MmaPlan> planMma(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits,
                               std::vector<std::string>& reasons) {
  const size_t before = reasons.size();
  checkAlone(s, reasons);
  ContractionMatch m = matchContraction(k, nest);
  for (std::string& r : m.reasons) reasons.push_back(std::move(r));
  if (!m.contraction) return std::nullopt;
  MmaPlan p;
  p.arith = s.mma.arith;
  p.c = std::move(*m.contraction);
  planArithmetic(k, s, limits, p, reasons);
  // mma.sync's `resident a`: the kept operand to B, as planWgmma does for wgmma (MmaPlan::keptWhole).
  if (s.mma.wgmmaN == 0 && s.mma.resident == MmaOperand::A) {
    transpose(p.c);
    p.transposed = true;
  }
  planTiles(k, s, p, reasons);
  if (s.mma.wgmmaN > 0) planWgmma(s.mma, p, reasons);
  if (s.mma.tma && p.tiles == TileForm::Swizzle128) planTma(k, s.mma.resident != MmaOperand::None, s.mma.producer, p, reasons);
  if (s.mma.producer && p.ring.tma()) planProducer(s.mma, p, reasons);
  planFragments(s.mma, p, reasons);
  planHoisted(k, s.mma, p, reasons);
  p.steps = ceilDiv(p.c.kExtent, p.blockK);
  if (s.mma.resident != MmaOperand::None) planResident(s.mma, p, reasons);
  if (s.mma.group > 0) planGroup(s.mma, p, reasons);
  p.a.buffer = (p.a.kMajor ? p.blockK : p.blockM) * p.a.pitch;
  p.b.buffer = (p.b.kMajor ? p.blockK : p.blockN) * p.b.pitch;
  if (p.keptWhole()) keepWhole(p);
  p.tileBytes = (p.a.buffer * p.aBuffers() + p.b.buffer * p.bBuffers()) * typeBytes(p.staged) * p.tilesPerOperand;
  // tf32x3 on wgmma: the small tiles after the rings (MmaPlan::splitBuffers).
  p.smallOffset = p.a.buffer * p.aBuffers() + p.b.buffer * p.bBuffers();
  p.tileBytes += (p.splitBuffers * (p.registerA() ? 0 : p.a.buffer) + p.bSmallBuffers() * p.b.buffer) * typeBytes(p.staged);
  planEpilogue(k, nest, s, p);
  planEpiloguePrefetch(k, nest, p);
  // TMA's mbarriers, one of 8 bytes a stage, after the tiles and the epilogue (which reuses them).
  // `producer`: the stages' full, empty and (tf32x3) ready mbarriers; the consumers' turns;
  // `resident`: B's full and (tf32x3) ready.
  if (p.ring.tma()) {
    p.barrierOffset = (p.sharedBytes + 7) / 8 * 8;
    p.sharedBytes = p.barrierOffset + 8 * p.ring.stages * (p.ring.producer() ? (p.splitBuffers ? 3 : 2) : 1) +
                    (p.orderedIssue || p.alternatingTiles ? 8 * s.mma.warpsM * s.mma.warpsN : 0) +
                    (p.residentB ? 16 : 0);
  }
  // `fragments 2` over fewer steps than stages copies nothing ahead that it would not copy without
  // it, and on an H200 such schedules of the f64 DG differentiation (3 steps of 4 stages, 2 of 4)
  // computed wrong sums (0.7-7%) where every ring and emulation said right: refused.
  if (p.prefetchFragments() && p.ring.stages > 1 && p.steps < p.ring.stages)
    reasons.push_back(fmt::format("mma: 'fragments 2' needs at least as many reduction steps as stages: {} step{} of {} "
                                  "over {} values, {} stages (give fewer stages or a smaller k)",
                                  p.steps, p.steps == 1 ? "" : "s", p.blockK, p.c.kExtent, p.ring.stages));
  checkLaunch(s, limits, p, reasons);
  if (reasons.size() != before) return std::nullopt;
  p.lastStepFragments = p.blockK / p.fragK;
  if (p.isWgmma() && p.persistent() && !p.pingPong())
    p.lastStepFragments = ceilDiv(p.c.kExtent - (p.steps - 1) * p.blockK, p.fragK);
  return p;
}

std::vector<MmaArith> mmaAriths(Precision precision, ScalarType t) {
  if (t == ScalarType::F64) return {MmaArith::F64};
  if (t != ScalarType::F32) return {};
  switch (precision) {
    case Precision::Ieee:
    case Precision::Fp64x:  // the contractions they rewrite are gone; the others follow ieee
    case Precision::Fp32x: return {};
    case Precision::Tf32x3: return {MmaArith::Tf32x3};
    case Precision::Tf32: return {MmaArith::Tf32, MmaArith::Tf32x3};
  }
  return {};
}

std::vector<MmaArith> mmaAriths(Precision precision, const Contraction& c) {
  std::vector<MmaArith> out;
  if (c.narrowOperands == ScalarType::BF16) out.push_back(MmaArith::Bf16);
  if (c.narrowOperands == ScalarType::F16) out.push_back(MmaArith::F16);
  if (c.narrowOperands == ScalarType::I8 && c.aAlongK && c.bAlongK) out.push_back(MmaArith::S8);
  for (MmaArith a : mmaAriths(precision, c.type)) out.push_back(a);
  return out;
}

std::string precisionObstacle(const Kernel& k, Precision precision) {
  if (precision == Precision::Ieee) return "";
  if (precisionRewrites(precision)) {
    Diagnostics diags;
    return applyPolicy(k, precision, diags) || diags.all().empty() ? "" : diags.all()[0].message;
  }
  bool f32 = false, f64 = false;
  auto note = [&](ScalarType t) { f32 |= t == ScalarType::F32, f64 |= t == ScalarType::F64; };
  for (const Param& p : k.params) note(p.type);
  for (const LoopNest& n : k.nests)
    for (const Stmt& s : n.body) visitExprs(s.value, [&](const Expr& e) { note(e->type); });
  if (f64 && !f32)
    return fmt::format("precision '{}' rounds f32 operands to TF32, but kernel '{}' computes in f64 only "
                       "(f64 contractions use FP64 tensor cores under 'ieee')",
                       precisionName(precision), k.name);
  return "";
}

std::vector<std::string> precisionReasons(const Schedule& s, Precision precision) {
  std::vector<std::string> out;
  for (size_t n = 0; n < s.nests.size(); ++n)
    if (!precisionAllows(precision, s.nests[n].mma.arith))
      out.push_back(fmt::format("{}'mma: {}' rounds f32 operands to TF32, which precision '{}' does not allow "
                                "(use --precision {})",
                                s.nests.size() > 1 ? fmt::format("nest {}: ", n) : "", mmaArithName(s.nests[n].mma.arith),
                                precisionName(precision), mmaArithName(s.nests[n].mma.arith)));
  return out;
}

}  // namespace rtcg
