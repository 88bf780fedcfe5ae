#include "ir/Printer.h"

#include <fmt/format.h>

#include <cmath>

namespace rtcg {

namespace {

// Binding strength of a printed expression, for minimal parenthesization.
int precedence(const Expr& e) {
  switch (e->kind) {
    case ExprKind::Binary:
      switch (e->binaryOp) {
        case BinaryOp::Or: return 1;
        case BinaryOp::And: return 2;
        case BinaryOp::Eq:
        case BinaryOp::Ne: return 3;
        case BinaryOp::Lt:
        case BinaryOp::Le:
        case BinaryOp::Gt:
        case BinaryOp::Ge: return 4;
        case BinaryOp::Add:
        case BinaryOp::Sub: return 5;
        case BinaryOp::Mul:
        case BinaryOp::Div:
        case BinaryOp::Mod: return 6;
      }
      return 0;
    case ExprKind::Unary: return 7;
    case ExprKind::IntImm:
    case ExprKind::FloatImm:
      // A negative literal binds like a unary minus.
      return (e->kind == ExprKind::IntImm ? e->intValue < 0 : std::signbit(e->floatValue)) ? 7 : 8;
    case ExprKind::Var:
    case ExprKind::Load:
    case ExprKind::Call:
    case ExprKind::Cast:
    case ExprKind::Select:
    case ExprKind::Reduce: return 8;
  }
  return 0;
}

std::string floatLiteral(double v, ScalarType t) {
  std::string s;
  if (std::isinf(v)) s = v > 0 ? "inf" : "-inf";
  else if (std::isnan(v)) s = "nan";
  else {
    // Shortest text that reads back as the same value of the type.
    s = t == ScalarType::F32 ? fmt::format("{}", (float)v) : fmt::format("{}", v);
    if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  }
  if (isHalf(t)) return fmt::format("{}({})", typeName(t), s);  // a folded conversion: no literal suffix
  return t == ScalarType::F32 ? s + "f32" : s;
}

struct Printer {
  const Kernel* k;

  std::string paramName(int idx) const {
    if (k && idx >= 0 && idx < (int)k->params.size()) return k->params[idx].name;
    return fmt::format("param{}", idx);
  }

  std::string loops(const std::vector<Loop>& ls) const {
    std::string out;
    for (size_t i = 0; i < ls.size(); ++i) {
      if (i) out += ", ";
      out += fmt::format("{} in {}..{}", ls[i].name, print(ls[i].lo), print(ls[i].hi));
    }
    return out;
  }

  std::string list(const std::vector<Expr>& es) const {
    std::string out;
    for (size_t i = 0; i < es.size(); ++i) out += (i ? ", " : "") + print(es[i]);
    return out;
  }

  // Prints `e`, parenthesized if it binds less tightly than `minPrec` requires.
  std::string operand(const Expr& e, int minPrec) const {
    std::string s = print(e);
    return precedence(e) < minPrec ? "(" + s + ")" : s;
  }

  std::string print(const Expr& e) const {
    switch (e->kind) {
      case ExprKind::IntImm:
        switch (e->type) {
          case ScalarType::Bool: return e->intValue ? "true" : "false";
          case ScalarType::I64: return fmt::format("{}i64", e->intValue);
          case ScalarType::U32: return fmt::format("{}u32", e->intValue);
          default: return fmt::format("{}", e->intValue);
        }
      case ExprKind::FloatImm: return floatLiteral(e->floatValue, e->type);
      case ExprKind::Var:
        if (!e->name.empty()) return e->name;
        if (e->varKind == VarKind::Size || e->varKind == VarKind::Scalar) return paramName(e->varId);
        return fmt::format("v{}", e->varId);
      case ExprKind::Load: return fmt::format("{}[{}]", paramName(e->array), list(e->operands));
      case ExprKind::Unary:
        return fmt::format("{}{}", e->unaryOp == UnaryOp::Neg ? "-" : "!", operand(e->operands[0], 8));
      case ExprKind::Binary: {
        int p = precedence(e);
        // Left-associative: the right operand needs parentheses at equal precedence.
        return fmt::format("{} {} {}", operand(e->operands[0], p), opSymbol(e->binaryOp),
                           operand(e->operands[1], p + 1));
      }
      case ExprKind::Call: return fmt::format("{}({})", fnName(e->mathFn), list(e->operands));
      case ExprKind::Cast: return fmt::format("{}({})", typeName(e->type), print(e->operands[0]));
      case ExprKind::Select: return fmt::format("select({})", list(e->operands));
      case ExprKind::Reduce:
        return fmt::format("{}({}, {})", reduceName(e->reduceOp), loops(e->loops), print(e->operands[0]));
    }
    return "<?>";
  }

  std::string stmt(const Stmt& s) const {
    switch (s.kind) {
      case StmtKind::Let:
        return fmt::format("let {}: {} = {};", s.letName.empty() ? fmt::format("v{}", s.letId) : s.letName,
                           typeName(s.value->type), print(s.value));
      case StmtKind::Store:
        return fmt::format("{}[{}] {} {};", paramName(s.array), list(s.indices),
                           s.accumulate ? accumSymbol(s.accumOp) : "=", print(s.value));
    }
    return "<?>";
  }

  std::string param(const Param& p) const {
    switch (p.kind) {
      case ParamKind::Size: {
        auto it = k->sizes.find(p.name);
        if (it != k->sizes.end()) return fmt::format("{}: int = {}", p.name, it->second);
        return p.name + ": int";
      }
      case ParamKind::Scalar: return fmt::format("{}: {}", p.name, typeName(p.type));
      case ParamKind::Array: {
        const char* mode = "";
        switch (p.mode) {
          case ArrayMode::In: mode = ""; break;
          case ArrayMode::Out: mode = "out "; break;
          case ArrayMode::InOut: mode = "inout "; break;
          case ArrayMode::Local: mode = "local "; break;
        }
        return fmt::format("{}{}: {}[{}]", mode, p.name, typeName(p.type), list(p.shape));
      }
    }
    return "<?>";
  }
};

}  // namespace

std::string printExpr(const Expr& e, const Kernel* k) { return Printer{k}.print(e); }

std::string printKernel(const Kernel& k) {
  Printer pr{&k};
  std::string out = fmt::format("kernel {}(", k.name);
  for (size_t i = 0; i < k.numSignatureParams(); ++i) out += (i ? ", " : "") + pr.param(k.params[i]);
  out += ") {\n";
  // The locals, declared before every nest (as the source may write them, `local t: f32[m];`).
  for (size_t i = k.numSignatureParams(); i < k.params.size(); ++i) out += "  " + pr.param(k.params[i]) + ";\n";
  for (const LoopNest& n : k.nests) {
    std::string indent = "  ";
    if (!n.loops.empty()) {
      out += fmt::format("  for {} {{\n", pr.loops(n.loops));
      indent = "    ";
    }
    for (const Stmt& s : n.body) out += indent + pr.stmt(s) + "\n";
    if (!n.loops.empty()) out += "  }\n";
  }
  out += "}\n";
  return out;
}

}  // namespace rtcg
