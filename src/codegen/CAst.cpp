#include "codegen/CAst.h"

#include <sstream>

namespace rtcg::c {

static std::shared_ptr<Expr> make(ExprKind k) {
  auto e = std::make_shared<Expr>();
  e->kind = k;
  return e;
}

ExprP intLit(int64_t v, bool longLong) {
  auto e = make(ExprKind::IntLit);
  e->intValue = v;
  e->longLong = longLong;
  return e;
}
ExprP uintLit(uint32_t v) {
  auto e = make(ExprKind::IntLit);
  e->intValue = v;
  e->isUnsigned = true;
  return e;
}
ExprP floatLit(double v, bool isFloat32) {
  auto e = make(ExprKind::FloatLit);
  e->floatValue = v;
  e->isFloat32 = isFloat32;
  return e;
}
ExprP boolLit(bool v) {
  auto e = make(ExprKind::BoolLit);
  e->intValue = v ? 1 : 0;
  return e;
}
ExprP name(std::string id) {
  auto e = make(ExprKind::Name);
  e->text = std::move(id);
  return e;
}
ExprP member(ExprP object, std::string field) {
  auto e = make(ExprKind::Member);
  e->text = std::move(field);
  e->args = {std::move(object)};
  return e;
}
ExprP unary(std::string op, ExprP a) {
  auto e = make(ExprKind::Unary);
  e->text = std::move(op);
  e->args = {std::move(a)};
  return e;
}
ExprP binary(std::string op, ExprP a, ExprP b) {
  auto e = make(ExprKind::Binary);
  e->text = std::move(op);
  e->args = {std::move(a), std::move(b)};
  return e;
}
ExprP call(std::string fn, std::vector<ExprP> args) {
  auto e = make(ExprKind::Call);
  e->text = std::move(fn);
  e->args = std::move(args);
  return e;
}
ExprP castTo(std::string type, ExprP a) {
  auto e = make(ExprKind::Cast);
  e->text = std::move(type);
  e->args = {std::move(a)};
  return e;
}
ExprP ternary(ExprP cond, ExprP a, ExprP b) {
  auto e = make(ExprKind::Ternary);
  e->args = {std::move(cond), std::move(a), std::move(b)};
  return e;
}
ExprP index(ExprP array, ExprP idx) {
  auto e = make(ExprKind::Index);
  e->args = {std::move(array), std::move(idx)};
  return e;
}

static bool isLit(const ExprP& e, int64_t v) { return e->kind == ExprKind::IntLit && e->intValue == v; }

ExprP sum(const std::vector<ExprP>& terms) {
  ExprP acc;
  int64_t constant = 0;
  bool longLong = false;
  for (const ExprP& t : terms) {
    if (t->kind == ExprKind::IntLit) {
      constant += t->intValue;
      longLong = longLong || t->longLong;
      continue;
    }
    acc = acc ? binary("+", acc, t) : t;
  }
  if (!acc) return intLit(constant, longLong);
  if (constant > 0) return binary("+", acc, intLit(constant, longLong));
  if (constant < 0) return binary("-", acc, intLit(-constant, longLong));
  return acc;
}

ExprP product(ExprP a, ExprP b) {
  if (isLit(a, 0) || isLit(b, 0)) return intLit(0, a->longLong || b->longLong);
  if (isLit(a, 1)) return b;
  if (isLit(b, 1)) return a;
  if (a->kind == ExprKind::IntLit && b->kind == ExprKind::IntLit)
    return intLit(a->intValue * b->intValue, a->longLong || b->longLong);
  return binary("*", std::move(a), std::move(b));
}

Stmt localArray(std::string type, std::string name, int64_t elements) {
  Stmt s = decl(std::move(type), std::move(name), nullptr, false);
  s.size = elements;
  return s;
}

Stmt decl(std::string type, std::string name, ExprP init, bool isConst) {
  Stmt s;
  s.kind = StmtKind::Decl;
  s.type = std::move(type);
  s.name = std::move(name);
  s.init = std::move(init);
  s.isConst = isConst;
  return s;
}
Stmt constexprDecl(std::string type, std::string name, ExprP init) {
  Stmt s = decl(std::move(type), std::move(name), std::move(init), false);
  s.isConstexpr = true;
  return s;
}
Stmt assign(ExprP lhs, std::string op, ExprP rhs) {
  Stmt s;
  s.kind = StmtKind::Assign;
  s.lhs = std::move(lhs);
  s.op = std::move(op);
  s.rhs = std::move(rhs);
  return s;
}
Stmt forLoop(std::string type, std::string var, ExprP lo, ExprP hi, Unroll unroll, std::vector<Stmt> body) {
  Stmt s;
  s.kind = StmtKind::For;
  s.type = std::move(type);
  s.name = std::move(var);
  s.lo = std::move(lo);
  s.hi = std::move(hi);
  s.unroll = unroll;
  s.body = std::move(body);
  return s;
}
Stmt ifThen(ExprP cond, std::vector<Stmt> body, std::vector<Stmt> elseBody) {
  Stmt s;
  s.kind = StmtKind::If;
  s.cond = std::move(cond);
  s.body = std::move(body);
  s.elseBody = std::move(elseBody);
  return s;
}
Stmt block(std::vector<Stmt> body) {
  Stmt s;
  s.kind = StmtKind::Block;
  s.body = std::move(body);
  return s;
}
Stmt comment(std::string text) {
  Stmt s;
  s.kind = StmtKind::Comment;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) s.lines.push_back(line);
  if (s.lines.empty()) s.lines.push_back("");
  return s;
}
Stmt syncThreads() {
  Stmt s;
  s.kind = StmtKind::SyncThreads;
  return s;
}
Stmt returnStmt(ExprP value) {
  Stmt s;
  s.kind = StmtKind::Return;
  s.cond = std::move(value);
  return s;
}
Stmt blank() {
  Stmt s;
  s.kind = StmtKind::Blank;
  return s;
}

Stmt sharedArray(std::string type, std::string name, int64_t elements) {
  Stmt s;
  s.kind = StmtKind::SharedArray;
  s.type = std::move(type);
  s.name = std::move(name);
  s.size = elements;
  return s;
}
Stmt externSharedArray(std::string type, std::string name, int64_t align) {
  Stmt s = sharedArray(std::move(type), std::move(name), 0);
  s.isExtern = true;
  s.align = align;
  return s;
}

Stmt sharedScalar(std::string type, std::string name) {
  Stmt s = sharedArray(std::move(type), std::move(name), 0);
  s.isScalar = true;
  return s;
}
Stmt exprStmt(ExprP call) {
  Stmt s;
  s.kind = StmtKind::ExprStmt;
  s.init = std::move(call);
  return s;
}

namespace {

bool exprUses(const ExprP& e, const std::string& name) {
  if (!e) return false;
  if (e->kind == ExprKind::Name && e->text == name) return true;
  for (const ExprP& a : e->args)
    if (exprUses(a, name)) return true;
  return false;
}

}  // namespace

bool usesName(const std::vector<Stmt>& stmts, const std::string& name) {
  for (const Stmt& s : stmts) {
    for (const ExprP* e : {&s.init, &s.lhs, &s.rhs, &s.lo, &s.hi, &s.cond})
      if (exprUses(*e, name)) return true;
    if (usesName(s.body, name) || usesName(s.elseBody, name)) return true;
  }
  return false;
}

}  // namespace rtcg::c
