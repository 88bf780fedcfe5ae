// The stores of the statements: an assignment, or with `stores: streaming` the streaming store
// __stcs(&a[i], v) for the statements the plan streams (NestPlan::streamedStores): st.global.cs,
// evict-first, so an output written once does not push out of L2 the inputs other blocks still
// read. The value is the same either way; only its place in the caches differs.
#include "codegen/CudaTypes.h"
#include "codegen/EmitContext.h"

namespace rtcg::emit {

C::Stmt emitStore(const EmitContext& ctx, size_t statement, const C::ExprP& target, const C::ExprP& value) {
  if (!ctx.plan.streams(statement)) return C::assign(target, "=", value);
  // __stcs is overloaded per element type, and a value of another C type makes the call ambiguous
  // where an assignment would convert it. The IR value has the element type (IR.h); floating-point
  // code keeps it in C (float literals and math functions), but integer arithmetic in C may be
  // int where the element is long long (or the reverse through an index), so integers are cast.
  const ScalarType element = ctx.k.params[ctx.nest.body[statement].array].type;
  const std::string type = cudaTypeName(element);
  C::ExprP v = value;
  if (isIntegral(element) && !(v->kind == C::ExprKind::Cast && v->text == type))
    v = C::castTo(type, v);
  return C::exprStmt(C::call("__stcs", {C::unary("&", target), v}));
}

}  // namespace rtcg::emit
