#include "codegen/CPrinter.h"

#include <bit>
#include <cctype>
#include <cmath>
#include <fmt/format.h>
#include <limits>
#include <set>
#include <string_view>

#include "support/Error.h"

namespace rtcg::c {

namespace {

bool isIdentifier(const std::string& s) {
  if (s.empty() || !(std::isalpha((unsigned char)s[0]) || s[0] == '_')) return false;
  for (char ch : s)
    if (!(std::isalnum((unsigned char)ch) || ch == '_')) return false;
  return true;
}

const std::string& checkIdentifier(const std::string& s) {
  RTCG_ASSERT(isIdentifier(s), "C printer: invalid identifier '" + s + "'");
  return s;
}

// A scalar or 16-byte vector type, optionally `const` and a pointer (`const float4*`), and a
// pointer optionally `__restrict__` (`const float* __restrict__`).
const std::string& checkType(const std::string& t) {
  static const std::set<std::string> types = {"void", "bool", "int", "unsigned int", "long long", "unsigned long long", "float", "double",
                                              "float2", "float4", "int4", "uint4", "double2", "longlong2", "__half", "__nv_bfloat16", "signed char",
                                              "unsigned char", "rtcg_tensor_map"};
  std::string_view base = t;
  auto strip = [&](std::string_view affix, bool front) {
    bool has = front ? base.starts_with(affix) : base.ends_with(affix);
    if (has) base = front ? base.substr(affix.size()) : base.substr(0, base.size() - affix.size());
    return has;
  };
  bool isConst = strip("const ", true);
  bool isRestrict = strip(" __restrict__", false);
  bool isPointer = strip("*", false);
  RTCG_ASSERT(types.count(std::string(base)) > 0 && (isPointer || (!isConst && !isRestrict)),
              "C printer: unknown type '" + t + "'");
  return t;
}

// Precedence levels, higher binds tighter.
constexpr int kPrimary = 16, kUnary = 14, kTernary = 3;

int binaryPrecedence(const std::string& op) {
  if (op == "*" || op == "/" || op == "%") return 13;
  if (op == "+" || op == "-") return 12;
  if (op == "<<" || op == ">>") return 11;
  if (op == "<" || op == "<=" || op == ">" || op == ">=") return 10;
  if (op == "==" || op == "!=") return 9;
  if (op == "&") return 8;
  if (op == "^") return 7;
  if (op == "|") return 6;
  if (op == "&&") return 5;
  if (op == "||") return 4;
  RTCG_ASSERT(false, "C printer: unknown binary operator '" + op + "'");
}

int precedence(const Expr& e) {
  switch (e.kind) {
    case ExprKind::IntLit: return e.intValue < 0 ? kUnary : kPrimary;
    case ExprKind::FloatLit: return std::signbit(e.floatValue) ? kUnary : kPrimary;
    case ExprKind::BoolLit:
    case ExprKind::Name:
    case ExprKind::Member:
    case ExprKind::Call:
    case ExprKind::Index: return kPrimary;
    case ExprKind::Unary:
    case ExprKind::Cast: return kUnary;
    case ExprKind::Binary: return binaryPrecedence(e.text);
    case ExprKind::Ternary: return kTernary;
  }
  RTCG_ASSERT(false, "C printer: bad expression kind");
}

std::string intLiteral(const Expr& e) {
  int64_t v = e.intValue;
  if (e.isUnsigned) {
    RTCG_ASSERT(v >= 0 && v <= std::numeric_limits<uint32_t>::max(),
                fmt::format("C printer: unsigned literal {} does not fit unsigned int", v));
    return fmt::format("{}u", v);
  }
  if (e.longLong) {
    if (v == std::numeric_limits<int64_t>::min()) return "(-9223372036854775807LL - 1LL)";
    return fmt::format("{}LL", v);
  }
  RTCG_ASSERT(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
              fmt::format("C printer: int literal {} does not fit int", v));
  if (v == std::numeric_limits<int32_t>::min()) return "(-2147483647 - 1)";
  return fmt::format("{}", v);
}

std::string floatLiteral(const Expr& e) {
  double v = e.floatValue;
  // Infinities and NaNs have no literal: reinterpret their bits.
  if (!std::isfinite(v)) {
    if (e.isFloat32) return fmt::format("__int_as_float(0x{:08x})", std::bit_cast<uint32_t>((float)v));
    return fmt::format("__longlong_as_double(0x{:016x}LL)", std::bit_cast<uint64_t>(v));
  }
  std::string s = e.isFloat32 ? fmt::format("{}", (float)v) : fmt::format("{}", v);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  if (e.isFloat32) s += "f";
  return s;
}

std::string print(const Expr& e);

// Prints `e` as an operand that needs at least precedence `min`.
std::string operand(const ExprP& e, int min) {
  RTCG_ASSERT(e != nullptr, "C printer: null expression");
  std::string s = print(*e);
  return precedence(*e) < min ? "(" + s + ")" : s;
}

std::string print(const Expr& e) {
  switch (e.kind) {
    case ExprKind::IntLit: return intLiteral(e);
    case ExprKind::FloatLit: return floatLiteral(e);
    case ExprKind::BoolLit: return e.intValue ? "true" : "false";
    case ExprKind::Name: return checkIdentifier(e.text);
    case ExprKind::Member: return operand(e.args.at(0), kPrimary) + "." + checkIdentifier(e.text);
    case ExprKind::Unary: {
      RTCG_ASSERT(e.text == "-" || e.text == "!" || e.text == "&", "C printer: unknown unary operator '" + e.text + "'");
      // `-(-x)` and `!(-x)` keep the parentheses: `--x` would be a decrement.
      return e.text + operand(e.args.at(0), kUnary + 1);
    }
    case ExprKind::Binary: {
      int p = binaryPrecedence(e.text);
      // Logical operators of mixed kinds are parenthesized for the reader (a || (b && c)).
      int leftMin = p, rightMin = p + 1;
      auto isAnd = [](const ExprP& x) { return x->kind == ExprKind::Binary && x->text == "&&"; };
      if (e.text == "||") {
        if (isAnd(e.args.at(0))) leftMin = binaryPrecedence("&&") + 1;
        if (isAnd(e.args.at(1))) rightMin = binaryPrecedence("&&") + 1;
      }
      // Comparisons compared with == or != are parenthesized too: (a < 0) != (b < 0).
      if (e.text == "==" || e.text == "!=") leftMin = rightMin = 11;
      // Shifts and | parenthesize every binary operand, for the reader (1LL << (31 + l)).
      if (e.text == "<<" || e.text == ">>" || e.text == "|") leftMin = rightMin = kUnary;
      return operand(e.args.at(0), leftMin) + " " + e.text + " " + operand(e.args.at(1), rightMin);
    }
    case ExprKind::Call: {
      std::string s = checkIdentifier(e.text) + "(";
      for (size_t i = 0; i < e.args.size(); ++i) s += (i ? ", " : "") + operand(e.args[i], kTernary);
      return s + ")";
    }
    case ExprKind::Cast: return "(" + checkType(e.text) + ")" + operand(e.args.at(0), kUnary);
    case ExprKind::Ternary:
      return operand(e.args.at(0), kTernary + 1) + " ? " + operand(e.args.at(1), kTernary + 1) + " : " +
             operand(e.args.at(2), kTernary);
    case ExprKind::Index: return operand(e.args.at(0), kPrimary) + "[" + print(*e.args.at(1)) + "]";
  }
  RTCG_ASSERT(false, "C printer: bad expression kind");
}

void printBody(const std::vector<Stmt>& body, int indent, std::string& out);

void printStmtTo(const Stmt& s, int indent, std::string& out) {
  std::string pad(indent * 2, ' ');
  switch (s.kind) {
    case StmtKind::Decl: {
      std::string q = s.isConstexpr ? "constexpr " : s.isConst ? "const " : "";
      out += pad + q + checkType(s.type) + " " + checkIdentifier(s.name);
      if (s.size > 0) out += "[" + std::to_string(s.size) + "]";  // a thread's array (registers)
      if (s.init) out += " = " + printExpr(s.init);
      out += ";\n";
      return;
    }
    case StmtKind::Assign:
      RTCG_ASSERT(s.op == "=" || s.op == "+=" || s.op == "-=" || s.op == "*=",
                  "C printer: unknown assignment operator '" + s.op + "'");
      out += pad + operand(s.lhs, kUnary) + " " + s.op + " " + printExpr(s.rhs) + ";\n";
      return;
    case StmtKind::For: {
      if (s.unroll == Unroll::Full) out += pad + "#pragma unroll\n";
      if (s.unroll == Unroll::Never) out += pad + "#pragma unroll 1\n";
      const std::string& v = checkIdentifier(s.name);
      out += pad + "for (" + checkType(s.type) + " " + v + " = " + printExpr(s.lo) + "; " + v + " < " +
             operand(s.hi, 11) + "; ++" + v + ") {\n";
      printBody(s.body, indent + 1, out);
      out += pad + "}\n";
      return;
    }
    case StmtKind::If:
      out += pad + "if (" + printExpr(s.cond) + ") {\n";
      printBody(s.body, indent + 1, out);
      if (!s.elseBody.empty()) {
        out += pad + "} else {\n";
        printBody(s.elseBody, indent + 1, out);
      }
      out += pad + "}\n";
      return;
    case StmtKind::Block:
      out += pad + "{\n";
      printBody(s.body, indent + 1, out);
      out += pad + "}\n";
      return;
    case StmtKind::Comment:
      for (const std::string& line : s.lines) out += pad + (line.empty() ? "//" : "// " + line) + "\n";
      return;
    case StmtKind::SyncThreads: out += pad + "__syncthreads();\n"; return;
    case StmtKind::ExprStmt:
      RTCG_ASSERT(s.init && s.init->kind == ExprKind::Call, "C printer: an expression statement is a call");
      out += pad + printExpr(s.init) + ";\n";
      return;
    case StmtKind::Return: out += pad + (s.cond ? "return " + printExpr(s.cond) + ";\n" : "return;\n"); return;
    case StmtKind::Blank: out += "\n"; return;
    case StmtKind::SharedArray:
      if (s.isExtern) {
        out += pad + fmt::format("extern __shared__ __align__({}) ", s.align) + checkType(s.type) + " " + checkIdentifier(s.name) + "[];\n";
      } else if (s.isScalar) {
        out += pad + "__shared__ " + checkType(s.type) + " " + checkIdentifier(s.name) + ";\n";
      } else {
        RTCG_ASSERT(s.size > 0, "C printer: a shared array needs a positive size");
        // 16-byte aligned so that NVVM can merge neighbouring reads of a tile into vector loads.
        out += pad + "__shared__ __align__(16) " + checkType(s.type) + " " + checkIdentifier(s.name) + fmt::format("[{}];\n", s.size);
      }
      return;
  }
  RTCG_ASSERT(false, "C printer: bad statement kind");
}

void printBody(const std::vector<Stmt>& body, int indent, std::string& out) {
  for (const Stmt& s : body) printStmtTo(s, indent, out);
}

std::string printParam(const Param& p) {
  if (p.gridConstant) return "const __grid_constant__ " + checkType(p.type) + " " + checkIdentifier(p.name);
  std::string s = p.constPointee ? "const " : "";
  s += checkType(p.type);
  if (p.pointer) s += "*";
  if (p.restrict) s += " __restrict__";
  return s + " " + checkIdentifier(p.name);
}

}  // namespace

std::string printExpr(const ExprP& e) {
  RTCG_ASSERT(e != nullptr, "C printer: null expression");
  return print(*e);
}

std::string printStmt(const Stmt& s, int indent) {
  std::string out;
  printStmtTo(s, indent, out);
  return out;
}

std::string printFunction(const Function& f) {
  std::string out;
  for (const std::string& line : f.commentLines) out += line.empty() ? "//\n" : "// " + line + "\n";
  switch (f.kind) {
    case FunctionKind::Kernel:
      RTCG_ASSERT(f.returnType == "void", "C printer: a kernel returns void");
      out += "extern \"C\" __global__ void ";
      if (f.launchBounds > 0 && f.minBlocks > 0) out += fmt::format("__launch_bounds__({}, {}) ", f.launchBounds, f.minBlocks);
      else if (f.launchBounds > 0) out += fmt::format("__launch_bounds__({}) ", f.launchBounds);
      break;
    case FunctionKind::DeviceInline:
      out += "static __device__ __forceinline__ " + checkType(f.returnType) + " ";
      break;
  }
  out += checkIdentifier(f.name) + "(";
  for (size_t i = 0; i < f.params.size(); ++i) out += (i ? ", " : "") + printParam(f.params[i]);
  out += ") {\n";
  printBody(f.body, 1, out);
  out += "}\n";
  return out;
}

std::string printModule(const Module& m) {
  std::string out;
  for (const std::string& line : m.commentLines) out += line.empty() ? "//\n" : fmt::format("// {}\n", line);
  for (const std::string& prelude : m.preludes) out += "\n" + prelude + "\n";
  for (const GlobalArray& g : m.globals) {
    RTCG_ASSERT(g.size > 0, "C printer: a global array needs a positive size");
    out += '\n';
    for (const std::string& line : g.commentLines) out += line.empty() ? "//\n" : fmt::format("// {}\n", line);
    std::string align = g.align > 0 ? fmt::format("__align__({}) ", g.align) : "";
    out += "__device__ " + align + checkType(g.type) + " " + checkIdentifier(g.name) + fmt::format("[{}];\n", g.size);
  }
  for (const Function& f : m.functions) {
    out += '\n';
    out += printFunction(f);
  }
  return out;
}

}  // namespace rtcg::c
