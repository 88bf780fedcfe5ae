// The syntax tree the parser builds: a faithful, untyped picture of the source. Names are not
// resolved and types are not checked here; Sema does that and lowers the tree to IR.
// Every node carries the byte range it was parsed from (Span), so that any error can point at it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg::ast {

// A half-open byte range [begin, end) of the source text. It is also the parser's location
// type: Bison's default YYLLOC_DEFAULT only needs the `begin` and `end` members.
struct Span {
  int begin = 0;
  int end = 0;
};

// A numeric literal as the lexer saw it. `suffix` is set for typed literals (2i64, 2.5f32).
struct Number {
  bool isFloat = false;
  int64_t intValue = 0;
  double floatValue = 0.0;
  // A float literal's value rounded once from its decimal text to f32 (infinity past the f32
  // range): what it is as an f32, without the double rounding decimal -> f64 -> f32.
  float f32Value = 0.0f;
  std::optional<ScalarType> suffix;
  bool valid = true;  // false after a lexical error (already reported)
};

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

// `name in lo..hi`: a loop index of a `for` header or of a reduction.
struct Binder {
  std::string name;
  Span nameSpan;
  ExprPtr lo, hi;
  Span span;
};

enum class ExprKind {
  Error,   // a part that failed to parse or was rejected by the parser (already reported)
  Number,  // number
  Name,    // name
  Index,   // name[args...]
  Unary,   // unaryOp args[0]
  Binary,  // args[0] binaryOp args[1]
  Call,    // name(args...), or name(binders..., args[0]) for a reduction
};

struct Expr {
  ExprKind kind = ExprKind::Error;
  Span span;
  int depth = 1;  // nesting depth of this subtree (the parser bounds it)

  Number number;
  std::string name;  // Name, Index (the array), Call (the callee)
  Span nameSpan;
  UnaryOp unaryOp{};
  BinaryOp binaryOp{};
  Span opSpan;  // Unary, Binary: the operator token
  std::vector<ExprPtr> args;
  std::vector<Binder> binders;  // Call: non-empty for `sum(k in 0..n, body)`
};

// A type as written: `f32`, `int`, or an array type `f32[n, m]`.
struct TypeRef {
  std::string name;
  Span nameSpan;
  bool isArray = false;
  std::vector<ExprPtr> shape;
  Span span;
};

enum class StmtKind {
  Let,     // let name (: type)? = value;
  Store,   // name[indices] = value;
  Accumulate,  // name[indices] += value;  name[indices] max= value;  (min=)
  Assign,  // name = value;  (always an error: only array elements can be assigned)
  For,     // for binders { body }  (only valid at kernel top level)
  Local,   // local name: type;  (a kernel-local array; only valid at kernel top level)
};

struct Stmt {
  StmtKind kind = StmtKind::Let;
  Span span;
  std::string name;
  Span nameSpan;
  std::optional<TypeRef> type;   // Let with an annotation; Local
  std::vector<ExprPtr> indices;  // Store
  Span targetSpan;               // Store, Accumulate: `name[indices]`
  std::string accumOp;           // Accumulate: "+" or the word before '=' ("max", "min"; Sema checks it)
  Span opSpan;                   // Accumulate: the operator (`+=`, `max=`)
  ExprPtr value;
  std::vector<Binder> binders;   // For
  Span headerSpan;               // For: from `for` to the last bound
  std::vector<Stmt> body;        // For (left empty for a `for` nested inside another)
  bool nested = false;           // For: appeared inside another for's body
};

enum class Mode { Default, In, Out, InOut };

struct Param {
  Mode mode = Mode::Default;
  Span modeSpan;
  std::string name;
  Span nameSpan;
  TypeRef type;
  Span span;
};

struct Kernel {
  std::string name;
  Span nameSpan;
  std::vector<Param> params;
  std::vector<Stmt> body;
  Span span;
};

struct Program {
  std::vector<Kernel> kernels;
};

}  // namespace rtcg::ast
