#include "reference/RandomFill.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <optional>
#include <set>
#include <thread>
#include <unordered_set>
#include <vector>

#include <fmt/format.h>

#include "ir/Analysis.h"
#include "ir/DataRanges.h"
#include "ir/Scan.h"
#include "ir/IntOps.h"
#include "ir/Walk.h"
#include "rtcg/Half.h"
#include "support/Error.h"

namespace rtcg {
namespace {

uint64_t mixSeed(uint64_t seed, uint64_t salt) { return SplitMix{seed * 0x9e3779b97f4a7c15ull + salt}.next(); }

}  // namespace

void fillRandom(HostArray& a, uint64_t seed) {
  SplitMix rng{seed};
  const int64_t n = a.size();
  switch (a.type()) {
    case ScalarType::F32: {
      float* p = a.as<float>();
      for (int64_t i = 0; i < n; ++i) p[i] = float(int64_t(rng.next() >> 40) - (int64_t(1) << 23)) * 0x1p-23f;
      break;
    }
    case ScalarType::F64: {
      double* p = a.as<double>();
      for (int64_t i = 0; i < n; ++i) p[i] = double(int64_t(rng.next() >> 11) - (int64_t(1) << 52)) * 0x1p-52;
      break;
    }
    // The 16-bit types: multiples of their last place at 1 in [-1, 1), so every value is exact.
    case ScalarType::F16: {
      f16* p = a.as<f16>();
      for (int64_t i = 0; i < n; ++i) p[i] = f16(double(int64_t(rng.next() >> 53) - 1024) * 0x1p-10);
      break;
    }
    case ScalarType::BF16: {
      bf16* p = a.as<bf16>();
      for (int64_t i = 0; i < n; ++i) p[i] = bf16(double(int64_t(rng.next() >> 56) - 128) * 0x1p-7);
      break;
    }
    // The 8-bit integers: their whole range (signs and the top bit exercised).
    case ScalarType::I8: fillRandomInts(a, seed, -128, 128); break;
    case ScalarType::U8: fillRandomInts(a, seed, 0, 256); break;
    // u32: the whole range, so that sums wrap and comparisons above 2^31 differ from signed ones.
    case ScalarType::U32: fillRandomInts(a, seed, 0, int64_t(1) << 32); break;
    default: fillRandomInts(a, seed, -8, 8); break;
  }
}

void fillRandomInts(HostArray& a, uint64_t seed, int64_t lo, int64_t hi) {
  if (hi <= lo) throw Error(fmt::format("empty value range [{}, {}) for random integers", lo, hi));
  SplitMix rng{seed};
  const uint64_t span = uint64_t(hi) - uint64_t(lo);
  for (int64_t i = 0; i < a.size(); ++i) a.setInt(i, int64_t(uint64_t(lo) + rng.next() % span));
}

void fillDistinctInts(HostArray& a, uint64_t seed, int64_t lo, int64_t hi) {
  const int64_t n = a.size();
  if (hi <= lo || uint64_t(hi) - uint64_t(lo) < uint64_t(n))
    throw Error(fmt::format("{} distinct integers do not fit in [{}, {})", n, lo, hi));
  SplitMix rng{seed};
  const uint64_t span = uint64_t(hi) - uint64_t(lo);
  if (span <= uint64_t(std::max<int64_t>(4 * n, 1 << 16))) {
    // A partial Fisher-Yates shuffle of the whole range.
    std::vector<int64_t> values(span);
    for (uint64_t v = 0; v < span; ++v) values[v] = int64_t(uint64_t(lo) + v);
    for (int64_t i = 0; i < n; ++i) {
      std::swap(values[size_t(i)], values[size_t(i) + rng.next() % (span - uint64_t(i))]);
      a.setInt(i, values[size_t(i)]);
    }
    return;
  }
  // A range much wider than the array: draw again on a repeat.
  std::unordered_set<int64_t> seen;
  for (int64_t i = 0; i < n; ++i) {
    int64_t v;
    do v = int64_t(uint64_t(lo) + rng.next() % span);
    while (!seen.insert(v).second);
    a.setInt(i, v);
  }
}

void poison(HostArray& a) {
  if (isFloat(a.type())) a.fill(std::numeric_limits<double>::quiet_NaN());
  else for (int64_t i = 0; i < a.size(); ++i) a.setInt(i, kPoisonInt);
}

namespace {

struct Range {  // inclusive
  int64_t lo, hi;
};

class IndexRangeFinder {
 public:
  explicit IndexRangeFinder(const Kernel& k) : k_(k) {}

  std::map<int, ValueRange> run() {
    for (const LoopNest& nest : k_.nests) {
      scope_.clear();
      for (const Loop& l : nest.loops) {
        walk(l.lo);
        walk(l.hi);
        enter(l);
      }
      for (const Stmt& s : nest.body) {
        walk(s.value);
        if (s.kind == StmtKind::Store) access(s.array, s.indices, s.loc);
      }
    }
    return ranges_;
  }

 private:
  void enter(const Loop& l) {
    auto lo = rangeOf(l.lo), hi = rangeOf(l.hi);
    if (lo && hi) scope_[l.id] = Range{lo->lo, hi->hi - 1};
    else scope_.erase(l.id);
  }

  void walk(const Expr& e) {
    if (e->kind == ExprKind::Load) {
      access(e->array, e->operands, e->loc);
      return;
    }
    if (e->kind == ExprKind::Reduce) {
      auto saved = scope_;
      for (const Loop& l : e->loops) {
        walk(l.lo);
        walk(l.hi);
        enter(l);
      }
      walk(e->operands[0]);
      scope_ = saved;
      return;
    }
    for (const Expr& o : e->operands) walk(o);
  }

  void access(int array, const std::vector<Expr>& indices, SourceLoc loc) {
    std::vector<int64_t> shape = hostArrayShape(k_, array);
    for (size_t d = 0; d < indices.size() && d < shape.size(); ++d) {
      const Expr& idx = indices[d];
      walk(idx);  // index arrays inside index arrays
      std::vector<std::pair<int64_t, Expr>> loads;
      Range rest{0, 0};
      if (!decompose(idx, 1, loads, rest) || loads.size() != 1) continue;
      auto [coeff, load] = loads[0];
      if (coeff == 0) continue;
      // coeff * v + rest must lie in [0, extent - 1] for every value rest takes.
      int64_t lo = -rest.lo, hi = shape[d] - 1 - rest.hi;  // bounds on coeff * v (inclusive)
      if (coeff < 0) {
        std::swap(lo, hi);
        lo = -lo;
        hi = -hi;
        coeff = -coeff;
      }
      ValueRange vr{-floorDiv(-lo, coeff), floorDiv(hi, coeff) + 1};  // ceil(lo/c) .. floor(hi/c)
      constrain(load->array, vr, loc);
    }
  }

  void constrain(int array, ValueRange vr, SourceLoc loc) {
    auto [it, fresh] = ranges_.try_emplace(array, vr);
    if (!fresh) it->second = ValueRange{std::max(it->second.lo, vr.lo), std::min(it->second.hi, vr.hi)};
    if (it->second.hi <= it->second.lo)
      throw Error(fmt::format("kernel '{}', line {}: no value of index array '{}' keeps all its uses in bounds",
                              k_.name, loc.line, k_.params[array].name));
  }

  // Splits scale * e into loads of integer arrays (with coefficients) plus a bounded rest.
  bool decompose(const Expr& e, int64_t scale, std::vector<std::pair<int64_t, Expr>>& loads, Range& rest) {
    switch (e->kind) {
      case ExprKind::Load:
        if (!isIntegral(e->type)) return false;  // a u32 array's values as converted (i32(bin[i]))
        loads.push_back({scale, e});
        return true;
      case ExprKind::Binary:
        if (!isInteger(e->type)) return false;
        if (e->binaryOp == BinaryOp::Add)
          return decompose(e->operands[0], scale, loads, rest) && decompose(e->operands[1], scale, loads, rest);
        if (e->binaryOp == BinaryOp::Sub)
          return decompose(e->operands[0], scale, loads, rest) && decompose(e->operands[1], -scale, loads, rest);
        if (e->binaryOp == BinaryOp::Mul) {
          auto a = rangeOf(e->operands[0]), b = rangeOf(e->operands[1]);
          if (a && a->lo == a->hi) return decompose(e->operands[1], scale * a->lo, loads, rest);
          if (b && b->lo == b->hi) return decompose(e->operands[0], scale * b->lo, loads, rest);
        }
        break;
      case ExprKind::Unary:
        if (e->unaryOp == UnaryOp::Neg) return decompose(e->operands[0], -scale, loads, rest);
        break;
      case ExprKind::Cast:
        // Widening, or i32 / i64 of a u32 load, whose values the fill keeps below 2^31.
        if (isInteger(e->type) && (isInteger(e->operands[0]->type) ||
                                   (isUnsigned(e->operands[0]->type) && e->operands[0]->kind == ExprKind::Load)))
          return decompose(e->operands[0], scale, loads, rest);
        break;
      default: break;
    }
    auto r = rangeOf(e);
    if (!r) return false;
    Range s = scale >= 0 ? Range{r->lo * scale, r->hi * scale} : Range{r->hi * scale, r->lo * scale};
    rest.lo += s.lo;
    rest.hi += s.hi;
    return true;
  }

  // Interval of an integer expression over the current loop scope (nullopt: unbounded).
  std::optional<Range> rangeOf(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm: return Range{e->intValue, e->intValue};
      case ExprKind::Var:
        if (e->varKind == VarKind::Size) {
          auto it = k_.sizes.find(k_.params.at(e->varId).name);
          if (it != k_.sizes.end()) return Range{it->second, it->second};
        } else if (e->varKind == VarKind::Index) {
          auto it = scope_.find(e->varId);
          if (it != scope_.end()) return it->second;
        }
        return std::nullopt;
      case ExprKind::Unary:
        if (e->unaryOp == UnaryOp::Neg) {
          auto a = rangeOf(e->operands[0]);
          if (a) return Range{-a->hi, -a->lo};
        }
        return std::nullopt;
      case ExprKind::Cast:
        if (isInteger(e->type) && isInteger(e->operands[0]->type)) return rangeOf(e->operands[0]);
        return std::nullopt;
      case ExprKind::Binary: {
        if (!isInteger(e->type)) return std::nullopt;
        auto a = rangeOf(e->operands[0]), b = rangeOf(e->operands[1]);
        if (!a || !b) return std::nullopt;
        switch (e->binaryOp) {
          case BinaryOp::Add: return Range{a->lo + b->lo, a->hi + b->hi};
          case BinaryOp::Sub: return Range{a->lo - b->hi, a->hi - b->lo};
          case BinaryOp::Mul: {
            int64_t c[4] = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
            return Range{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
          }
          case BinaryOp::Div:
            if (b->lo == b->hi && b->lo > 0) return Range{floorDiv(a->lo, b->lo), floorDiv(a->hi, b->lo)};
            return std::nullopt;
          case BinaryOp::Mod:
            if (b->lo == b->hi && b->lo > 0) return Range{0, b->lo - 1};
            return std::nullopt;
          default: return std::nullopt;
        }
      }
      default: return std::nullopt;
    }
  }

  const Kernel& k_;
  std::map<int, Range> scope_;
  std::map<int, ValueRange> ranges_;
};

}  // namespace

std::map<int, ValueRange> indirectIndexRanges(const Kernel& bound) { return IndexRangeFinder(bound).run(); }

static std::set<int> storeIndexArrays(const Kernel& bound) {
  std::set<int> out;
  for (size_t n = 0; n < bound.nests.size(); ++n)
    for (const Access& a : collectAccesses(bound, int(n))) {
      // An accumulation's indices may repeat (that is what a histogram is): uniform random values.
      if (!a.isWrite || !a.indirect || a.accumulate) continue;
      for (const Expr& i : a.indices)
        visitExprs(i, [&](const Expr& e) {
          if (e->kind == ExprKind::Load) out.insert(e->array);
        });
    }
  return out;
}

std::map<int, int64_t> rangeArrayExtents(const Kernel& bound) {
  std::map<int, int64_t> out;
  for (int n = 0; n < int(bound.nests.size()); ++n)
    for (const DataRange& r : dataRanges(bound, n)) {
      if (!r.extent) continue;  // the bounds proof rejects it
      for (const Expr& b : {r.loop->lo, r.loop->hi}) {
        if (!isRangeRead(b)) continue;
        auto [it, fresh] = out.emplace(b->array, *r.extent);
        if (!fresh) it->second = std::min(it->second, *r.extent);
      }
    }
  return out;
}

void fillOffsets(HostArray& a, uint64_t seed, int64_t extent) {
  fillRandomInts(a, seed, 0, extent + 1);
  std::vector<int64_t> v(size_t(a.size()));
  for (int64_t i = 0; i < a.size(); ++i) v[size_t(i)] = a.getInt(i);
  std::sort(v.begin(), v.end());
  if (!v.empty()) v.front() = 0;
  if (v.size() > 1) v.back() = extent;
  for (int64_t i = 0; i < a.size(); ++i) a.setInt(i, v[size_t(i)]);
}

void fillSegmentHeads(HostArray& a, uint64_t seed, int64_t length, int64_t inner, int64_t meanSegment) {
  SplitMix rng{seed};
  const int64_t lines = length > 0 ? a.size() / length : 0;
  for (int64_t line = 0; line < lines; ++line) {
    const int64_t base = line / inner * length * inner + line % inner;
    int64_t start = 0;
    for (int64_t p = 0; p < length; ++p) {
      if (p == 0 || rng.next() % uint64_t(std::max<int64_t>(1, meanSegment)) == 0) start = p;
      a.setInt(base + p * inner, start);
    }
  }
}

void fillInputs(const Kernel& bound, HostArgs& args, uint64_t seed) {
  std::map<int, ScanForm> heads;  // segmented scans' head arrays (ir/Scan.h)
  for (size_t n = 0; n < bound.nests.size(); ++n)
    if (auto f = recogniseScan(bound, int(n)); f && f->head >= 0) heads.emplace(f->head, *f);
  std::map<int, ValueRange> ranges = indirectIndexRanges(bound);
  std::map<int, int64_t> offsets = rangeArrayExtents(bound);
  const std::set<int> distinct = storeIndexArrays(bound);
  auto fill = [&](size_t p) {
    const Param& param = bound.params[p];
    HostArray& a = args.array(int(p));
    uint64_t s = mixSeed(seed, p);
    if (param.mode == ArrayMode::Out) poison(a);
    else if (auto h = heads.find(int(p)); h != heads.end()) fillSegmentHeads(a, s, h->second.length, h->second.inner);
    else if (auto it = offsets.find(int(p)); it != offsets.end()) fillOffsets(a, s, it->second);
    else if (auto it = ranges.find(int(p)); it != ranges.end() && isIntegral(a.type())) {
      // The indices of a scatter distinct where they can be, so that its points write distinct
      // elements (where they cannot, the reference executor reports the two points that collide).
      // A u32 array holds no negative values.
      ValueRange r = it->second;
      if (isUnsigned(a.type())) r.lo = std::max<int64_t>(r.lo, 0);
      if (distinct.count(int(p)) && uint64_t(r.hi) - uint64_t(r.lo) >= uint64_t(a.size()))
        fillDistinctInts(a, s, r.lo, r.hi);
      else
        fillRandomInts(a, s, r.lo, r.hi);
    }
    else fillRandom(a, s);
  };
  // Each array draws from its own seed, so large ones fill side by side (a tuner's worker fills
  // them while its CUDA context is made, and the tuner before its reference): the values are the
  // same in any order. An error of one (fillDistinctInts) is rethrown once all are done.
  constexpr int64_t kOwnThread = int64_t(1) << 20;  // elements
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(bound.numSignatureParams());
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {  // the locals are no arguments
    if (!bound.params[p].isArray()) continue;
    auto run = [&, p] {
      try {
        fill(p);
      } catch (...) {
        errors[p] = std::current_exception();
      }
    };
    if (args.array(int(p)).size() >= kOwnThread) threads.emplace_back(run);
    else run();
  }
  for (std::thread& t : threads) t.join();
  for (std::exception_ptr& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace rtcg
