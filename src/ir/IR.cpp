#include "ir/IR.h"

#include <fmt/format.h>

#include "rtcg/Half.h"
#include "support/Error.h"

namespace rtcg {

const char* typeName(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I32: return "i32";
    case ScalarType::I64: return "i64";
    case ScalarType::F32: return "f32";
    case ScalarType::F64: return "f64";
    case ScalarType::F16: return "f16";
    case ScalarType::BF16: return "bf16";
    case ScalarType::I8: return "i8";
    case ScalarType::U8: return "u8";
    case ScalarType::U32: return "u32";
  }
  RTCG_ASSERT(false, "bad ScalarType");
}

const char* cudaTypeName(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I32: return "int";
    case ScalarType::I64: return "long long";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
    case ScalarType::F16: return "__half";
    case ScalarType::BF16: return "__nv_bfloat16";
    case ScalarType::I8: return "signed char";
    case ScalarType::U8: return "unsigned char";
    case ScalarType::U32: return "unsigned int";
  }
  RTCG_ASSERT(false, "bad ScalarType");
}

std::optional<ScalarType> parseTypeName(const std::string& s) {
  if (s == "bool") return ScalarType::Bool;
  if (s == "i32") return ScalarType::I32;
  if (s == "i64") return ScalarType::I64;
  if (s == "f32") return ScalarType::F32;
  if (s == "f64") return ScalarType::F64;
  if (s == "f16") return ScalarType::F16;
  if (s == "bf16") return ScalarType::BF16;
  if (s == "i8") return ScalarType::I8;
  if (s == "u8") return ScalarType::U8;
  if (s == "u32") return ScalarType::U32;
  return std::nullopt;
}

int typeBytes(ScalarType t) {
  switch (t) {
    case ScalarType::Bool:
    case ScalarType::I8:
    case ScalarType::U8: return 1;
    case ScalarType::I32:
    case ScalarType::U32: return 4;
    case ScalarType::I64: return 8;
    case ScalarType::F32: return 4;
    case ScalarType::F64: return 8;
    case ScalarType::F16:
    case ScalarType::BF16: return 2;
  }
  RTCG_ASSERT(false, "bad ScalarType");
}

double roundToFloat(double v, ScalarType t) {
  switch (t) {
    case ScalarType::F32: return double(float(v));
    case ScalarType::F16: return double(f16(v));
    case ScalarType::BF16: return double(bf16(v));
    default: return v;
  }
}

double intToFloat(int64_t v, ScalarType t) {
  switch (t) {
    case ScalarType::F32: return double(float(v));
    case ScalarType::F64: return double(v);
    default: return roundToFloat(half_detail::roundToOdd(v), t);  // no double rounding
  }
}

const char* opSymbol(BinaryOp op) {
  switch (op) {
    case BinaryOp::Add: return "+";
    case BinaryOp::Sub: return "-";
    case BinaryOp::Mul: return "*";
    case BinaryOp::Div: return "/";
    case BinaryOp::Mod: return "%";
    case BinaryOp::Lt: return "<";
    case BinaryOp::Le: return "<=";
    case BinaryOp::Gt: return ">";
    case BinaryOp::Ge: return ">=";
    case BinaryOp::Eq: return "==";
    case BinaryOp::Ne: return "!=";
    case BinaryOp::And: return "&&";
    case BinaryOp::Or: return "||";
  }
  RTCG_ASSERT(false, "bad BinaryOp");
}

const char* fnName(MathFn fn) {
  switch (fn) {
    case MathFn::Sqrt: return "sqrt";
    case MathFn::Exp: return "exp";
    case MathFn::Log: return "log";
    case MathFn::Sin: return "sin";
    case MathFn::Cos: return "cos";
    case MathFn::Abs: return "abs";
    case MathFn::Min: return "min";
    case MathFn::Max: return "max";
    case MathFn::Pow: return "pow";
    case MathFn::Fma: return "fma";
    case MathFn::Floor: return "floor";
  }
  RTCG_ASSERT(false, "bad MathFn");
}

int fnArity(MathFn fn) {
  switch (fn) {
    case MathFn::Min:
    case MathFn::Max:
    case MathFn::Pow: return 2;
    case MathFn::Fma: return 3;
    default: return 1;
  }
}

const char* reduceName(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Product: return "product";
    case ReduceOp::Max: return "max";
    case ReduceOp::Min: return "min";
  }
  RTCG_ASSERT(false, "bad ReduceOp");
}

const char* accumSymbol(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "+=";
    case ReduceOp::Product: return "*=";
    case ReduceOp::Max: return "max=";
    case ReduceOp::Min: return "min=";
  }
  RTCG_ASSERT(false, "bad ReduceOp");
}

bool accumulationSupported(ReduceOp op, ScalarType t, std::string* why) {
  auto refuse = [&](std::string reason) {
    if (why) *why = std::move(reason);
    return false;
  };
  if (op == ReduceOp::Product)
    return refuse("the GPU has no atomic multiplication; accumulate with '+=', 'max=' or 'min='");
  if (t == ScalarType::Bool) return refuse("a bool cannot be accumulated");
  if (isHalf(t))
    return refuse(fmt::format("accumulating into {} elements is not supported (their sums would round at every "
                              "update); accumulate into an f32 array",
                              typeName(t)));
  if (isNarrowInt(t))
    return refuse(fmt::format("the GPU has no atomic update of {} elements; accumulate into an i32 array", typeName(t)));
  if (isFloat(t) && op != ReduceOp::Sum)
    return refuse(fmt::format("the GPU has no atomic {} of {} values; '{}' takes i32, u32 and i64 elements, and '+=' "
                              "takes {}",
                              reduceName(op), typeName(t), accumSymbol(op), typeName(t)));
  return true;
}

bool isComparison(BinaryOp op) {
  return op == BinaryOp::Lt || op == BinaryOp::Le || op == BinaryOp::Gt || op == BinaryOp::Ge ||
         op == BinaryOp::Eq || op == BinaryOp::Ne;
}
bool isLogical(BinaryOp op) { return op == BinaryOp::And || op == BinaryOp::Or; }

static std::shared_ptr<ExprNode> node(ExprKind k, ScalarType t, SourceLoc loc) {
  auto n = std::make_shared<ExprNode>();
  n->kind = k;
  n->type = t;
  n->loc = loc;
  return n;
}

Expr intImm(int64_t v, ScalarType t, SourceLoc loc) {
  auto n = node(ExprKind::IntImm, t, loc);
  n->intValue = v;
  return n;
}
Expr floatImm(double v, ScalarType t, SourceLoc loc) {
  auto n = node(ExprKind::FloatImm, t, loc);
  n->floatValue = v;
  return n;
}
Expr boolImm(bool v, SourceLoc loc) { return intImm(v ? 1 : 0, ScalarType::Bool, loc); }
Expr var(VarKind kind, int id, std::string name, ScalarType t, SourceLoc loc) {
  auto n = node(ExprKind::Var, t, loc);
  n->varKind = kind;
  n->varId = id;
  n->name = std::move(name);
  return n;
}
// The constructors check what is cheap to check (operands present, arities); types and scopes
// are verifyKernel's (ir/Verify.h).
static void requireOperands(const std::vector<Expr>& ops, const char* what) {
  for (const Expr& o : ops) RTCG_ASSERT(o != nullptr, std::string(what) + " with a missing operand");
}

Expr load(int array, ScalarType elemType, std::vector<Expr> indices, SourceLoc loc) {
  RTCG_ASSERT(array >= 0, "load of no array");
  requireOperands(indices, "load");
  auto n = node(ExprKind::Load, elemType, loc);
  n->array = array;
  n->operands = std::move(indices);
  return n;
}
Expr unary(UnaryOp op, Expr a, SourceLoc loc) {
  RTCG_ASSERT(a != nullptr, "unary operator with a missing operand");
  auto n = node(ExprKind::Unary, op == UnaryOp::Not ? ScalarType::Bool : a->type, loc);
  n->unaryOp = op;
  n->operands = {std::move(a)};
  return n;
}
Expr binary(BinaryOp op, Expr a, Expr b, SourceLoc loc) {
  RTCG_ASSERT(a && b, "binary operator with a missing operand");
  ScalarType t = (isComparison(op) || isLogical(op)) ? ScalarType::Bool : a->type;
  auto n = node(ExprKind::Binary, t, loc);
  n->binaryOp = op;
  n->operands = {std::move(a), std::move(b)};
  return n;
}
Expr call(MathFn fn, std::vector<Expr> args, SourceLoc loc) {
  RTCG_ASSERT(args.size() == (size_t)fnArity(fn), fmt::format("{} with {} arguments", fnName(fn), args.size()));
  requireOperands(args, "call");
  auto n = node(ExprKind::Call, args[0]->type, loc);
  n->mathFn = fn;
  n->operands = std::move(args);
  return n;
}
Expr cast(ScalarType t, Expr a, SourceLoc loc) {
  RTCG_ASSERT(a != nullptr, "cast of a missing operand");
  auto n = node(ExprKind::Cast, t, loc);
  n->operands = {std::move(a)};
  return n;
}
Expr select(Expr cond, Expr ifTrue, Expr ifFalse, SourceLoc loc) {
  RTCG_ASSERT(cond && ifTrue && ifFalse, "select with a missing operand");
  auto n = node(ExprKind::Select, ifTrue->type, loc);
  n->operands = {std::move(cond), std::move(ifTrue), std::move(ifFalse)};
  return n;
}
Expr reduce(ReduceOp op, std::vector<Loop> loops, Expr body, SourceLoc loc) {
  RTCG_ASSERT(body != nullptr && !loops.empty(), "reduction without a body or loops");
  for (const Loop& l : loops) RTCG_ASSERT(l.lo && l.hi, "reduction loop '" + l.name + "' without bounds");
  auto n = node(ExprKind::Reduce, body->type, loc);
  n->reduceOp = op;
  n->loops = std::move(loops);
  n->operands = {std::move(body)};
  return n;
}
Expr withOperands(const Expr& e, std::vector<Expr> operands, std::vector<Loop> loops) {
  RTCG_ASSERT(operands.size() == e->operands.size(), "withOperands changes the operand count");
  requireOperands(operands, "withOperands");
  auto n = std::make_shared<ExprNode>(*e);
  n->operands = std::move(operands);
  if (e->kind == ExprKind::Reduce) n->loops = std::move(loops);
  return n;
}

bool Kernel::isBound() const {
  for (const Param& p : params)
    if (p.kind == ParamKind::Size && !sizes.count(p.name)) return false;
  return true;
}

size_t Kernel::numSignatureParams() const {
  size_t n = params.size();
  while (n > 0 && params[n - 1].isLocal()) --n;
  return n;
}

int Kernel::findParam(const std::string& n) const {
  for (size_t i = 0; i < params.size(); ++i)
    if (params[i].name == n) return (int)i;
  return -1;
}

const Kernel* Program::find(const std::string& n) const {
  for (const Kernel& k : kernels)
    if (k.name == n) return &k;
  return nullptr;
}

bool isRangeRead(const Expr& bound) { return bound && bound->kind == ExprKind::Load; }
bool isDataDependent(const Loop& l) { return isRangeRead(l.lo) || isRangeRead(l.hi); }

}  // namespace rtcg
