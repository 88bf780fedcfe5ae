// Structural hash: a canonical text of the kernel without names or locations, hashed.
#include <fmt/format.h>

#include <bit>
#include <cstring>

#include "ir/Analysis.h"

namespace rtcg {

namespace {

class Canonicalizer {
 public:
  std::string out;

  void kernel(const Kernel& k) {
    out += "kernel(";
    for (const Param& p : k.params) param(k, p);
    out += ")";
    for (const LoopNest& n : k.nests) {
      out += "nest(";
      for (const Loop& l : n.loops) loop(l);
      out += "){";
      for (const Stmt& s : n.body) stmt(s);
      out += "}";
    }
  }

 private:
  std::map<int, int> ids_;  // loop/let id -> order of definition

  int define(int id) {
    auto [it, inserted] = ids_.emplace(id, (int)ids_.size());
    return it->second;
  }
  std::string use(int id) {
    auto it = ids_.find(id);
    // An id used before its definition cannot come from the frontend; keep it distinct.
    return it == ids_.end() ? fmt::format("?{}", id) : fmt::format("{}", it->second);
  }

  void param(const Kernel& k, const Param& p) {
    switch (p.kind) {
      case ParamKind::Size: {
        auto it = k.sizes.find(p.name);
        out += it == k.sizes.end() ? "size;" : fmt::format("size={};", it->second);
        return;
      }
      case ParamKind::Scalar: out += fmt::format("scalar:{};", typeName(p.type)); return;
      case ParamKind::Array: {
        const char* mode = "";
        switch (p.mode) {
          case ArrayMode::In: mode = "in"; break;
          case ArrayMode::Out: mode = "out"; break;
          case ArrayMode::InOut: mode = "inout"; break;
          case ArrayMode::Local: mode = "local"; break;
        }
        out += fmt::format("array:{}:{}[", mode, typeName(p.type));
        for (const Expr& e : p.shape) expr(e), out += ",";
        out += "];";
        return;
      }
    }
  }

  void loop(const Loop& l) {
    // Bounds refer to enclosing loops only, so they are written before the loop's own id.
    out += "(";
    expr(l.lo);
    out += "..";
    expr(l.hi);
    out += fmt::format(")#{};", define(l.id));
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case StmtKind::Let:
        out += "let ";
        expr(s.value);
        out += fmt::format(" -> #{};", define(s.letId));
        return;
      case StmtKind::Store:
        // An accumulation says so (a plain store's text is what it always was: hashes unchanged).
        if (s.accumulate) out += fmt::format("accumulate {} ", reduceName(s.accumOp));
        out += fmt::format("store p{}[", s.array);
        for (const Expr& e : s.indices) expr(e), out += ",";
        out += "]=";
        expr(s.value);
        out += ";";
        return;
    }
  }

  void expr(const Expr& e) {
    out += typeName(e->type);
    switch (e->kind) {
      case ExprKind::IntImm: out += fmt::format(" {}", e->intValue); return;
      case ExprKind::FloatImm: {
        out += fmt::format(" f{:016x}", std::bit_cast<uint64_t>(e->floatValue));
        return;
      }
      case ExprKind::Var:
        switch (e->varKind) {
          case VarKind::Index: out += " i" + use(e->varId); return;
          case VarKind::Let: out += " l" + use(e->varId); return;
          case VarKind::Size: out += fmt::format(" s{}", e->varId); return;
          case VarKind::Scalar: out += fmt::format(" p{}", e->varId); return;
        }
        return;
      case ExprKind::Load: out += fmt::format(" load p{}", e->array); break;
      case ExprKind::Unary: out += e->unaryOp == UnaryOp::Neg ? " neg" : " not"; break;
      case ExprKind::Binary: out += fmt::format(" {}", opSymbol(e->binaryOp)); break;
      case ExprKind::Call: out += fmt::format(" {}", fnName(e->mathFn)); break;
      case ExprKind::Cast: out += " cast"; break;
      case ExprKind::Select: out += " select"; break;
      case ExprKind::Reduce:
        out += fmt::format(" {}", reduceName(e->reduceOp));
        for (const Loop& l : e->loops) loop(l);
        break;
    }
    out += "(";
    for (const Expr& o : e->operands) expr(o), out += ",";
    out += ")";
  }
};

// FNV-1a over the bytes, then a final avalanche (from splitmix64) so that nearby strings spread
// over all 64 bits.
uint64_t hashBytes(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h;
}

}  // namespace

std::string canonicalForm(const Kernel& k) {
  Canonicalizer c;
  c.kernel(k);
  return c.out;
}

uint64_t structuralHash(const Kernel& k) { return hashBytes(canonicalForm(k)); }

}  // namespace rtcg
