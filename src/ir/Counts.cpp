#include "ir/Counts.h"
#include "ir/Scan.h"

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

#include "ir/Analysis.h"
#include "ir/DataRanges.h"
#include "support/Error.h"

namespace rtcg {

namespace {
int64_t countPoints(const std::vector<const Loop*>& loops, size_t depth, std::map<int, int64_t>& env);

// The elements of its array that an access can touch, when that is known exactly: every index a
// distinct loop index whose loops' bounds name no loop outside them (a[i, j] under j in 0..i + 1:
// the triangle's points). Otherwise (indirect or offset indices, a loop bounded by one the access
// does not use, a range read from arrays) nothing: the whole array counts.
std::optional<int64_t> accessFootprint(const std::vector<Expr>& indices, const std::vector<const Loop*>& scope) {
  std::vector<const Loop*> used;
  for (const Expr& ix : indices) {
    if (ix->kind != ExprKind::Var || ix->varKind != VarKind::Index) return std::nullopt;
    auto l = std::find_if(scope.begin(), scope.end(), [&](const Loop* s) { return s->id == ix->varId; });
    if (l == scope.end() || std::count(used.begin(), used.end(), *l)) return std::nullopt;
    used.push_back(*l);
  }
  std::sort(used.begin(), used.end(), [&](const Loop* a, const Loop* b) {
    return std::find(scope.begin(), scope.end(), a) < std::find(scope.begin(), scope.end(), b);
  });
  for (const Loop* l : used)
    for (const Expr& bound : {l->lo, l->hi}) {
      std::optional<AffineForm> f = toAffine(bound);
      if (!f) return std::nullopt;
      for (const auto& coeff : f->coeffs) {
        const int id = coeff.first;  // not a structured binding: clang's lambdas cannot capture one
        if (coeff.second != 0 && std::none_of(used.begin(), used.end(), [&](const Loop* u) { return u->id == id; }))
          return std::nullopt;
      }
    }
  std::map<int, int64_t> env;
  return countPoints(used, 0, env);
}

// Per array parameter, the largest exact footprint of its accesses (-1: some access has none).
void footprints(const Expr& e, std::vector<const Loop*>& scope, std::map<int, int64_t>& out) {
  if (e->kind == ExprKind::Load) {
    std::optional<int64_t> f = accessFootprint(e->operands, scope);
    int64_t& slot = out.try_emplace(e->array, 0).first->second;
    slot = f && slot >= 0 ? std::max(slot, *f) : -1;
  }
  size_t before = scope.size();
  if (e->kind == ExprKind::Reduce)
    for (const Loop& l : e->loops) scope.push_back(&l);
  for (const Expr& o : e->operands) footprints(o, scope, out);
  scope.resize(before);
}
}  // namespace

int64_t minimalBytes(const Kernel& bound) {
  // What the accesses can touch (a triangle of a square array reads half of it), each array at
  // most once; an inout array is read and written.
  std::map<int, int64_t> touched;
  for (const LoopNest& n : bound.nests) {
    std::vector<const Loop*> scope;
    for (const Loop& l : n.loops) scope.push_back(&l);
    for (const Stmt& st : n.body) {
      footprints(st.value, scope, touched);
      if (st.kind != StmtKind::Store) continue;
      std::optional<int64_t> f = accessFootprint(st.indices, scope);
      int64_t& slot = touched.try_emplace(st.array, 0).first->second;
      slot = f && slot >= 0 ? std::max(slot, *f) : -1;
    }
  }
  int64_t bytes = 0;
  // The signature's arrays: a kernel-local array need never leave the chip (a fused kernel keeps it).
  for (size_t p = 0; p < bound.numSignatureParams(); ++p) {
    const Param& param = bound.params[p];
    if (param.kind != ParamKind::Array) continue;
    int64_t elements = elementCount(bound, int(p));
    if (auto t = touched.find(int(p)); t != touched.end() && t->second >= 0) elements = std::min(elements, t->second);
    int64_t once = elements * typeBytes(param.type);
    bytes += param.mode == ArrayMode::InOut ? 2 * once : once;
  }
  return bytes;
}

int64_t elementCount(const Kernel& bound, int array) {
  int64_t n = 1;
  for (int64_t e : arrayShape(bound, array)) n *= e;
  return n;
}

int64_t writtenElements(const Kernel& bound) {
  int64_t total = 0;
  for (size_t p = 0; p < bound.numSignatureParams(); ++p)
    if (bound.params[p].isWritten()) total += elementCount(bound, int(p));
  return total;
}

namespace {

// Number of points of the domain of `loops` (outermost first, bounds affine in earlier loops),
// visiting all but the innermost loop.
int64_t countPoints(const std::vector<const Loop*>& loops, size_t depth, std::map<int, int64_t>& env);

int64_t evalInt(const Expr& e, const std::map<int, int64_t>& env) {
  std::optional<AffineForm> f = toAffine(e);
  if (!f) throw Error("cannot count the points of a loop with a non-affine bound");
  int64_t v = f->constant;
  for (auto [id, c] : f->coeffs) v += c * env.at(id);
  return v;
}

// Whether the bounds of the loops after `depth` refer to loop `depth`'s index (a triangular domain).
bool innerBoundsDependOn(const std::vector<const Loop*>& loops, size_t depth) {
  int id = loops[depth]->id;
  for (size_t d = depth + 1; d < loops.size(); ++d)
    for (const Expr& bound : {loops[d]->lo, loops[d]->hi}) {
      std::optional<AffineForm> f = toAffine(bound);
      if (!f || f->coeff(id) != 0) return true;
    }
  return false;
}

int64_t countPoints(const std::vector<const Loop*>& loops, size_t depth, std::map<int, int64_t>& env) {
  if (depth == loops.size()) return 1;
  const Loop& l = *loops[depth];
  int64_t lo = evalInt(l.lo, env), hi = evalInt(l.hi, env);
  if (hi <= lo) return 0;
  if (depth + 1 == loops.size()) return hi - lo;
  // Rectangular below this loop: every value of it sees the same inner domain.
  if (!innerBoundsDependOn(loops, depth)) return (hi - lo) * countPoints(loops, depth + 1, env);
  int64_t total = 0;
  for (int64_t v = lo; v < hi; ++v) {
    env[l.id] = v;
    total += countPoints(loops, depth + 1, env);
  }
  env.erase(l.id);
  return total;
}

// Float operations of `e` per point of `scope` (reductions multiply their body by their domain),
// added to `ops` by precision.
void exprOps(const Kernel& k, const Expr& e, std::vector<const Loop*>& scope, double points, FloatOpsByPrecision& ops);

// The points of `scope`. A data-dependent range (ir/DataRanges.h) has no count before the data
// exist: its rows are taken to partition its extent over the points of the loops before it (as
// CSR rows partition the nonzeros), so the points up to the last such range are its extent, and
// the loops after it count as at the first values of the loops before it (a range at its extent's
// middle).
double domainPoints(const Kernel& k, const std::vector<const Loop*>& scope) {
  std::map<int, int64_t> env;
  size_t last = scope.size();
  for (size_t d = 0; d < scope.size(); ++d)
    if (isDataDependent(*scope[d])) last = d;
  if (last == scope.size()) return double(countPoints(scope, 0, env));
  double extent = 0;
  for (size_t d = 0; d <= last; ++d) {
    if (isDataDependent(*scope[d])) {
      extent = double(dataRangeExtent(k, scope[d]->id).value_or(0));
      env[scope[d]->id] = int64_t(extent / 2);
    } else {
      env[scope[d]->id] = evalInt(scope[d]->lo, env);
    }
  }
  std::vector<const Loop*> after(scope.begin() + long(last) + 1, scope.end());
  return extent * double(countPoints(after, 0, env));
}

void exprOps(const Kernel& k, const Expr& e, std::vector<const Loop*>& scope, double points, FloatOpsByPrecision& ops) {
  auto count = [&ops](ScalarType t, double n) {
    (!isFloat(t) ? ops.integer : t == ScalarType::F64 ? ops.fp64 : ops.fp32) += n;
  };
  switch (e->kind) {
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
    case ExprKind::Var:
    case ExprKind::Load:  // index arithmetic is not counted
      return;
    case ExprKind::Unary:
    case ExprKind::Binary:
    case ExprKind::Call:
      if (e->operands[0]->type != ScalarType::Bool && !(e->kind == ExprKind::Unary && e->unaryOp == UnaryOp::Not))
        count(e->operands[0]->type, (e->kind == ExprKind::Call && e->mathFn == MathFn::Fma ? 2 : 1) * points);
      break;
    case ExprKind::Cast:
    case ExprKind::Select:
      break;
    case ExprKind::Reduce: {
      size_t before = scope.size();
      for (const Loop& l : e->loops) scope.push_back(&l);
      double inner = domainPoints(k, scope);
      if (e->type != ScalarType::Bool) count(e->type, inner);  // one combine per step
      exprOps(k, e->operands[0], scope, inner, ops);
      scope.resize(before);
      return;
    }
  }
  for (const Expr& o : e->operands) exprOps(k, o, scope, points, ops);
}

}  // namespace

FloatOpsByPrecision floatOpsByPrecision(const Kernel& bound) {
  FloatOpsByPrecision ops;
  for (size_t n = 0; n < bound.nests.size(); ++n) {
    const LoopNest& nest = bound.nests[n];
    // A scan (ir/Scan.h) combines each value once, whatever its triangular form says.
    if (auto scan = recogniseScan(bound, int(n))) {
      if (isFloat(scan->type)) (scan->type == ScalarType::F64 ? ops.fp64 : ops.fp32) += double(scan->lines() * scan->length);
      continue;
    }
    std::vector<const Loop*> scope;
    for (const Loop& l : nest.loops) scope.push_back(&l);
    double points = domainPoints(bound, scope);
    for (const Stmt& s : nest.body) {
      exprOps(bound, s.value, scope, points, ops);
      // An accumulation combines once per point (+=, max=, min= of a float element).
      const ScalarType t = s.kind == StmtKind::Store ? bound.params[size_t(s.array)].type : ScalarType::Bool;
      if (s.kind == StmtKind::Store && s.accumulate && isFloat(t)) (t == ScalarType::F64 ? ops.fp64 : ops.fp32) += points;
    }
  }
  return ops;
}

int64_t floatOps(const Kernel& bound) { return int64_t(floatOpsByPrecision(bound).total()); }

int64_t arithmeticOps(const Kernel& bound) {
  const FloatOpsByPrecision ops = floatOpsByPrecision(bound);
  return int64_t(ops.total() + ops.integer);
}

double arithmeticPeak(double fp32Peak, double fp64Peak, const FloatOpsByPrecision& ops) {
  if (ops.fp64 <= 0 || fp64Peak <= 0 || fp32Peak <= 0) return fp32Peak;
  return ops.total() / (ops.fp32 / fp32Peak + ops.fp64 / fp64Peak);
}

std::string arithmeticName(const FloatOpsByPrecision& ops) {
  if (ops.total() <= 0 && ops.integer > 0) return "integer";  // an i8 GEMM's i32 sums
  if (ops.fp64 <= 0) return "fp32";
  if (ops.fp32 <= 0) return "fp64";
  return "mixed (" + std::to_string(int(100 * ops.fp64 / ops.total() + 0.5)) + "% fp64)";
}

}  // namespace rtcg
