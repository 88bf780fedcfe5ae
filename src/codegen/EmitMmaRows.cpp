// The rows of a contraction's sides (schedule/Contraction.h): a row point of M or N decomposed
// into the loops it stands for (collapsed indices, the last fastest) and, where the side stacks
// several statements, the statement it belongs to; each operand lowered for that statement.
#include "codegen/EmitMmaParts.h"

namespace rtcg::emit::mma {

C::ExprP bindRow(const MmaPlan& p, bool isA, const C::ExprP& point, Env& env) {
  const std::vector<ContractionRow>& rows = isA ? p.c.mRows : p.c.nRows;
  if (plainRows(p.c, isA)) {
    env.vars[rows[0].loop] = C::sum({lit(rows[0].lo), point});
    return nullptr;
  }
  C::ExprP part;
  int64_t stride = 1;
  for (size_t d = rows.size(); d-- > 0;) {
    C::ExprP v = stride == 1 ? point : bin("/", point, lit(stride));
    if (d > 0) v = bin("%", v, lit(rows[d].extent));
    if (rows[d].loop < 0) part = v;
    else env.vars[rows[d].loop] = C::sum({lit(rows[d].lo), v});
    stride *= std::max<int64_t>(1, rows[d].extent);
  }
  return part;
}

void bindK(const MmaPlan& p, const C::ExprP& kq, Env& env) {
  // parts[0]'s loop is the contraction's own (Contraction::kLoop).
  for (const ContractionPart& part : p.c.parts) env.vars[part.kLoop->id] = C::sum({lit(p.c.kLo), kq});
}

C::ExprP operandAt(const MmaPlan& p, bool isA, const C::ExprP& part,
                   const std::function<C::ExprP(const Expr& operand)>& lowerOne) {
  if (!part) return lowerOne(isA ? p.c.a() : p.c.b());
  C::ExprP chosen = lowerOne(isA ? p.c.parts.back().a : p.c.parts.back().b);
  for (size_t q = p.c.parts.size() - 1; q-- > 0;)
    chosen = C::ternary(bin("==", part, lit(int64_t(q))), lowerOne(isA ? p.c.parts[q].a : p.c.parts[q].b),
                        std::move(chosen));
  return chosen;
}

C::Stmt chooseStatement(const MmaPlan& p, const C::ExprP& part, const std::function<std::vector<C::Stmt>(size_t q)>& body) {
  if (!part) return C::block(body(0));
  C::Stmt chosen = C::block(body(p.c.parts.size() - 1));
  for (size_t q = p.c.parts.size() - 1; q-- > 0;)
    chosen = C::ifThen(bin("==", part, lit(int64_t(q))), body(q), {std::move(chosen)});
  return chosen;
}

}  // namespace rtcg::emit::mma
