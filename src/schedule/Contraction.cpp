#include "schedule/Contraction.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <functional>
#include <set>

#include "ir/Analysis.h"
#include "ir/Printer.h"
#include "ir/Walk.h"
#include "schedule/Domain.h"

namespace rtcg {

namespace {

// The storage type of an operand that is `f32(x[...])` of a load of f16 or bf16, or `i32(x[...])`
// of a load of i8 or u8, else the operand's type.
ScalarType narrowOperand(const Expr& e) {
  if (e->kind != ExprKind::Cast) return e->type;
  const Expr& x = e->operands[0];
  const bool f32 = e->type == ScalarType::F32 && isHalf(x->type), i32 = e->type == ScalarType::I32 && isNarrowInt(x->type);
  return x->kind == ExprKind::Load && (f32 || i32) ? x->type : e->type;
}

// The load under an operand's conversions (`f64(a[i, k])`, `i32(a8[i, k])` of an 8-bit load), or
// null when the operand is more.
const ExprNode* operandLoad(const Expr& e) {
  const ExprNode* x = e.get();
  if (x->kind == ExprKind::Cast && x->type == ScalarType::I32 && x->operands[0]->kind == ExprKind::Load &&
      isNarrowInt(x->operands[0]->type))
    return x->operands[0].get();
  while (x->kind == ExprKind::Cast && isFloat(x->type)) x = x->operands[0].get();
  return x->kind == ExprKind::Load && isFloat(x->type) ? x : nullptr;
}

// The loop ids an operand's indices use, or a reason why they are not affine.
std::optional<std::set<int>> operandIndices(const ExprNode* load, const std::string& what,
                                            std::vector<std::string>& reasons) {
  std::set<int> ids;
  for (const Expr& ix : load->operands) {
    auto form = toAffine(ix);
    if (!form) {
      reasons.push_back(fmt::format("mma: an index of {} is not affine (indirect or quasi-affine)", what));
      return std::nullopt;
    }
    for (const auto& [id, c] : form->coeffs) ids.insert(id);
  }
  return ids;
}

// Whether the coefficient of loop `id` in the flat offset of `load` is +-1 (consecutive values of
// the index are neighbours in memory).
bool unitStride(const Kernel& k, const ExprNode* load, int id) {
  auto form = flatOffset(k, load->array, load->operands);
  return form && (form->coeff(id) == 1 || form->coeff(id) == -1);
}

int64_t rowsExtent(const std::vector<ContractionRow>& rows) {
  int64_t e = 1;
  for (const ContractionRow& r : rows) e *= std::max<int64_t>(0, r.extent);
  return e;
}

// The index sets of the two operands made into M, N and batch indices (c.mRows, c.nRows, c.batch).
bool assignRoles(const std::vector<NestIndex>& indices, const std::set<int>& ia, const std::set<int>& ib,
                 Contraction& c, std::vector<std::string>& reasons) {
  for (const NestIndex& ni : indices) {
    if (!ni.parallel) continue;
    const int id = ni.loops[0]->id;
    if (!ni.constantBounds) {
      reasons.push_back(fmt::format("mma: index '{}' has bounds that are not constant (tiles are rectangular)", ni.name));
      return false;
    }
    const ContractionRow row{id, ni.hull.lo, ni.hull.extent(), ni.name};
    if (ia.count(id) && !ib.count(id)) c.mRows.push_back(row);
    else if (ib.count(id) && !ia.count(id)) c.nRows.push_back(row);
    else c.batch.push_back(id), c.batchLo.push_back(row.lo), c.batchExtent.push_back(row.extent);
  }
  if (c.mRows.empty() || c.nRows.empty()) {
    reasons.push_back(fmt::format("mma: a GEMM needs at least one parallel index in each operand only; the first "
                                  "operand has {}, the second {} (a matrix-vector product does not qualify)",
                                  c.mRows.size(), c.nRows.size()));
    return false;
  }
  c.m = c.mRows.back().loop, c.mLo = c.mRows.back().lo, c.mExtent = rowsExtent(c.mRows);
  c.n = c.nRows.back().loop, c.nLo = c.nRows.back().lo, c.nExtent = rowsExtent(c.nRows);
  return true;
}

// The sum over the product of two operands, with one constant reduction loop.
const ExprNode* sumOfProduct(const Kernel& k, const Expr& sum, Contraction& c, ContractionPart& part,
                             std::vector<std::string>& reasons) {
  if (sum->reduceOp != ReduceOp::Sum || sum->loops.size() != 1) {
    reasons.push_back(fmt::format("mma: the reduction is a {} over {} indices, not a sum over one",
                                  reduceName(sum->reduceOp), sum->loops.size()));
    return nullptr;
  }
  if (sum->type != ScalarType::F32 && sum->type != ScalarType::F64 && sum->type != ScalarType::I32) {
    reasons.push_back(fmt::format("mma: the sum is of type {}, not f32, f64 or i32", typeName(sum->type)));
    return nullptr;
  }
  const Expr& body = sum->operands[0];
  if (body->kind != ExprKind::Binary || body->binaryOp != BinaryOp::Mul) {
    reasons.push_back("mma: the sum's body is not a product of two operands");
    return nullptr;
  }
  auto lo = constIntValue(sum->loops[0].lo, k), hi = constIntValue(sum->loops[0].hi, k);
  if (!lo || !hi) {
    reasons.push_back(fmt::format("mma: reduction index '{}' has bounds that are not constant", sum->loops[0].name));
    return nullptr;
  }
  part.kLoop = &sum->loops[0];
  c.kLo = *lo, c.kExtent = std::max<int64_t>(0, *hi - *lo);
  c.type = sum->type;
  return body.get();
}

// One statement of the nest as a contraction (parts: itself), or the reasons why it is none.
std::optional<Contraction> matchStatement(const Kernel& k, int nest, int statement, std::vector<std::string>& reasons) {
  const Stmt& st = k.nests[size_t(nest)].body[size_t(statement)];
  std::vector<Expr> sums;
  collectReductions(st.value, sums);
  if (sums.size() != 1) {
    reasons.push_back(fmt::format("mma: the statement has {} reductions; an mma schedule computes one", sums.size()));
    return std::nullopt;
  }
  Contraction c;
  ContractionPart part{statement, sums[0], nullptr, nullptr, nullptr};
  const ExprNode* product = sumOfProduct(k, part.sum, c, part, reasons);
  if (!product) return std::nullopt;
  const ExprNode* la = operandLoad(product->operands[0]);
  const ExprNode* lb = operandLoad(product->operands[1]);
  if (!la || !lb) {
    reasons.push_back("mma: a factor of the product is not a load of a float array (after conversions) or an i32 "
                      "conversion of a load of an i8 or u8 array");
    return std::nullopt;
  }
  auto ia = operandIndices(la, "the first operand", reasons);
  auto ib = operandIndices(lb, "the second operand", reasons);
  if (!ia || !ib) return std::nullopt;
  const int kId = part.kLoop->id;
  if (!ia->count(kId) || !ib->count(kId)) {
    reasons.push_back(fmt::format("mma: an operand does not depend on the reduction index '{}'", part.kLoop->name));
    return std::nullopt;
  }
  std::string err;
  auto indices = nestIndices(k, nest, &err);
  if (!indices) {
    reasons.push_back(err);
    return std::nullopt;
  }
  std::set<int> parallel{kId};
  for (const NestIndex& ni : *indices)
    if (ni.parallel) parallel.insert(ni.loops[0]->id);
  for (const std::set<int>* ids : {&*ia, &*ib})
    for (int id : *ids)
      if (!parallel.count(id)) {
        reasons.push_back("mma: an operand depends on an index besides the parallel ones and the sum's");
        return std::nullopt;
      }
  part.a = product->operands[0], part.b = product->operands[1];
  if (!assignRoles(*indices, *ia, *ib, c, reasons)) return std::nullopt;
  c.aAlongK = unitStride(k, la, kId) || !unitStride(k, la, c.m);
  c.bAlongK = unitStride(k, lb, kId) || !unitStride(k, lb, c.n);
  c.narrowOperands = narrowOperand(part.a) == narrowOperand(part.b) ? narrowOperand(part.a) : c.type;
  c.parts = {part};
  return c;
}

// Whether operand x (of a sum over loop xk) and y (over yk) are the same, or (`anyArray`) the same
// but for the array they load (same conversions, element type, shape and affine indices, with each
// sum's own reduction loop standing for K).
bool sameOperand(const Kernel& k, const Expr& x, int xk, const Expr& y, int yk, bool anyArray) {
  if (x->kind != y->kind || x->type != y->type) return false;
  if (x->kind == ExprKind::Cast) return sameOperand(k, x->operands[0], xk, y->operands[0], yk, anyArray);
  if (x->kind != ExprKind::Load || x->operands.size() != y->operands.size()) return false;
  if (anyArray ? arrayShape(k, x->array) != arrayShape(k, y->array) : x->array != y->array) return false;
  for (size_t i = 0; i < x->operands.size(); ++i) {
    auto fx = toAffine(x->operands[i]), fy = toAffine(y->operands[i]);
    if (!fx || !fy || fx->constant != fy->constant || fx->coeff(xk) != fy->coeff(yk)) return false;
    for (const auto* pair : {&*fx, &*fy})
      for (const auto& [id, c] : pair->coeffs)
        if (id != xk && id != yk && fx->coeff(id) != fy->coeff(id)) return false;
  }
  return true;
}

bool sameRows(const std::vector<ContractionRow>& x, const std::vector<ContractionRow>& y) {
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i)
    if (x[i].loop != y[i].loop || x[i].lo != y[i].lo || x[i].extent != y[i].extent) return false;
  return true;
}

// The statements read and write arrays of their own: none reads what another one writes, none
// writes what another one writes (the stacked tile evaluates every sum before any store).
bool independentStatements(const Kernel& k, const LoopNest& ln, std::vector<std::string>& reasons) {
  for (size_t s = 0; s < ln.body.size(); ++s)
    for (size_t t = 0; t < ln.body.size(); ++t) {
      if (s == t) continue;
      bool reads = false;
      visitExprs(ln.body[t].value, [&](const Expr& e) {
        reads |= e->kind == ExprKind::Load && e->array == ln.body[s].array;
      });
      if (reads || (s < t && ln.body[s].array == ln.body[t].array)) {
        reasons.push_back(fmt::format("mma: statement {} {} '{}', which statement {} writes (the stacked contraction "
                                      "stores after every sum)", t + 1, reads ? "reads" : "writes",
                                      k.params[size_t(ln.body[s].array)].name, s + 1));
        return false;
      }
    }
  return true;
}

// Several statements' contractions as one, stacked along the side whose operand differs, or the
// reasons why they are not one.
std::optional<Contraction> stack(const Kernel& k, const LoopNest& ln, std::vector<Contraction> cs,
                                 std::vector<std::string>& reasons) {
  if (!independentStatements(k, ln, reasons)) return std::nullopt;
  Contraction c = cs[0];
  bool shareA = true, shareB = true;
  for (const Contraction& x : cs) {
    if (x.type != c.type || x.kLo != c.kLo || x.kExtent != c.kExtent || x.batch != c.batch ||
        !sameRows(x.mRows, c.mRows) || !sameRows(x.nRows, c.nRows) || x.narrowOperands != c.narrowOperands) {
      reasons.push_back(fmt::format("mma: statements 1 and {} are contractions of other indices, extents or types; "
                                    "a stacked contraction needs the same M, N, K and batch",
                                    x.statement() + 1));
      return std::nullopt;
    }
    const int xk = x.kLoop()->id, ck = c.kLoop()->id;
    shareA &= sameOperand(k, x.a(), xk, c.a(), ck, false) && sameOperand(k, x.b(), xk, c.b(), ck, true);
    shareB &= sameOperand(k, x.b(), xk, c.b(), ck, false) && sameOperand(k, x.a(), xk, c.a(), ck, true);
  }
  if (!shareA && !shareB) {
    reasons.push_back(fmt::format("mma: the nest's {} statements do not share one operand with the others differing "
                                  "only in the array (a stacked contraction stages the shared one once)", cs.size()));
    return std::nullopt;
  }
  c.parts.clear();
  for (const Contraction& x : cs) c.parts.push_back(x.parts[0]);
  const ContractionRow statements{-1, 0, int64_t(cs.size()), "statement"};
  if (shareB) c.mRows.insert(c.mRows.begin(), statements), c.mExtent *= statements.extent;
  else c.nRows.insert(c.nRows.begin(), statements), c.nExtent *= statements.extent;
  return c;
}

}  // namespace

bool plainRows(const Contraction& c, bool isA) { return (isA ? c.mRows : c.nRows).size() == 1; }

bool stackedRows(const Contraction& c, bool isA) {
  const auto& rows = isA ? c.mRows : c.nRows;
  return !rows.empty() && rows[0].loop == -1;
}

std::string rowsText(const Kernel& k, const Contraction& c, bool isA) {
  if (plainRows(c, isA)) return "";
  std::vector<std::string> names, operands;
  for (const ContractionRow& r : isA ? c.mRows : c.nRows) names.push_back(r.name);
  if (stackedRows(c, isA))
    for (const ContractionPart& part : c.parts) operands.push_back(printExpr(isA ? part.a : part.b, &k));
  return fmt::format("{} = ({}){}{}", isA ? "M" : "N", fmt::join(names, ", "), operands.empty() ? "" : ": ",
                     fmt::join(operands, " | "));
}

void transpose(Contraction& c) {
  std::swap(c.m, c.n), std::swap(c.mLo, c.nLo), std::swap(c.mExtent, c.nExtent);
  std::swap(c.mRows, c.nRows), std::swap(c.aAlongK, c.bAlongK);
  for (ContractionPart& part : c.parts) std::swap(part.a, part.b);
}

ContractionMatch matchContraction(const Kernel& k, int nest) {
  ContractionMatch r;
  const LoopNest& ln = k.nests[size_t(nest)];
  if (ln.body.empty()) {
    r.reasons.push_back("mma: the nest has no statement");
    return r;
  }
  std::vector<Contraction> cs;
  for (size_t s = 0; s < ln.body.size(); ++s) {
    const Stmt& st = ln.body[s];
    const std::string which = ln.body.size() > 1 ? fmt::format("statement {} ", s + 1) : "the nest ";
    if (st.kind == StmtKind::Store && st.accumulate) {
      r.reasons.push_back(fmt::format("mma: {}accumulates (a[i] += v); an mma schedule computes plain stores", which));
      return r;
    }
    if (st.kind != StmtKind::Store) {
      r.reasons.push_back(fmt::format("mma: {}is a let; an mma schedule computes stores of contractions", which));
      return r;
    }
    std::vector<std::string> why;
    auto c = matchStatement(k, nest, int(s), why);
    if (!c) {
      for (std::string& w : why)
        r.reasons.push_back(ln.body.size() > 1 ? fmt::format("{} (statement {})", w, s + 1) : std::move(w));
      return r;
    }
    cs.push_back(std::move(*c));
  }
  if (cs.size() == 1) r.contraction = std::move(cs[0]);
  else r.contraction = stack(k, ln, std::move(cs), r.reasons);
  return r;
}

std::vector<EpilogueLoad> epilogueLoads(const LoopNest& nest, const Contraction& c) {
  std::vector<EpilogueLoad> out;
  for (size_t part = 0; part < c.parts.size(); ++part) {
    const Expr& sum = c.parts[part].sum;
    std::function<void(const Expr&, bool)> walk = [&](const Expr& e, bool conditional) {
      if (e.get() == sum.get()) return;
      if (e->kind == ExprKind::Load) {
        out.push_back({e, int(part), conditional});
        return;
      }
      const bool skips = e->kind == ExprKind::Select || (e->kind == ExprKind::Binary && isLogical(e->binaryOp));
      forEachChild(e, [&](const Expr& x) { walk(x, conditional || skips); });
    };
    walk(nest.body[size_t(c.parts[part].statement)].value, false);
  }
  return out;
}

}  // namespace rtcg
