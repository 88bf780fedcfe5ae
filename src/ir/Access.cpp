// Array accesses of a nest: shapes, flat offsets, strides and footprints.
#include <set>

#include "ir/Analysis.h"
#include "ir/Walk.h"
#include "support/Error.h"

namespace rtcg {

std::vector<int64_t> arrayShape(const Kernel& k, int array) {
  RTCG_ASSERT(array >= 0 && array < (int)k.params.size() && k.params[array].isArray(),
              "arrayShape: not an array parameter");
  std::vector<int64_t> shape;
  for (const Expr& e : k.params[array].shape) {
    RTCG_ASSERT(e->kind == ExprKind::IntImm, "arrayShape: kernel is not bound (call bindSizes first)");
    shape.push_back(e->intValue);
  }
  return shape;
}

std::optional<AffineForm> flatOffset(const Kernel& k, int array, const std::vector<Expr>& indices) {
  std::vector<int64_t> shape = arrayShape(k, array);
  if (indices.size() != shape.size()) return std::nullopt;
  AffineForm off;
  for (size_t d = 0; d < indices.size(); ++d) {
    auto idx = toAffine(indices[d]);
    if (!idx) return std::nullopt;
    // off = off * extent + idx, with overflow checks.
    AffineForm scaled;
    int64_t t;
    if (__builtin_mul_overflow(off.constant, shape[d], &t)) return std::nullopt;
    scaled.constant = t;
    for (const auto& [id, c] : off.coeffs) {
      if (__builtin_mul_overflow(c, shape[d], &t)) return std::nullopt;
      scaled.coeffs[id] = t;
    }
    if (__builtin_add_overflow(scaled.constant, idx->constant, &scaled.constant)) return std::nullopt;
    for (const auto& [id, c] : idx->coeffs) {
      int64_t& slot = scaled.coeffs[id];
      if (__builtin_add_overflow(slot, c, &slot)) return std::nullopt;
      if (slot == 0) scaled.coeffs.erase(id);
    }
    off = std::move(scaled);
  }
  return off;
}

namespace {

struct Collector {
  std::vector<Access>& out;
  std::map<int, Expr> lets;  // definitions, already inlined, for the indices of later accesses
  LoopScope scope;

  // Program (evaluation) order: the indices of a load (and the loads in them) come before it.
  void expr(const Expr& e) {
    if (e->kind == ExprKind::Reduce) {
      size_t mark = scope.size();
      for (const Loop& l : e->loops) {
        expr(l.lo);
        expr(l.hi);
        scope.push_back(&l);
      }
      expr(e->operands[0]);
      scope.resize(mark);
      return;
    }
    for (const Expr& o : e->operands) expr(o);
    if (e->kind == ExprKind::Load) add(e->array, e->operands, false, e->loc);
  }

  void add(int array, const std::vector<Expr>& indices, bool isWrite, SourceLoc loc) {
    Access a;
    a.array = array;
    for (const Expr& i : indices) {
      a.indices.push_back(inlineLets(i, lets));
      a.indirect |= containsLoad(a.indices.back());
    }
    a.isWrite = isWrite;
    a.scope = scope;
    a.loc = loc;
    out.push_back(std::move(a));
  }
};

}  // namespace

std::vector<Access> collectAccesses(const Kernel& k, int nest) {
  RTCG_ASSERT(nest >= 0 && nest < (int)k.nests.size(), "collectAccesses: bad nest");
  const LoopNest& n = k.nests[nest];
  std::vector<Access> out;
  Collector c{out, {}, {}};
  for (const Loop& l : n.loops) c.scope.push_back(&l);
  for (const Stmt& s : n.body) {
    c.expr(s.value);
    switch (s.kind) {
      case StmtKind::Let: c.lets[s.letId] = inlineLets(s.value, c.lets); break;
      case StmtKind::Store:
        for (const Expr& i : s.indices) c.expr(i);
        c.add(s.array, s.indices, true, s.loc);
        c.out.back().accumulate = s.accumulate;
        c.out.back().accumOp = s.accumOp;
        break;
    }
  }
  return out;
}

std::optional<int64_t> strideAlong(const Kernel& k, const Access& a, int loopId) {
  auto off = flatOffset(k, a.array, a.indices);
  if (!off) return std::nullopt;
  return off->coeff(loopId);
}

int64_t Box::elements() const {
  int64_t n = 1;
  for (const Interval& d : dims) n *= d.extent();
  return n;
}

std::optional<Box> footprint(const Kernel& k, const Access& a, const std::map<int, Interval>& tile) {
  Box b;
  for (const Expr& i : a.indices) {
    auto r = rangeOf(i, a.scope, tile);
    if (!r) return std::nullopt;
    b.dims.push_back(*r);
  }
  return b;
}

std::vector<int> parallelLoops(const Kernel& k, int nest) {
  RTCG_ASSERT(nest >= 0 && nest < (int)k.nests.size(), "parallelLoops: bad nest");
  std::vector<int> ids;
  for (const Loop& l : k.nests[nest].loops) ids.push_back(l.id);
  return ids;
}

std::vector<int> reductionLoops(const Kernel& k, int nest) {
  RTCG_ASSERT(nest >= 0 && nest < (int)k.nests.size(), "reductionLoops: bad nest");
  std::vector<int> ids;
  std::set<int> seen;
  auto visit = [&](const Expr& e) {
    if (e->kind != ExprKind::Reduce) return;
    for (const Loop& l : e->loops)
      if (seen.insert(l.id).second) ids.push_back(l.id);
  };
  for (const Stmt& s : k.nests[nest].body) {
    visitExprs(s.value, visit);
    for (const Expr& i : s.indices) visitExprs(i, visit);
  }
  return ids;
}

}  // namespace rtcg
