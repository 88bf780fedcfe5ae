// The domain of a nest (schedule/Domain.h): its indices and their hulls, trip counts and the
// extents of a clause's parts. Reductions computed ahead of the statements: schedule/Reduction.cpp;
// shared-memory staging: schedule/Staging.cpp.
#include "schedule/Domain.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <set>
#include <fmt/format.h>

#include "ir/Analysis.h"
#include "ir/DataRanges.h"
#include "ir/Printer.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg {

std::optional<int64_t> constIntValue(const Expr& e, const Kernel& k) {
  auto r = rangeOfInt(e, k, {});
  if (r && r->lo == r->hi) return r->lo;
  return std::nullopt;
}

static IndexRange hullOf(IndexRange a, IndexRange b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return {std::min(a.lo, b.lo), std::max(a.hi, b.hi)};
}

std::optional<IndexRange> rangeOfInt(const Expr& e, const Kernel& k,
                                     const std::map<int, IndexRange>& vars) {
  auto sub = [&](int i) { return rangeOfInt(e->operands[i], k, vars); };
  switch (e->kind) {
    case ExprKind::IntImm: return IndexRange{e->intValue, e->intValue};
    case ExprKind::Var:
      if (e->varKind == VarKind::Index) {
        auto it = vars.find(e->varId);
        if (it == vars.end()) return std::nullopt;
        return it->second;
      }
      if (e->varKind == VarKind::Size) {
        if (e->varId < 0 || e->varId >= (int)k.params.size()) return std::nullopt;
        auto it = k.sizes.find(k.params[e->varId].name);
        if (it == k.sizes.end()) return std::nullopt;
        return IndexRange{it->second, it->second};
      }
      return std::nullopt;
    case ExprKind::Cast:
      if (!isInteger(e->type)) return std::nullopt;
      return sub(0);
    case ExprKind::Unary: {
      if (e->unaryOp != UnaryOp::Neg) return std::nullopt;
      auto a = sub(0);
      if (!a || a->empty()) return a;
      return IndexRange{-a->hi, -a->lo};
    }
    case ExprKind::Binary: {
      auto a = sub(0), b = sub(1);
      if (!a || !b) return std::nullopt;
      if (a->empty() || b->empty()) return IndexRange{};
      switch (e->binaryOp) {
        case BinaryOp::Add: return IndexRange{a->lo + b->lo, a->hi + b->hi};
        case BinaryOp::Sub: return IndexRange{a->lo - b->hi, a->hi - b->lo};
        case BinaryOp::Mul: {
          int64_t c[4] = {a->lo * b->lo, a->lo * b->hi, a->hi * b->lo, a->hi * b->hi};
          return IndexRange{*std::min_element(c, c + 4), *std::max_element(c, c + 4)};
        }
        case BinaryOp::Div:
          if (b->lo != b->hi || b->lo <= 0) return std::nullopt;
          return IndexRange{floorDiv(a->lo, b->lo), floorDiv(a->hi, b->lo)};
        case BinaryOp::Mod:
          if (b->lo != b->hi || b->lo <= 0) return std::nullopt;
          if (floorDiv(a->lo, b->lo) == floorDiv(a->hi, b->lo))
            return IndexRange{floorMod(a->lo, b->lo), floorMod(a->hi, b->lo)};
          return IndexRange{0, b->lo - 1};
        default: return std::nullopt;
      }
    }
    case ExprKind::Call: {
      if (e->mathFn != MathFn::Min && e->mathFn != MathFn::Max) return std::nullopt;
      auto a = sub(0), b = sub(1);
      if (!a || !b || a->empty() || b->empty()) return std::nullopt;
      if (e->mathFn == MathFn::Min) return IndexRange{std::min(a->lo, b->lo), std::min(a->hi, b->hi)};
      return IndexRange{std::max(a->lo, b->lo), std::max(a->hi, b->hi)};
    }
    case ExprKind::Select: {
      auto a = sub(1), b = sub(2);
      if (!a || !b) return std::nullopt;
      return hullOf(*a, *b);
    }
    case ExprKind::FloatImm:
    case ExprKind::Load:
    case ExprKind::Reduce: return std::nullopt;
  }
  return std::nullopt;
}

void collectReductions(const Expr& e, std::vector<Expr>& out) {
  if (!e) return;
  visitExprs(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Reduce) out.push_back(x);
  });
}

namespace {
struct IndexCollector {
  const Kernel& k;
  std::vector<NestIndex> out;
  std::string error;

  // Records loop `l` (its values given `vars`) and makes it visible to inner bounds.
  // `reduce`: the reduction of a reduction loop, whose data-dependent ranges take their values
  // in [0, extent] (ir/DataRanges.h: the run checks that).
  bool add(const Loop& l, bool parallel, std::map<int, IndexRange>& vars, const Expr& reduce = nullptr) {
    std::optional<int64_t> dataExtent;
    if (reduce && isDataDependent(l)) dataExtent = dataRangeOf(k, reduce, l).extent;
    auto boundRange = [&](const Expr& b) -> std::optional<IndexRange> {
      if (!isRangeRead(b)) return rangeOfInt(b, k, vars);
      if (!dataExtent) return std::nullopt;
      return IndexRange{0, *dataExtent};
    };
    auto lo = boundRange(l.lo), hi = boundRange(l.hi);
    if (!lo || !hi) {
      error = fmt::format("the bounds of index '{}' cannot be bounded", l.name);
      return false;
    }
    IndexRange values = lo->empty() || hi->empty() ? IndexRange{} : IndexRange{lo->lo, hi->hi - 1};
    bool constant = lo->lo == lo->hi && hi->lo == hi->hi;
    vars[l.id] = values;
    for (NestIndex& ni : out)
      if (ni.name == l.name && ni.parallel == parallel && !parallel) {
        ni.loops.push_back(&l);
        ni.hull = hullOf(ni.hull, values);
        ni.constantBounds = ni.constantBounds && constant;
        ni.dataDependent = ni.dataDependent || dataExtent.has_value();
        return true;
      }
    out.push_back({l.name, parallel, {&l}, values, constant, dataExtent.has_value()});
    return true;
  }

  bool walk(const Expr& e, std::map<int, IndexRange> vars) {
    if (!e) return true;
    if (e->kind == ExprKind::Reduce) {
      for (const Loop& l : e->loops)
        if (!add(l, false, vars, e)) return false;
    }
    for (const Expr& o : e->operands)
      if (!walk(o, vars)) return false;
    return true;
  }
};
}  // namespace

std::optional<std::vector<NestIndex>> nestIndices(const Kernel& k, int nest, std::string* error) {
  RTCG_ASSERT(nest >= 0 && nest < (int)k.nests.size(), "nest out of range");
  IndexCollector c{k, {}, {}};
  std::map<int, IndexRange> vars;
  const LoopNest& n = k.nests[nest];
  bool ok = true;
  for (const Loop& l : n.loops)
    if (!c.add(l, true, vars)) { ok = false; break; }
  for (size_t s = 0; ok && s < n.body.size(); ++s) {
    for (const Expr& i : n.body[s].indices) ok = ok && c.walk(i, vars);
    ok = ok && c.walk(n.body[s].value, vars);
  }
  if (!ok) {
    if (error) *error = c.error;
    return std::nullopt;
  }
  return c.out;
}

namespace {

// Points and the sum of `target`'s trip counts (none: 0) over the values of scope[d..] (the indices
// before d bound in `vars`), estimated from up to 16 evenly spaced values of each loop.
std::optional<std::pair<double, double>> sampledTrips(const Kernel& k, const std::vector<const Loop*>& scope, size_t d,
                                                      const Loop* target, std::map<int, IndexRange>& vars) {
  auto boundsOf = [&](const Loop& l) -> std::optional<std::pair<int64_t, int64_t>> {
    auto lo = rangeOfInt(l.lo, k, vars), hi = rangeOfInt(l.hi, k, vars);
    if (!lo || !hi || lo->empty() || hi->empty() || lo->lo != lo->hi || hi->lo != hi->hi) return std::nullopt;
    return std::pair{lo->lo, hi->lo};
  };
  if (d == scope.size()) {
    if (!target) return std::pair{1.0, 0.0};
    auto b = boundsOf(*target);
    if (!b) return std::nullopt;
    return std::pair{1.0, double(std::max<int64_t>(0, b->second - b->first))};
  }
  const Loop& l = *scope[d];
  auto b = boundsOf(l);
  if (!b) return std::nullopt;
  const int64_t count = b->second - b->first;
  if (count <= 0) return std::pair{0.0, 0.0};
  const int64_t samples = std::min<int64_t>(count, 16);
  double points = 0, trips = 0;
  for (int64_t t = 0; t < samples; ++t) {
    const int64_t v = b->first + int64_t((double(t) + 0.5) * double(count) / double(samples));
    vars[l.id] = IndexRange{v, v};
    auto sub = sampledTrips(k, scope, d + 1, target, vars);
    if (!sub) return std::nullopt;
    points += sub->first;
    trips += sub->second;
  }
  vars.erase(l.id);
  const double scale = double(count) / double(samples);
  return std::pair{points * scale, trips * scale};
}

// Finds `target` among the reduction loops of `e`, with the loops around it appended to `scope`.
bool scopeOf(const Expr& e, const Loop& target, std::vector<const Loop*>& scope) {
  if (!e) return false;
  const size_t before = scope.size();
  if (e->kind == ExprKind::Reduce)
    for (const Loop& l : e->loops) {
      if (&l == &target) return true;
      scope.push_back(&l);
    }
  for (const Expr& o : e->operands)
    if (scopeOf(o, target, scope)) return true;
  scope.resize(before);
  return false;
}

}  // namespace

std::optional<double> meanTripCount(const Kernel& k, int nest, const Loop& loop) {
  const LoopNest& n = k.nests[nest];
  std::vector<const Loop*> scope;
  for (const Loop& l : n.loops) scope.push_back(&l);
  bool found = false;
  for (const Stmt& st : n.body) {
    for (const Expr& i : st.indices) found = found || scopeOf(i, loop, scope);
    found = found || scopeOf(st.value, loop, scope);
  }
  if (!found) return std::nullopt;
  std::map<int, IndexRange> vars;
  auto r = sampledTrips(k, scope, 0, &loop, vars);
  if (!r || r->first <= 0) return std::nullopt;
  return r->second / r->first;
}

std::optional<double> domainPoints(const Kernel& k, int nest) {
  std::vector<const Loop*> scope;
  for (const Loop& l : k.nests[nest].loops) scope.push_back(&l);
  std::map<int, IndexRange> vars;
  auto r = sampledTrips(k, scope, 0, nullptr, vars);
  if (!r) return std::nullopt;
  return r->first;
}

std::vector<int64_t> partExtents(const IndexSchedule& s, int64_t extent) {
  std::vector<int64_t> ext(s.parts.size(), 1);
  int64_t inner = 1;
  for (size_t p = 1; p < s.parts.size(); ++p) {
    int64_t f = s.parts[p].factor.value_or(1);
    RTCG_ASSERT(f > 0, "partExtents needs positive factors");
    ext[p] = f;
    // Saturated: four factors of 65536 multiplied to 0 in 64 bits (a division by zero below, the
    // planner's SIGFPE). indexPointsProblem refuses any product this large.
    if (__builtin_mul_overflow(inner, f, &inner) || inner > kMaxSaturatedPoints) inner = kMaxSaturatedPoints;
  }
  if (!ext.empty()) ext[0] = std::max<int64_t>(1, (extent + inner - 1) / inner);
  return ext;
}

std::optional<std::string> indexPointsProblem(const IndexSchedule& s, const IndexRange& hull) {
  const std::vector<int64_t> ext = partExtents(s, std::max<int64_t>(1, hull.extent()));
  int64_t points = 1;
  for (int64_t e : ext)
    if (__builtin_mul_overflow(points, e, &points)) points = kMaxSaturatedPoints;
  const int64_t last = hull.lo + std::min(points, kMaxSaturatedPoints) - 1;
  if (points <= INT32_MAX && last <= INT32_MAX) return std::nullopt;
  std::vector<std::string> factors;
  for (int64_t e : ext) factors.push_back(std::to_string(e));
  return fmt::format("the parts of '{}' cover {}{} points ({}), but an index and the counters of its parts are "
                     "32-bit integers in the emitted code: at most 2^31 - 1 points{}",
                     s.index, points >= kMaxSaturatedPoints ? "more than " : "",
                     points >= kMaxSaturatedPoints ? kMaxSaturatedPoints : points, fmt::join(factors, " x "),
                     points <= INT32_MAX ? fmt::format(", up to the value 2^31 - 1 (from {}, the last would be {})",
                                                       hull.lo, last)
                                         : "");
}

std::optional<std::string> factorProductProblem(const Schedule& s) {
  for (size_t n = 0; n < s.nests.size(); ++n)
    for (const IndexSchedule& is : s.nests[n].indices) {
      bool usable = !is.parts.empty();
      for (size_t p = 1; p < is.parts.size(); ++p) usable = usable && is.parts[p].factor && *is.parts[p].factor > 0;
      if (!usable) continue;  // planning says what is wrong with it
      if (std::optional<std::string> why = indexPointsProblem(is, IndexRange{0, 0}))
        return s.nests.size() > 1 ? fmt::format("nest {}: {}", n, *why) : *why;
    }
  return std::nullopt;
}

}  // namespace rtcg
