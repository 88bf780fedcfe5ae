#include "schedule/Domain.h"

#include <algorithm>
#include <fmt/format.h>

#include "support/Error.h"

namespace rtcg {

static int64_t floorDiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  return (q * b != a && ((a < 0) != (b < 0))) ? q - 1 : q;
}
static int64_t floorMod(int64_t a, int64_t b) { return a - floorDiv(a, b) * b; }

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
  if (e->kind == ExprKind::Reduce) out.push_back(e);
  for (const Expr& o : e->operands) collectReductions(o, out);
  for (const Loop& l : e->loops) {
    collectReductions(l.lo, out);
    collectReductions(l.hi, out);
  }
}

namespace {
struct IndexCollector {
  const Kernel& k;
  std::vector<NestIndex> out;
  std::string error;

  // Records loop `l` (its values given `vars`) and makes it visible to inner bounds.
  bool add(const Loop& l, bool parallel, std::map<int, IndexRange>& vars) {
    auto lo = rangeOfInt(l.lo, k, vars), hi = rangeOfInt(l.hi, k, vars);
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
        return true;
      }
    out.push_back({l.name, parallel, {&l}, values, constant});
    return true;
  }

  bool walk(const Expr& e, std::map<int, IndexRange> vars) {
    if (!e) return true;
    if (e->kind == ExprKind::Reduce) {
      for (const Loop& l : e->loops)
        if (!add(l, false, vars)) return false;
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

std::vector<int64_t> partExtents(const IndexSchedule& s, int64_t extent) {
  std::vector<int64_t> ext(s.parts.size(), 1);
  int64_t inner = 1;
  for (size_t p = 1; p < s.parts.size(); ++p) {
    int64_t f = s.parts[p].factor.value_or(1);
    RTCG_ASSERT(f > 0, "partExtents needs positive factors");
    ext[p] = f;
    inner *= f;
  }
  if (!ext.empty()) ext[0] = std::max<int64_t>(1, (extent + inner - 1) / inner);
  return ext;
}

}  // namespace rtcg
