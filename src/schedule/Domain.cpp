#include "schedule/Domain.h"

#include <algorithm>
#include <climits>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <functional>
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

// ---------------------------------------------------------------------------------------------
// Hoisted reductions and shared-memory staging


namespace rtcg {

namespace {

void varIds(const Expr& e, VarKind kind, std::set<int>& out) {
  if (!e) return;
  visitExprs(e, [&](const Expr& x) {
    if (x->kind == ExprKind::Var && x->varKind == kind) out.insert(x->varId);
  });
}

bool readsArrayIn(const Expr& e, const std::set<int>& arrays) {
  return e && anyExpr(e, [&](const Expr& x) { return x->kind == ExprKind::Load && arrays.count(x->array); });
}

// The reductions of `e` not inside another one.
void topReductions(const Expr& e, std::vector<Expr>& out) {
  if (!e) return;
  visitExprsWhile(e, [&](const Expr& x) {
    if (x->kind != ExprKind::Reduce) return true;
    out.push_back(x);
    return false;
  });
}

// A key equal for expressions equal up to the renaming of the loops in `canon`.
std::string structuralKey(const Expr& e, const std::map<int, std::string>& canon) {
  std::string s = fmt::format("({} {}", (int)e->kind, (int)e->type);
  switch (e->kind) {
    case ExprKind::IntImm: s += fmt::format(" {}", e->intValue); break;
    case ExprKind::FloatImm: s += fmt::format(" {}", e->floatValue); break;
    case ExprKind::Var: {
      auto it = e->varKind == VarKind::Index ? canon.find(e->varId) : canon.end();
      s += it != canon.end() ? " " + it->second : fmt::format(" v{}:{}", (int)e->varKind, e->varId);
      break;
    }
    case ExprKind::Load: s += fmt::format(" a{}", e->array); break;
    case ExprKind::Unary: s += fmt::format(" u{}", (int)e->unaryOp); break;
    case ExprKind::Binary: s += fmt::format(" b{}", (int)e->binaryOp); break;
    case ExprKind::Call: s += fmt::format(" f{}", (int)e->mathFn); break;
    case ExprKind::Cast:
    case ExprKind::Select: break;
    case ExprKind::Reduce: s += fmt::format(" r{}", (int)e->reduceOp); break;
  }
  for (const Expr& o : e->operands) s += " " + structuralKey(o, canon);
  return s + ")";
}

// The loop structure of a reduction, for fusing reductions over the same loops.
std::string loopsKey(const Expr& red) {
  std::map<int, std::string> canon;
  std::string s;
  for (size_t q = 0; q < red->loops.size(); ++q) {
    const Loop& l = red->loops[q];
    s += fmt::format("[{} {} {}]", l.name, structuralKey(l.lo, canon), structuralKey(l.hi, canon));
    canon[l.id] = fmt::format("r{}", q);
  }
  return s;
}

// One load of the staged array, with the hoisted group whose reduction body it is in (-1: none).
struct StagedLoad {
  Expr load;
  int group = -1;
};

void findLoads(const Expr& e, int array, int group, const std::map<const ExprNode*, int>& groupOf,
               std::vector<StagedLoad>& out) {
  if (!e) return;
  if (e->kind == ExprKind::Reduce) {
    auto it = groupOf.find(e.get());
    if (it != groupOf.end()) group = it->second;
  }
  if (e->kind == ExprKind::Load && e->array == array) out.push_back({e, group});
  for (const Expr& o : e->operands) findLoads(o, array, group, groupOf, out);
  for (const Loop& l : e->loops) {
    findLoads(l.lo, array, group, groupOf, out);
    findLoads(l.hi, array, group, groupOf, out);
  }
}

// How an array read in a hoisted group of outer reductions (reductions holding reductions) is
// staged: Block where its reads do not move with the group's index, Step where they do and the
// index has steps (more than one part), None (the usual rules) otherwise or outside such a group.
enum class NestedOperand { None, Block, Step };
NestedOperand nestedOperand(const std::vector<StagedLoad>& loads, const std::vector<std::vector<Expr>>& groups,
                            const NestSchedule& s) {
  const int g = loads.front().group;
  if (g < 0 || std::any_of(loads.begin(), loads.end(), [&](const StagedLoad& l) { return l.group != g; }))
    return NestedOperand::None;
  std::set<int> outerIds;
  bool nested = false;
  for (const Expr& r : groups[g]) {
    if (r->loops.size() != 1) return NestedOperand::None;
    outerIds.insert(r->loops[0].id);
    std::vector<Expr> inner;
    topReductions(r->operands[0], inner);
    nested = nested || !inner.empty();
  }
  if (!nested) return NestedOperand::None;
  std::set<int> used;
  for (const StagedLoad& l : loads)
    for (const Expr& i : l.load->operands) varIds(i, VarKind::Index, used);
  const bool moves = std::any_of(used.begin(), used.end(), [&](int id) { return outerIds.count(id) > 0; });
  if (!moves) return NestedOperand::Block;
  const IndexSchedule* is = s.find(groups[g][0]->loops[0].name);
  return is && is->parts.size() > 1 ? NestedOperand::Step : NestedOperand::None;
}

// The distinct accesses of `loads` as `shared:` entries name them ("a[i,k]"), in order of first read.
std::vector<std::string> accessTexts(const Kernel& k, const std::vector<StagedLoad>& loads) {
  std::vector<std::string> out;
  for (const StagedLoad& l : loads) {
    std::string t = fmt::format("{}[{}]", k.params[l.load->array].name, accessKey(k, l.load));
    if (std::find(out.begin(), out.end(), t) == out.end()) out.push_back(t);
  }
  return out;
}

// Keeps the loads of `access` (accessKey) only; false when none is left.
bool selectAccess(const Kernel& k, std::string_view access, std::vector<StagedLoad>& loads) {
  std::erase_if(loads, [&](const StagedLoad& l) { return accessKey(k, l.load) != access; });
  return !loads.empty();
}

// The block hull of the varying range of staged loop `first` (BlockHullSteps), or nullopt with
// `error` saying why the block's threads cannot share its steps: a range read (its rows are only
// known from the data), a bound that names a reduction index or is not affine, or grid or register
// parts on the index (a block's share of split-K, or an outer register tile, is measured from the
// bounds of one thread's range). `parKey` and `spans`: the parallel loops' keys and in-block spans.
std::optional<BlockHullSteps> blockHullSteps(const Kernel& k, const Loop& first, const NestIndex& ni,
                                             const IndexSchedule& is, const std::map<int, std::string>& parKey,
                                             const std::map<std::string, int64_t>& spans, std::string& error) {
  if (ni.dataDependent) {
    error = "its range reads an array (the steps of a block are known only from the data)";
    return std::nullopt;
  }
  for (const SchedulePart& p : is.parts)
    if (isGridPlacement(p.place) || p.place == Placement::Reg) {
      error = fmt::format("'{}' has a {} part: the block's steps over the hull of its threads' ranges take serial, "
                          "unroll and thread parts only", first.name, placementName(p.place));
      return std::nullopt;
    }
  BlockHullSteps bh;
  bh.index = first.name;
  bh.hull = ni.hull;
  for (auto [bound, out] : {std::pair{&first.lo, &bh.lo}, std::pair{&first.hi, &bh.hi}}) {
    std::optional<AffineForm> form = toAffine(*bound);
    const bool parallelOnly = form && std::all_of(form->coeffs.begin(), form->coeffs.end(),
                                                  [&](const auto& term) { return parKey.count(term.first) > 0; });
    if (!parallelOnly) {
      error = fmt::format("its bound '{}' is not affine in the parallel indices alone (the block's steps are the "
                          "extremes of the bounds over the block's parallel indices)", printExpr(*bound, &k));
      return std::nullopt;
    }
    out->least = out->most = form->constant;
    for (const auto& [id, c] : form->coeffs) {
      const std::string& key = parKey.at(id);
      out->coeffs[key] = c;
      const int64_t reach = c * (spans.at(key) - 1);
      out->least += std::min<int64_t>(0, reach);
      out->most += std::max<int64_t>(0, reach);
    }
  }
  return bh;
}

}  // namespace

bool movesWith(const StagedArray& sa, const std::string& index) {
  return std::any_of(sa.dims.begin(), sa.dims.end(), [&](const StagedDim& d) { return d.coeffs.count("p:" + index) > 0; });
}

std::vector<int64_t> storedPitches(const StagedArray& sa) {
  std::vector<int64_t> pitch(sa.order.size());
  int64_t stride = 1;
  for (size_t q = sa.order.size(); q-- > 0;) {
    pitch[sa.order[q]] = stride;
    stride *= sa.padded[sa.order[q]];
  }
  return pitch;
}

std::vector<Expr> earlyStatementLoads(const Kernel& k, int nest, const NestSchedule& s) {
  std::set<int> staged, written;
  for (const std::string& a : s.shared) staged.insert(k.findParam(std::string(stagedArrayName(a))));
  std::vector<Expr> loads;
  for (const Stmt& st : k.nests[nest].body) {
    if (st.kind != StmtKind::Store) break;  // loads after a let may use it: left in place
    std::function<void(const Expr&)> walk = [&](const Expr& e) {
      if (e->kind == ExprKind::Reduce) return;
      if (e->kind == ExprKind::Load) {
        bool direct = true;
        for (const Expr& i : e->operands)
          visitExprs(i, [&](const Expr& x) {
            direct = direct && x->kind != ExprKind::Load && !(x->kind == ExprKind::Var && x->varKind == VarKind::Let);
          });
        bool sameElement = e->array != st.array;
        if (!sameElement && e->operands.size() == st.indices.size()) {
          sameElement = true;
          for (size_t d = 0; d < e->operands.size(); ++d)
            sameElement = sameElement && sameExpr(e->operands[d], st.indices[d]);
        }
        if (direct && sameElement && !written.count(e->array) && !staged.count(e->array)) loads.push_back(e);
        return;
      }
      for (const Expr& o : e->operands) walk(o);
    };
    walk(st.value);
    written.insert(st.array);
  }
  return loads;
}

std::vector<std::vector<Expr>> hoistedReductionGroups(const Kernel& k, int nest, const NestSchedule& s) {
  const LoopNest& n = k.nests[nest];
  std::set<int> written, regIds;
  for (const Stmt& st : n.body)
    if (st.kind == StmtKind::Store) written.insert(st.array);
  for (const Loop& l : n.loops)
    if (const IndexSchedule* is = s.find(l.name))
      for (const SchedulePart& p : is->parts)
        if (p.place == Placement::Reg) regIds.insert(l.id);
  std::vector<std::vector<Expr>> groups;
  std::vector<std::string> keys;  // loopsKey of each group
  for (const Stmt& st : n.body) {
    std::vector<Expr> reds;
    topReductions(st.value, reds);
    for (const Expr& r : reds) {
      std::set<int> lets, dataBoundRefs;
      varIds(r, VarKind::Let, lets);
      for (const Loop& l : r->loops) {
        if (!isDataDependent(l)) continue;
        varIds(l.lo, VarKind::Index, dataBoundRefs);
        varIds(l.hi, VarKind::Index, dataBoundRefs);
      }
      // Affine bounds on a register-tile index (a triangle's rows `j in 0..i + 1`, i in registers):
      // the points' loops run over the union of their ranges, each point's updates guarded by its
      // own. A range read at a register index (a CSR row per point) stays in its statement.
      bool dataOnReg = std::any_of(dataBoundRefs.begin(), dataBoundRefs.end(), [&](int id) { return regIds.count(id) > 0; });
      if (!lets.empty() || readsArrayIn(r, written) || dataOnReg) continue;
      std::string key = loopsKey(r);
      auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        groups.push_back({r});
        keys.push_back(std::move(key));
      } else {
        groups[it - keys.begin()].push_back(r);
      }
    }
  }
  return groups;
}

bool isInBlockPlacement(Placement p) { return isThreadPlacement(p) || p == Placement::Reg; }

std::vector<std::string> splitReductionReasons(const Kernel& k, int nest, const NestSchedule& s,
                                               const std::vector<NestIndex>* known) {
  std::vector<std::string> out;
  std::optional<std::vector<NestIndex>> found;
  if (!known && !(found = nestIndices(k, nest))) return out;  // validation reports this
  const std::vector<NestIndex>* indices = known ? known : &*found;
  std::set<int> hoistedLoops;
  for (const std::vector<Expr>& g : hoistedReductionGroups(k, nest, s))
    for (const Expr& r : g)
      for (const Loop& l : r->loops) hoistedLoops.insert(l.id);
  for (const NestIndex& ni : *indices) {
    const IndexSchedule* is = s.find(ni.name);
    if (ni.parallel || !is) continue;
    bool threads = std::any_of(is->parts.begin(), is->parts.end(), [](const SchedulePart& p) { return isThreadPlacement(p.place); });
    bool blocks = std::any_of(is->parts.begin(), is->parts.end(), [](const SchedulePart& p) { return isGridPlacement(p.place); });
    if (!threads && !blocks) continue;
    const char* across = blocks ? (threads ? "threads and blocks" : "blocks") : "threads";
    // A data-dependent range (a CSR row) splits across the lanes of its row: each lane strides
    // through the row's values from its start, with the trip count computed from its bounds at run
    // time. Across blocks, the share of each block would need the same bounds everywhere.
    if (ni.dataDependent && blocks) {
      out.push_back(fmt::format("reduction index '{}' has a range that reads an array: it may be split across "
                                "threads (the lanes of a row), not across blocks", ni.name));
      continue;
    }
    // Bounds that vary with other indices (a triangle's row 0..i + 1) split the same way: each
    // loop's own range, lowered where its group is computed (the indices its bounds name are known
    // there: a bound on a register-tile index keeps the reduction in its statement, below), gives
    // the trip counts at run time, and every value past the range's end is guarded.
    for (const Loop* l : ni.loops) {
      if (ni.dataDependent && ni.loops.size() > 1) {
        out.push_back(fmt::format("reduction index '{}' has a range that reads an array and names {} reductions: "
                                  "only one such reduction may be split across threads", ni.name, ni.loops.size()));
        break;
      }
      if (!hoistedLoops.count(l->id)) {
        out.push_back(fmt::format("reduction over '{}' cannot be split across {}: it is computed inside a "
                                  "statement (it depends on a let, reads an array the nest writes, is nested in "
                                  "another reduction, or its range reads an array at a register-tile index)", ni.name, across));
        break;
      }
    }
  }
  return out;
}

OuterTile outerTile(const Kernel& k, int nest, const NestSchedule& s, const std::vector<std::vector<Expr>>& groups,
                    std::vector<std::string>& reasons) {
  OuterTile tile;
  const LoopNest& n = k.nests[nest];
  std::set<std::string> parallelNames;
  std::set<int> regIds;  // parallel loops with a register part
  for (const Loop& l : n.loops) {
    parallelNames.insert(l.name);
    if (const IndexSchedule* is = s.find(l.name))
      for (const SchedulePart& p : is->parts)
        if (p.place == Placement::Reg) regIds.insert(l.id);
  }
  for (const IndexSchedule& is : s.indices) {
    if (parallelNames.count(is.index)) continue;
    for (size_t p = 0; p < is.parts.size(); ++p) {
      if (is.parts[p].place != Placement::Reg) continue;
      if (!tile.index.empty()) {
        reasons.push_back(tile.index == is.index
                              ? fmt::format("reduction index '{}' has two reg parts (at most one)", is.index)
                              : fmt::format("reduction indices '{}' and '{}' both have reg parts: at most one reduction "
                                            "index per nest takes a register tile", tile.index, is.index));
        return tile;
      }
      tile.index = is.index;
      tile.part = p;
      tile.extent = is.parts[p].factor.value_or(1);
      if (p == stepPartOf(is))
        reasons.push_back(fmt::format("the reg part of '{}' would be its steps (its {} part): give '{}' a serial or "
                                      "unroll part ahead of the reg part", is.index, p == 0 ? "first" : "first non-grid",
                                      is.index));
    }
  }
  if (tile.index.empty() || !reasons.empty()) return tile;
  // Every reduction over the index is a one-index reduction of one hoisted group.
  std::vector<int> over;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const Expr& r : groups[g])
      for (const Loop& l : r->loops)
        if (l.name == tile.index && std::find(over.begin(), over.end(), (int)g) == over.end()) over.push_back((int)g);
  size_t loopsOver = 0, hoistedOver = 0;
  std::function<void(const Expr&)> count = [&](const Expr& e) {
    if (e->kind == ExprKind::Reduce)
      for (const Loop& l : e->loops) loopsOver += l.name == tile.index;
    for (const Expr& o : e->operands) count(o);
  };
  for (const Stmt& st : n.body) count(st.value);
  for (int g : over)
    for (const Expr& r : groups[g]) hoistedOver += r->loops.size() == 1 && r->loops[0].name == tile.index;
  const std::string why = fmt::format("a reg part on reduction index '{}' tiles an outer reduction computed ahead of "
                                      "the statements, over that one index", tile.index);
  if (over.size() != 1 || hoistedOver != loopsOver) {
    reasons.push_back(why + (over.size() > 1 ? ": the reductions over it have different loops (bounds)"
                                             : ": a reduction over it is computed inside a statement (it depends on a "
                                               "let, reads an array the nest writes, is nested in another reduction, "
                                               "runs over several indices, or its bounds depend on a register-tile index)"));
    return tile;
  }
  tile.group = over[0];
  // The inner reductions, grouped by their loops; their bounds may not move with the outer index
  // (one pass serves all its values) nor with a register-tiled parallel index (one pass serves
  // every point).
  std::vector<std::string> keys;
  for (const Expr& r : groups[tile.group]) {
    const int outerId = r->loops[0].id;
    std::vector<Expr> inner;
    topReductions(r->operands[0], inner);
    for (const Expr& ir : inner) {
      std::set<int> boundRefs;
      for (const Loop& l : ir->loops) {
        varIds(l.lo, VarKind::Index, boundRefs);
        varIds(l.hi, VarKind::Index, boundRefs);
      }
      for (int id : boundRefs)
        if (id == outerId || regIds.count(id)) {
          reasons.push_back(fmt::format("the reduction over '{}' nested in the reduction over '{}' has bounds that "
                                        "depend on {}: a register tile of '{}' needs inner loops that serve all its "
                                        "values and points", ir->loops[0].name, tile.index,
                                        id == outerId ? "'" + tile.index + "'" : "a register-tiled parallel index",
                                        tile.index));
          return tile;
        }
      std::string key = loopsKey(ir);
      auto it = std::find(keys.begin(), keys.end(), key);
      if (it == keys.end()) {
        tile.inner.push_back({ir});
        keys.push_back(std::move(key));
      } else {
        tile.inner[it - keys.begin()].push_back(ir);
      }
    }
  }
  return tile;
}

CrossBlockPlan crossBlockPlan(const Kernel& k, int nest, const NestSchedule& s) {
  CrossBlockPlan plan;
  auto indices = nestIndices(k, nest);
  if (!indices) return plan;
  for (const NestIndex& ni : *indices) {
    const IndexSchedule* is = s.find(ni.name);
    if (!is || is->parts.empty()) continue;
    bool badFactor = std::any_of(is->parts.begin(), is->parts.end(), [](const SchedulePart& p) { return p.factor && *p.factor <= 0; });
    if (badFactor) continue;
    std::vector<int64_t> ext = partExtents(*is, ni.hull.extent());
    for (size_t p = 0; p < ext.size(); ++p) {
      Placement pl = is->parts[p].place;
      if (ni.parallel) {
        if (isGridPlacement(pl)) plan.tiles *= ext[p];
        else if (isThreadPlacement(pl)) plan.slots *= ext[p];
        else if (pl == Placement::Reg) plan.regPoints *= ext[p];
        else plan.positions *= ext[p];
      } else if (isGridPlacement(pl) && (plan.index.empty() || plan.index == ni.name)) {
        plan.index = ni.name;
        plan.gridAxis[placementAxis(pl)] = true;
        plan.blocks *= ext[p];
      }
    }
  }
  if (!plan.any()) return plan;
  std::vector<std::vector<Expr>> groups = hoistedReductionGroups(k, nest, s);
  for (size_t g = 0; g < groups.size(); ++g) {
    bool over = false;
    for (const Loop& l : groups[g][0]->loops) over = over || l.name == plan.index;
    if (!over) continue;
    plan.groups.push_back((int)g);
    for (const Expr& r : groups[g]) plan.values[r->type] += plan.regPoints;
  }
  plan.counters = plan.tiles * plan.positions;
  double bytes = 4.0 * (double)plan.counters;
  for (const auto& [t, v] : plan.values)
    bytes += (double)plan.counters * (double)v * (double)plan.slots * (double)plan.blocks * typeBytes(t);
  plan.scratchBytes = bytes;
  return plan;
}

size_t stepPartOf(const IndexSchedule& is) {
  size_t p = 0;
  while (p < is.parts.size() && isGridPlacement(is.parts[p].place)) ++p;
  return p;
}

int64_t stepSpanOf(const IndexSchedule& is) {
  int64_t span = 1;
  for (size_t p = stepPartOf(is) + 1; p < is.parts.size(); ++p) span *= is.parts[p].factor.value_or(1);
  return span;
}

namespace {
std::atomic<int64_t> stagingPlans{0};
}  // namespace

std::string accessKey(const Kernel& k, const std::vector<Expr>& indices) {
  std::string text;
  for (size_t d = 0; d < indices.size(); ++d) {
    if (d > 0) text += ',';
    for (char c : printExpr(indices[d], &k))
      if (!std::isspace((unsigned char)c)) text += c;
  }
  return text;
}

std::string stagingEntry(const Kernel& k, const StagedArray& sa) {
  const std::string& name = k.params[sa.array].name;
  return sa.access.empty() ? name : fmt::format("{}[{}]", name, sa.access);
}

int64_t planStagingCount() { return stagingPlans.load(std::memory_order_relaxed); }

StagingPlan planStaging(const Kernel& k, int nest, const NestSchedule& s, const std::vector<NestIndex>* known) {
  StagingPlan plan;
  if (s.shared.empty()) return plan;
  stagingPlans.fetch_add(1, std::memory_order_relaxed);
  std::optional<std::vector<NestIndex>> found;
  if (!known && !(found = nestIndices(k, nest))) return plan;  // validation reports this
  const std::vector<NestIndex>* indices = known ? known : &*found;
  const LoopNest& n = k.nests[nest];
  std::vector<std::vector<Expr>> groups = hoistedReductionGroups(k, nest, s);
  std::map<const ExprNode*, int> groupOf;
  for (size_t g = 0; g < groups.size(); ++g)
    for (const Expr& r : groups[g]) groupOf[r.get()] = (int)g;

  // Spans and hulls of the indices, by loop id.
  std::map<int, std::string> parKey;        // parallel loop id -> "p:<name>"
  std::map<std::string, int64_t> spans;     // uniform-based key -> in-block span
  std::map<std::string, bool> serialKey;    // "p:<name>" -> has a serial/unroll part
  std::map<int, IndexRange> hull;           // reduction loop id -> hull of its values
  std::map<std::string, const NestIndex*> reductionByName;
  std::set<int> threadXLoops;               // loop ids of the index with a thread.x part
  for (const NestIndex& ni : *indices) {
    const IndexSchedule* is = s.find(ni.name);
    if (!is || is->parts.empty()) return plan;  // validation reports this
    for (const SchedulePart& p : is->parts)
      if (p.place == Placement::ThreadX)
        for (const Loop* l : ni.loops) threadXLoops.insert(l->id);
    for (const SchedulePart& p : is->parts)
      if (p.factor && *p.factor <= 0) return plan;
    if (!ni.parallel) {
      for (const Loop* l : ni.loops) hull[l->id] = ni.hull;
      reductionByName[ni.name] = &ni;
      continue;
    }
    std::vector<int64_t> ext = partExtents(*is, ni.hull.extent());
    int64_t stride = 1, span = 1;
    bool serial = false;
    for (size_t p = ext.size(); p-- > 0;) {
      if (isInBlockPlacement(is->parts[p].place)) span += (ext[p] - 1) * stride;
      if (is->parts[p].place == Placement::Serial || is->parts[p].place == Placement::Unroll) serial = true;
      stride *= ext[p];
    }
    std::string key = "p:" + ni.name;
    parKey[ni.loops.front()->id] = key;
    spans[key] = span;
    serialKey[key] = serial;
  }

  // The box of a set of loads; `stepIds` are the loop ids of the staged step (Step level).
  auto boxOf = [&](const std::vector<StagedLoad>& loads, const std::set<int>& stepIds, int64_t stepSpan,
                   std::vector<StagedDim>& dims, std::string& error) -> bool {
    std::vector<int64_t> shape = arrayShape(k, loads.front().load->array);
    dims.assign(shape.size(), {});
    std::vector<int64_t> hi(shape.size());
    for (size_t li = 0; li < loads.size(); ++li) {
      const Expr& ld = loads[li].load;
      for (size_t d = 0; d < shape.size(); ++d) {
        auto form = toAffine(ld->operands[d]);
        if (!form) {
          error = fmt::format("its index '{}' is not affine in the loop indices",
                              accessText(k, ld->array, ld->operands));
          return false;
        }
        StagedDim dim;
        dim.extent = shape[d];
        dim.constant = form->constant;
        for (const auto& [id, c] : form->coeffs) {
          std::string key;
          int64_t span = 1;
          if (stepIds.count(id)) {
            key = "step", span = stepSpan;
          } else if (parKey.count(id)) {
            key = parKey[id], span = spans[key];
          } else if (hull.count(id)) {
            // Ranges over its hull: folded into the constant and the size.
            IndexRange h = hull[id];
            if (h.empty()) continue;
            dim.constant += c * h.lo + std::min<int64_t>(0, c * (h.extent() - 1));
            dim.size += std::abs(c) * (h.extent() - 1);
            continue;
          } else {
            error = "its index uses a loop the schedule does not know";
            return false;
          }
          dim.coeffs[key] = c;
          dim.constant += std::min<int64_t>(0, c * (span - 1));
          dim.size += std::abs(c) * (span - 1);
        }
        if (li == 0) {
          dims[d] = dim;
          hi[d] = dim.constant + dim.size;
        } else if (dims[d].coeffs != dim.coeffs) {
          error = fmt::format("its accesses move differently with the loop indices, so they do not share one tile "
                              "(stage each access as its own tile: 'shared: {}')",
                              fmt::join(accessTexts(k, loads), ", "));
          return false;
        } else {
          dims[d].constant = std::min(dims[d].constant, dim.constant);
          hi[d] = std::max(hi[d], dim.constant + dim.size);
        }
      }
    }
    for (size_t d = 0; d < dims.size(); ++d) {
      dims[d].size = hi[d] - dims[d].constant;
      if (dims[d].size >= dims[d].extent) {
        dims[d].clipped = dims[d].size > dims[d].extent;
        dims[d].whole = true;
        dims[d].coeffs.clear();
        dims[d].constant = 0;
        dims[d].size = dims[d].extent;
      }
    }
    return true;
  };

  std::set<int> dataDependentIds;  // loop ids of data-dependent ranges
  for (const DataRange& r : dataRanges(k, nest)) dataDependentIds.insert(r.loop->id);
  for (const std::string& name : s.shared) {
    int a = k.findParam(std::string(stagedArrayName(name)));
    if (a < 0 || !k.params[a].isArray()) continue;  // validation reports this
    auto fail = [&](const std::string& why) {
      plan.errors.push_back(fmt::format("{} '{}' cannot be staged in shared memory: {}",
                                        stagedAccess(name).empty() ? "array" : "access", name, why));
    };
    std::vector<StagedLoad> loads;
    for (const Stmt& st : n.body) {
      for (const Expr& i : st.indices) findLoads(i, a, -1, groupOf, loads);
      findLoads(st.value, a, -1, groupOf, loads);
    }
    if (loads.empty()) continue;  // validation reports this
    if (const std::vector<std::string> reads = accessTexts(k, loads);
        !stagedAccess(name).empty() && !selectAccess(k, stagedAccess(name), loads)) {
      fail(fmt::format("no read of the nest has these indices (its reads of '{}': {})", k.params[a].name,
                       fmt::join(reads, ", ")));
      continue;
    }
    bool indirect = false;
    for (const StagedLoad& l : loads)
      for (const Expr& i : l.load->operands) indirect = indirect || containsLoad(i);
    if (indirect) {
      fail("it is accessed indirectly (through an index array); only affine accesses are staged");
      continue;
    }
    // A tile covers a box of the index hulls; a row of a data-dependent range lies anywhere in
    // its hull (a CSR row in [0, nnz)), so no box smaller than the array fits it.
    std::string dataIndex;
    for (const StagedLoad& l : loads)
      for (const Expr& i : l.load->operands)
        visitExprs(i, [&](const Expr& x) {
          if (x->kind != ExprKind::Var || x->varKind != VarKind::Index || !dataDependentIds.count(x->varId)) return;
          if (dataIndex.empty()) dataIndex = x->name;
        });
    if (!dataIndex.empty()) {
      fail(fmt::format("its index '{}' has a range that reads an array; only arrays read at affine ranges are staged",
                       dataIndex));
      continue;
    }
    StagedArray sa;
    sa.array = a;
    sa.access = std::string(stagedAccess(name));
    std::string error;
    // Block level: every read, reduction indices over their hulls.
    if (!boxOf(loads, {}, 1, sa.dims, error)) {
      fail(error);
      continue;
    }
    bool whole = std::all_of(sa.dims.begin(), sa.dims.end(), [](const StagedDim& d) { return d.whole; });
    bool onReduction = false;
    for (const StagedLoad& l : loads)
      for (const Expr& i : l.load->operands) {
        std::set<int> ids;
        varIds(i, VarKind::Index, ids);
        for (int id : ids) onReduction = onReduction || hull.count(id) > 0;
      }
    // The operands of an outer reduction (a group whose reductions hold reductions, as OuterTile
    // tiles): one that moves with the outer index (r[j, e]) is staged per step of it where it has
    // steps (even when the whole array would fit: it is read once per block either way, and the
    // steps keep the tile small); one that does not (q[i, e]) once per block, for every step.
    const NestedOperand nested = nestedOperand(loads, groups, s);
    if (nested == NestedOperand::Block || (nested == NestedOperand::None && (whole || !onReduction))) {
      sa.level = StageLevel::Block;
    } else {
      // Step level: the reads in one hoisted group whose first loop moves the tile.
      std::set<int> gs;
      for (const StagedLoad& l : loads)
        if (l.group >= 0) gs.insert(l.group);
      if (gs.size() != 1) {
        fail(gs.empty() ? "its reads depend on reduction indices but are not in a reduction computed ahead "
                          "of the statements, and the whole array is not read by every block"
                        : "it is read by reductions over different loops; only one can stage it per step");
        continue;
      }
      int g = *gs.begin();
      const Loop& first = groups[g][0]->loops.front();
      const NestIndex* ni = reductionByName.at(first.name);
      const IndexSchedule* is = s.find(first.name);
      if (!ni->constantBounds) {
        std::optional<BlockHullSteps> bh = blockHullSteps(k, first, *ni, *is, parKey, spans, error);
        if (!bh) {
          fail(fmt::format("the reduction index '{}' it would be staged along has bounds that vary with other "
                           "indices, and {}", first.name, error));
          continue;
        }
        bh->group = g;
        if (std::none_of(plan.blockHulls.begin(), plan.blockHulls.end(), [&](const BlockHullSteps& b) { return b.group == g; }))
          plan.blockHulls.push_back(std::move(*bh));
      }
      std::set<int> stepIds;
      for (const Expr& r : groups[g]) stepIds.insert(r->loops.front().id);
      const size_t stepPart = stepPartOf(*is);
      if (stepPart == is->parts.size()) {
        fail(fmt::format("every part of '{}' is on the grid, so a block has no steps to stage: give '{}' a serial "
                         "or unroll part after its grid parts", first.name, first.name));
        continue;
      }
      if (std::any_of(is->parts.begin() + stepPart, is->parts.end(), [](const SchedulePart& p) { return isGridPlacement(p.place); })) {
        fail(fmt::format("'{}' has a grid part after its first non-grid part, so a step along it would span the "
                         "values of several blocks; stage per step only with the grid parts of '{}' first (each "
                         "block then steps through its share)", first.name, first.name));
        continue;
      }
      if (isThreadPlacement(is->parts[stepPart].place)) {
        fail(fmt::format("the steps along '{}' would be its {} part, which is on {}: give '{}' a serial or "
                         "unroll {} part", first.name, stepPart == 0 ? "first" : "first non-grid",
                         placementName(is->parts[stepPart].place), first.name,
                         stepPart == 0 ? "first" : "first non-grid"));
        continue;
      }
      const int64_t inner = stepSpanOf(*is);
      std::vector<StagedLoad> inGroup;
      for (const StagedLoad& l : loads)
        if (l.group == g) inGroup.push_back(l);
      if (!boxOf(inGroup, stepIds, inner, sa.dims, error)) {
        fail(error);
        continue;
      }
      sa.level = StageLevel::Step;
      sa.group = g;
    }
    for (const StagedDim& d : sa.dims)
      for (const auto& [key, c] : d.coeffs) sa.movesWithSerial = sa.movesWithSerial || (key != "step" && serialKey[key]);
    for (const StagedDim& d : sa.dims) sa.padded.push_back(d.size);
    for (size_t d = 0; d < sa.dims.size(); ++d) sa.order.push_back(d);
    if (s.isTransposed(name)) std::reverse(sa.order.begin(), sa.order.end());
    if (sa.padded.size() >= 2) {
      // The innermost stored dimension is the tile's row. Does a warp read down a column of the
      // tile (neighbouring thread.x threads at different positions of another dimension)? Does a
      // thread walk its row along a reduction?
      const size_t rowDim = sa.order.back();
      bool columnReads = false, alongReduction = false;
      for (const StagedLoad& l : loads) {
        for (size_t d = 0; d < l.load->operands.size(); ++d) {
          std::set<int> ids;
          varIds(l.load->operands[d], VarKind::Index, ids);
          for (int id : ids) {
            if (d != rowDim) columnReads = columnReads || threadXLoops.count(id) > 0;
            else alongReduction = alongReduction || hull.count(id) > 0;
          }
        }
      }
      int64_t& row = sa.padded[rowDim];
      auto alignRow = [&row] { row = (row + 3) / 4 * 4; };  // 4 elements: 16 bytes of f32
      if (columnReads && alongReduction && row >= 4) {
        // Each thread walks its own row along a reduction (a matrix row per output node): rows
        // 16-byte aligned for vector reads, and a pitch of an odd number of 16-byte groups, so
        // that the 8 threads of a vector read's phase hit 8 different groups of 4 banks.
        alignRow();
        if ((row / 4) % 2 == 0) row += 4;
      } else if (columnReads) {
        // An odd pitch: the threads of a warp reading down a column hit 32 different banks.
        if (row % 2 == 0) row += 1;
      } else {
        // Rows stay 16-byte aligned, so that a thread's neighbouring reads along a row merge into
        // vector loads; rows of a multiple of 32 elements are staggered by 4 (the rows of
        // neighbouring threads then start in different banks, and so do the elements that the
        // copy of a transposed tile stores from one warp).
        if (row >= 4) alignRow();
        if (row % 32 == 0) row += 4;
      }
    }
    for (int64_t e : sa.padded) sa.elements *= e;
    if (sa.level == StageLevel::Step) sa.buffers = s.buffers;
    sa.bytes = sa.elements * sa.buffers * typeBytes(k.params[a].type);
    plan.bytes += (sa.bytes + 15) / 16 * 16;
    plan.arrays.push_back(std::move(sa));
  }
  return plan;
}

}  // namespace rtcg
