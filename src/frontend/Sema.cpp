#include "frontend/Sema.h"

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <functional>
#include <map>
#include <limits>
#include <optional>
#include <string>

#include <fmt/format.h>
#include <set>

#include "frontend/Parser.h"
#include "ir/Walk.h"
#include "ir/IntOps.h"
#include "support/Error.h"

namespace rtcg::frontend {

namespace {

// ---------------------------------------------------------------------------------------------
// Names

const char* const kTypeNames[] = {"int", "bool", "f32", "f64", "i32", "i64", "u32", "f16", "bf16", "i8", "u8"};

bool isTypeName(const std::string& s) {
  return std::find(std::begin(kTypeNames), std::end(kTypeNames), s) != std::end(kTypeNames);
}

const std::map<std::string, MathFn>& mathFunctions() {
  static const std::map<std::string, MathFn> fns = {
      {"sqrt", MathFn::Sqrt}, {"exp", MathFn::Exp}, {"log", MathFn::Log}, {"sin", MathFn::Sin},
      {"cos", MathFn::Cos},   {"abs", MathFn::Abs}, {"min", MathFn::Min}, {"max", MathFn::Max},
      {"pow", MathFn::Pow},   {"fma", MathFn::Fma}, {"floor", MathFn::Floor}};
  return fns;
}

std::optional<ReduceOp> reduction(const std::string& s) {
  if (s == "sum") return ReduceOp::Sum;
  if (s == "product") return ReduceOp::Product;
  if (s == "max") return ReduceOp::Max;
  if (s == "min") return ReduceOp::Min;
  return std::nullopt;
}

bool isFloatOnly(MathFn fn) { return fn != MathFn::Abs && fn != MathFn::Min && fn != MathFn::Max; }

// Every name a call may use, for "did you mean" suggestions.
std::vector<std::string> callableNames() {
  std::vector<std::string> names = {"sum", "product", "select", "f32", "f64", "i32", "i64", "f16", "bf16"};
  for (const auto& [name, fn] : mathFunctions()) names.push_back(name);
  return names;
}

size_t editDistance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}

// "; did you mean 'x'?" for the closest candidate, if one is close enough to be a likely typo.
std::string suggestion(const std::string& name, const std::vector<std::string>& candidates) {
  if (name.size() > 64) return {};  // not a typo of anything; keeps the quadratic distance cheap
  const std::string* best = nullptr;
  size_t bestDist = 0;
  for (const std::string& c : candidates) {
    size_t d = editDistance(name, c);
    if (d == 0 || d > 2 || d >= std::max(name.size(), c.size())) continue;
    if (!best || d < bestDist) best = &c, bestDist = d;
  }
  return best ? fmt::format("; did you mean '{}'?", *best) : std::string();
}

// ---------------------------------------------------------------------------------------------
// Values

// A lowered expression: typed IR, or an untyped constant (a literal, or literals combined by
// arithmetic, folded) whose type is decided by the context it is used in.
struct Value {
  enum class Kind { Error, Typed, UntypedInt, UntypedFloat };
  Kind kind = Kind::Error;
  Expr ir;
  int64_t i = 0;
  double f = 0.0;
  std::optional<float> f32;  // UntypedFloat: see untypedFloat
  SourceLoc loc;

  static Value typed(Expr e) {
    Value v;
    v.kind = Kind::Typed;
    v.loc = e->loc;
    v.ir = std::move(e);
    return v;
  }
  static Value untypedInt(int64_t x, SourceLoc l) {
    Value v;
    v.kind = Kind::UntypedInt;
    v.i = x;
    v.loc = l;
    return v;
  }
  // `asF32`: the literal's own value rounded once to f32 (ast::Number::f32Value), kept through a
  // negation; a folded value has none and is rounded from its double.
  static Value untypedFloat(double x, SourceLoc l, std::optional<float> asF32 = std::nullopt) {
    Value v;
    v.kind = Kind::UntypedFloat;
    v.f = x;
    v.f32 = asF32;
    v.loc = l;
    return v;
  }
  bool ok() const { return kind != Kind::Error; }
  bool isTyped() const { return kind == Kind::Typed; }
  bool isUntyped() const { return kind == Kind::UntypedInt || kind == Kind::UntypedFloat; }
  ScalarType type() const { return ir->type; }
  double asDouble() const { return kind == Kind::UntypedInt ? (double)i : f; }
};

std::string describe(const Value& v) {
  if (v.kind == Value::Kind::UntypedInt) return "an integer literal";
  if (v.kind == Value::Kind::UntypedFloat) return "a float literal";
  return typeName(v.type());
}

bool fitsI32(int64_t v) { return v >= INT32_MIN && v <= INT32_MAX; }

// What to write instead of arithmetic on a storage type: the conversion to its compute type.
std::string halfAdvice(ScalarType t) {
  return fmt::format("{} is a storage type without arithmetic; convert the value first: {}(...)", typeName(t),
                     isNarrowInt(t) ? "i32" : "f32");
}

// ---------------------------------------------------------------------------------------------
// Index expressions

enum class IndexUse { Index, Bound, Shape };

// Index expressions with lets substituted may not grow past this many operations: the IR keeps
// them as trees that later passes walk recursively.
constexpr int64_t kMaxIndexNodes = 1000;

// What checkIndex found out about an integer expression used as an index, bound or shape.
struct IndexFacts {
  bool dependsOnIndex = false;  // on a loop index
  bool hasLoad = false;         // reads an array: indirect
  // The first break of the affine rules: reported unless the expression is indirect (an index
  // that reads an array may have any integer form).
  // `explained` says whether the message already states the rule it breaks.
  struct Break {
    SourceLoc loc;
    std::string message;
    bool explained = false;
  };
  std::optional<Break> nonAffine;
  // The first error that no form of the expression excuses.
  std::optional<std::pair<SourceLoc, std::string>> error;

  void fail(SourceLoc l, std::string msg) {
    if (!error) error.emplace(l, std::move(msg));
  }
  // Size of the expression with lets substituted, saturating (a let chain can double it per let).
  int64_t nodes = 0;
  void count(int64_t n) { nodes = std::min<int64_t>(nodes + n, INT64_MAX / 4); }

  void notAffine(SourceLoc l, std::string msg, bool explained = false) {
    if (!nonAffine) nonAffine = Break{l, std::move(msg), explained};
  }
};

// ---------------------------------------------------------------------------------------------
// Kernels

struct Symbol {
  enum class Kind { Size, Scalar, Array, Index, Reduction, Let };
  Kind kind{};
  std::string name;
  int id = -1;  // param position (Size, Scalar, Array) or loop/let id
  ScalarType type = ScalarType::I32;
  SourceLoc loc;
};

const char* describe(Symbol::Kind k) {
  switch (k) {
    case Symbol::Kind::Size: return "a size parameter";
    case Symbol::Kind::Scalar: return "a scalar parameter";
    case Symbol::Kind::Array: return "an array";
    case Symbol::Kind::Index: return "a loop index";
    case Symbol::Kind::Reduction: return "a reduction index";
    case Symbol::Kind::Let: return "a let variable";
  }
  RTCG_ASSERT(false, "bad symbol kind");
}

class KernelSema {
 public:
  KernelSema(const ast::Kernel& k, const LineMap& lines, Diagnostics& diags)
      : ast_(k), lines_(lines), diags_(diags) {}

  Kernel run();

 private:
  SourceLoc loc(ast::Span s) const { return lines_.loc(s); }
  std::string text(SourceLoc l) const { return std::string(lines_.text(l)); }
  void error(SourceLoc l, std::string msg) { diags_.error(l, std::move(msg)); }

  // Scopes
  const Symbol* lookup(const std::string& name) const;
  bool declare(Symbol s);
  std::string suggest(const std::string& name) const;
  void unknownName(const std::string& name, SourceLoc l, const char* what);

  // Declarations
  void declareParams();
  void declareLocal(const ast::Stmt& s);
  void checkLocalReads();
  void checkLocalsUsed();
  std::optional<ScalarType> scalarTypeOf(const ast::TypeRef& t, const char* what);
  Expr lowerShape(const ast::Expr& e, const std::string& array);

  // Statements
  void lowerNest(const std::vector<ast::Binder>* binders, const std::vector<const ast::Stmt*>& stmts,
                 SourceLoc nestLoc);
  std::optional<Loop> lowerLoop(const ast::Binder& b, Symbol::Kind kind);
  Expr lowerRangeBound(const ast::Expr& e);
  void lowerStmt(const ast::Stmt& s, LoopNest& nest);
  void lowerStore(const ast::Stmt& s, LoopNest& nest);
  void lowerLet(const ast::Stmt& s, LoopNest& nest);
  void lowerAssign(const ast::Stmt& s);
  std::optional<ReduceOp> accumulationOp(const ast::Stmt& s);
  void checkAccumulations(const LoopNest& nest);

  // Expressions
  Value lower(const ast::Expr& e, std::optional<ScalarType> hint);
  Value lowerName(const ast::Expr& e);
  Value lowerIndexExpr(const ast::Expr& e);
  Value lowerUnary(const ast::Expr& e, std::optional<ScalarType> hint);
  Value lowerBinary(const ast::Expr& e, std::optional<ScalarType> hint);
  Value lowerCall(const ast::Expr& e, std::optional<ScalarType> hint);
  Value lowerReduce(const ast::Expr& e, std::optional<ScalarType> hint);
  Value lowerCast(const ast::Expr& e, ScalarType to);
  Value fold(BinaryOp op, const Value& a, const Value& b, SourceLoc l);

  Expr convert(const Value& v, ScalarType t, const std::string& context);
  Expr toDefault(const Value& v);
  std::optional<ScalarType> unify(std::vector<Value>& vals, std::optional<ScalarType> hint,
                                  SourceLoc l, const std::string& what);
  std::vector<Expr> lowerIndices(const std::vector<ast::ExprPtr>& indices, int array, SourceLoc access);
  Expr lowerInteger(const ast::Expr& e, IndexUse use, const std::string& what);
  Expr checkIndex(const Expr& e, IndexUse use, IndexFacts& facts);
  bool reportIndexFacts(const IndexFacts& facts, IndexUse use, SourceLoc whole, const std::string& what);

  const ast::Kernel& ast_;
  const LineMap& lines_;
  Diagnostics& diags_;
  Kernel kernel_;
  std::vector<Symbol> scope_;
  std::vector<bool> written_;       // per param: some statement before this point stores to it
  // Locals (by param id): the nest that writes each and its first store, and the first read of
  // each in the nest being lowered (checked when the nest ends) and in the kernel.
  std::map<int, std::pair<int, SourceLoc>> localWriter_;
  std::map<int, SourceLoc> localReadsInNest_;
  std::map<int, SourceLoc> localReads_;
  std::map<int, Expr> letValues_;   // let id -> value, for inlining into index expressions
  std::map<std::pair<int, IndexUse>, std::pair<Expr, IndexFacts>> inlined_;  // checked let values
  // Some statements went unchecked (after an error in a loop header, or in a nested `for`):
  // "never written" cannot be judged then.
  bool bodyIncomplete_ = false;
  int nextId_ = 0;
  int integerUses_ = 0;  // > 0 while lowerInteger lowers: checkIndex explains zero divisors there
};

// --- scopes ----------------------------------------------------------------------------------

const Symbol* KernelSema::lookup(const std::string& name) const {
  for (auto it = scope_.rbegin(); it != scope_.rend(); ++it)
    if (it->name == name) return &*it;
  return nullptr;
}

std::string KernelSema::suggest(const std::string& name) const {
  std::vector<std::string> names;
  for (const Symbol& s : scope_) names.push_back(s.name);
  return suggestion(name, names);
}

void KernelSema::unknownName(const std::string& name, SourceLoc l, const char* what) {
  if (isTypeName(name)) {
    error(l, fmt::format("'{}' is a type, not a value; to convert a value write {}(x)", name, name));
    return;
  }
  if (mathFunctions().count(name) || reduction(name) || name == "select") {
    error(l, fmt::format("'{}' is a function; call it as {}(...)", name, name));
    return;
  }
  error(l, fmt::format("unknown {} '{}'{}", what, name, suggest(name)));
}

// Adds a name to the innermost scope. Names never shadow: in a kernel this small, a reused name
// is almost always a mistake (e.g. summing over the output's own index).
bool KernelSema::declare(Symbol s) {
  if (isTypeName(s.name)) {
    error(s.loc, fmt::format("'{}' is a type name and cannot be used as a name", s.name));
    return false;
  }
  if (const Symbol* prev = lookup(s.name)) {
    if (s.kind == Symbol::Kind::Reduction && prev->kind == Symbol::Kind::Index) {
      error(s.loc, fmt::format("reduction over an index that the output also uses: '{}' is already an "
                               "index of this loop nest; give the reduction index another name",
                               s.name));
    } else if (s.kind == Symbol::Kind::Reduction && prev->kind == Symbol::Kind::Reduction) {
      error(s.loc, fmt::format("reduction index '{}' shadows the index of an enclosing reduction; give it "
                               "another name", s.name));
    } else {
      error(s.loc, fmt::format("redefinition of '{}'", s.name));
    }
    diags_.note(prev->loc, fmt::format("'{}' is already defined here as {}", s.name, describe(prev->kind)));
    return false;
  }
  scope_.push_back(std::move(s));
  return true;
}

// --- declarations ----------------------------------------------------------------------------

std::optional<ScalarType> KernelSema::scalarTypeOf(const ast::TypeRef& t, const char* what) {
  SourceLoc l = loc(t.nameSpan);
  std::optional<ScalarType> st = parseTypeName(t.name);
  if (t.name == "int") {
    const bool array = std::string(what) == "array elements";  // only arrays hold the storage types
    error(l, fmt::format("'int' declares a size parameter; {} must have type {}", what,
                         array ? "f32, f64, f16, bf16, i32, i64, u32, i8 or u8" : "f32, f64, i32, i64 or u32"));
    return std::nullopt;
  }
  if (!st) {
    std::vector<std::string> names(std::begin(kTypeNames), std::end(kTypeNames));
    error(l, fmt::format("unknown type '{}'{}", t.name, suggestion(t.name, names)));
    return std::nullopt;
  }
  return st;
}

void KernelSema::declareParams() {
  // CUDA passes a kernel's parameters in at most 32 764 bytes (8 per array or scalar here): 5 000
  // arrays passed check and failed in NVRTC, reported as a bug in rtcg.
  constexpr size_t kMaxParams = 1024;
  if (ast_.params.size() > kMaxParams)
    error(loc(ast_.params[kMaxParams].nameSpan),
          fmt::format("kernel '{}' has {} parameters; the limit is {}", ast_.name, ast_.params.size(), kMaxParams));
  // Parameters first, shapes second: a shape may use a size parameter declared after the array.
  for (const ast::Param& p : ast_.params) {
    Param ip;
    ip.name = p.name;
    ip.loc = loc(p.nameSpan);
    Symbol sym{Symbol::Kind::Size, p.name, (int)kernel_.params.size(), ScalarType::I32, ip.loc};
    const ast::TypeRef& t = p.type;
    if (p.mode != ast::Mode::Default && !t.isArray) {
      error(loc(p.modeSpan), fmt::format("'{}' applies only to arrays; '{}' is not an array",
                                         text(loc(p.modeSpan)), p.name));
    }
    if (t.isArray) {
      ip.kind = ParamKind::Array;
      ip.mode = p.mode == ast::Mode::Out ? ArrayMode::Out : p.mode == ast::Mode::InOut ? ArrayMode::InOut : ArrayMode::In;
      sym.kind = Symbol::Kind::Array;
      std::optional<ScalarType> et = scalarTypeOf(t, "array elements");
      if (et == ScalarType::Bool) {
        error(loc(t.nameSpan), "array elements must have type f32, f64, f16, bf16, i32, i64, u32, i8 or u8, not bool");
        et.reset();
      }
      ip.type = et.value_or(ScalarType::F32);
    } else if (t.name == "int") {
      ip.kind = ParamKind::Size;
      ip.type = ScalarType::I32;
    } else {
      ip.kind = ParamKind::Scalar;
      sym.kind = Symbol::Kind::Scalar;
      std::optional<ScalarType> st = scalarTypeOf(t, "scalar parameters");
      if (st == ScalarType::Bool) {
        error(loc(t.nameSpan), "scalar parameters must have type f32, f64, i32, i64 or u32, not bool");
        st.reset();
      } else if (st && isStorage(*st)) {
        // A kernel argument of 8 or 16 bits has no C++ host type the launch could check; f32 holds
        // every f16 and bf16 value exactly, i32 every i8 and u8 value.
        error(loc(t.nameSpan), fmt::format("scalar parameters cannot have the storage type {}; pass an {} and "
                                           "convert it where it is stored: {}(x)", typeName(*st),
                                           isNarrowInt(*st) ? "i32" : "f32", typeName(*st)));
        st.reset();
      }
      ip.type = st.value_or(ScalarType::F32);
    }
    sym.type = ip.type;
    declare(sym);  // on error the parameter stays in the IR, unnamed in the scope
    kernel_.params.push_back(std::move(ip));
  }
  written_.assign(kernel_.params.size(), false);
  for (size_t i = 0; i < ast_.params.size(); ++i) {
    const ast::Param& p = ast_.params[i];
    for (const ast::ExprPtr& e : p.type.shape) {
      if (Expr x = lowerShape(*e, p.name)) kernel_.params[i].shape.push_back(std::move(x));
    }
  }
}

Expr KernelSema::lowerShape(const ast::Expr& e, const std::string& array) {
  return lowerInteger(e, IndexUse::Shape, fmt::format("shape of '{}'", array));
}

// --- kernel-local arrays ----------------------------------------------------------------------

// `local t: f32[m];` at the top level of the body: an array that lives only inside the kernel,
// appended to the params after the signature's (IR.h), in scope for the rest of the body.
void KernelSema::declareLocal(const ast::Stmt& s) {
  const int errorsBefore = diags_.errorCount();
  Param ip;
  ip.name = s.name;
  ip.loc = loc(s.nameSpan);
  ip.kind = ParamKind::Array;
  ip.mode = ArrayMode::Local;
  const ast::TypeRef& t = *s.type;
  std::optional<ScalarType> et = scalarTypeOf(t, "array elements");
  if (et == ScalarType::Bool) {
    error(loc(t.nameSpan), "array elements must have type f32, f64, f16, bf16, i32, i64, u32, i8 or u8, not bool");
    et.reset();
  }
  if (et && !t.isArray)
    error(loc(t.span), fmt::format("a local is an array: give it a shape from the size parameters, e.g. "
                                   "local {}: {}[n]; (a value for one point is a 'let' inside a nest)",
                                   s.name, t.name));
  ip.type = et.value_or(ScalarType::F32);
  for (const ast::ExprPtr& e : t.shape)
    if (Expr x = lowerShape(*e, s.name)) ip.shape.push_back(std::move(x));
  const int id = (int)kernel_.params.size();
  // A clash is reported; the local stays in the IR unnamed. A declaration with an error counts
  // as used: "never used" would only repeat it.
  const bool named = declare(Symbol{Symbol::Kind::Array, s.name, id, ip.type, ip.loc});
  const bool ok = named && diags_.errorCount() == errorsBefore;
  kernel_.params.push_back(std::move(ip));
  written_.push_back(!ok);
  if (!ok) localReads_.emplace(id, loc(s.nameSpan));
}

// At the end of a nest: every local it read was written by an earlier nest. Its own writes do not
// count: within a nest the points run in no order, so a point would read what it or another point
// stores now (a value for the point itself is a `let`).
void KernelSema::checkLocalReads() {
  const int nestIdx = (int)kernel_.nests.size();
  for (const auto& [array, at] : localReadsInNest_) {
    const Param& p = kernel_.params[array];
    auto w = localWriter_.find(array);
    if (w != localWriter_.end() && w->second.first == nestIdx) {
      error(at, fmt::format("'{}' is read in the loop nest that writes it; a local passes values from one nest to "
                            "later ones (within a nest, keep the value in a 'let')", p.name));
      diags_.note(w->second.second, fmt::format("'{}' is written here", p.name));
    } else if (w == localWriter_.end()) {
      error(at, fmt::format("'{}' is read before any loop nest writes it; a local must be written by an earlier "
                            "nest", p.name));
      diags_.note(p.loc, fmt::format("'{}' is declared here", p.name));
    }
  }
  localReadsInNest_.clear();
}

// At the end of the kernel: every local is written and read (an unused one is most likely a typo
// or a leftover, and a write nobody reads is wasted work).
void KernelSema::checkLocalsUsed() {
  if (bodyIncomplete_) return;
  for (size_t i = 0; i < kernel_.params.size(); ++i) {
    const Param& p = kernel_.params[i];
    if (!p.isLocal()) continue;
    bool written = written_[i], read = localReads_.count((int)i) > 0;
    if (!written && !read)
      error(p.loc, fmt::format("local '{}' is declared but never used", p.name));
    else if (!read)
      error(p.loc, fmt::format("local '{}' is written but never read; write an 'out' parameter instead if the "
                               "caller needs it", p.name));
  }
}

// --- integer expressions: indices, bounds, shapes ---------------------------------------------

// Lowers an expression that must be an integer index, loop bound or array extent, and checks it
// against the rules for that use (see checkIndex). nullptr after an error.
Expr KernelSema::lowerInteger(const ast::Expr& e, IndexUse use, const std::string& what) {
  ++integerUses_;
  Value v = lower(e, ScalarType::I32);
  --integerUses_;
  if (!v.ok()) return nullptr;
  Expr x;
  if (v.isUntyped()) {
    if (v.kind == Value::Kind::UntypedFloat) {
      error(v.loc, fmt::format("{} must be an integer, not a float literal", what));
      return nullptr;
    }
    x = convert(v, ScalarType::I32, what);
  } else if (use == IndexUse::Index ? !isInteger(v.type()) : v.type() != ScalarType::I32) {
    // u32 is no index type (indices are signed: an index below 0 is out of bounds, not 2^32 - 1).
    error(v.loc, fmt::format("{} must be {}, not {}{}", what,
                             use != IndexUse::Index       ? "an i32 value"
                             : isUnsigned(v.type())       ? "an integer of a signed type (i32 or i64)"
                                                          : "an integer",
                             typeName(v.type()),
                             isUnsigned(v.type()) ? std::string("; convert it: i32(...)")
                                                  : ""));
    return nullptr;
  } else {
    x = v.ir;
  }
  if (!x) return nullptr;
  IndexFacts facts;
  Expr checked = checkIndex(x, use, facts);
  if (!reportIndexFacts(facts, use, x->loc, what)) return nullptr;
  return checked;
}

bool KernelSema::reportIndexFacts(const IndexFacts& facts, IndexUse use, SourceLoc whole, const std::string& what) {
  if (facts.error) {
    error(facts.error->first, fmt::format("{} {}", what, facts.error->second));
    return false;
  }
  if (facts.nodes > kMaxIndexNodes) {
    error(whole, fmt::format("{} is too large once its 'let' variables are substituted (more than {} operations)",
                             what, kMaxIndexNodes));
    return false;
  }
  if (facts.nonAffine && !(use == IndexUse::Index && facts.hasLoad)) {
    const char* rule = use == IndexUse::Index
                           ? "indices must be affine in loop indices and size parameters, or read an integer array"
                       : use == IndexUse::Bound
                           ? "loop bounds must be affine in size parameters and enclosing indices"
                           : "shapes must be expressions in size parameters";
    const IndexFacts::Break& b = *facts.nonAffine;
    // A shape is a constant once sizes are bound: "affine" would be the wrong word for it.
    const char* problem = use == IndexUse::Shape ? "is not a valid size expression" : "is not affine";
    error(b.loc, b.explained ? fmt::format("{} {}: it {}", what, problem, b.message)
                             : fmt::format("{} {}: it {}; {}", what, problem, b.message, rule));
    return false;
  }
  return true;
}

// Checks an integer expression against the rules of its use and returns it with `let`
// variables replaced by their values (the IR keeps index expressions free of lets).
//  Index: affine in indices and size parameters, floor / and % by positive integer constants
//         allowed; or indirect (reads an array), which excuses any integer form.
//  Bound: affine in size parameters and enclosing indices; no array reads.
//  Shape: an expression in size parameters (/ and % by positive integer constants allowed).
Expr KernelSema::checkIndex(const Expr& e, IndexUse use, IndexFacts& facts) {
  if (e->kind != ExprKind::Var || e->varKind != VarKind::Let) facts.count(1);  // a let counts its value
  auto checkedOperands = [&](IndexFacts& f) {
    std::vector<Expr> ops;
    for (const Expr& o : e->operands) ops.push_back(checkIndex(o, use, f));
    return withOperands(e, std::move(ops));
  };
  switch (e->kind) {
    case ExprKind::IntImm:
      return e;
    case ExprKind::FloatImm:
      facts.fail(e->loc, "depends on a floating-point value");
      return e;
    case ExprKind::Var:
      switch (e->varKind) {
        case VarKind::Index:
          facts.dependsOnIndex = true;
          return e;
        case VarKind::Size:
          return e;
        case VarKind::Scalar:
          facts.fail(e->loc, fmt::format("depends on the runtime scalar '{}'; only size parameters "
                                         "(declared ': int') are known at compile time", e->name));
          return e;
        case VarKind::Let: {
          // Checked and inlined once per let and use: a chain of lets that each use the previous
          // one twice shares subtrees, and must not cost time exponential in its length.
          auto key = std::make_pair(e->varId, use);
          auto cached = inlined_.find(key);
          if (cached == inlined_.end()) {
            IndexFacts inner;
            const Expr& raw = letValues_.at(e->varId);
            Expr value = checkIndex(raw, use, inner);
            // Inlining moves the value's array reads to this point: only safe for arrays that no
            // statement of the kernel can have changed in between.
            std::function<void(const Expr&)> scan = [&](const Expr& x) {
              if (x->kind == ExprKind::Load && kernel_.params[x->array].isWritten())
                inner.fail(x->loc, fmt::format("reads '{}', an array this kernel writes; write the load in the "
                                               "index directly", kernel_.params[x->array].name));
              for (const Expr& o : x->operands) scan(o);
            };
            scan(raw);
            cached = inlined_.emplace(key, std::make_pair(value, inner)).first;
          }
          const auto& [value, inner] = cached->second;
          bool excused = use == IndexUse::Index && inner.hasLoad;
          if (inner.error || (inner.nonAffine && !excused)) {
            const std::string& why = inner.error ? inner.error->second : inner.nonAffine->message;
            // Through a chain of lets, name the one whose value breaks the rule.
            facts.fail(e->loc, why.rfind("uses '", 0) == 0 ? why : fmt::format("uses '{}', whose value {}", e->name, why));
            return e;
          }
          facts.dependsOnIndex |= inner.dependsOnIndex;
          facts.hasLoad |= inner.hasLoad;
          facts.count(inner.nodes);
          return value;
        }
      }
      RTCG_ASSERT(false, "bad var kind");
    case ExprKind::Load:
      if (use != IndexUse::Index) {
        facts.fail(e->loc, use == IndexUse::Bound
                               ? fmt::format("reads the array '{}'; only a reduction's range may read an array, "
                                             "each bound one whole load ('p in rowptr[i]..rowptr[i + 1]')",
                                             kernel_.params[e->array].name)
                               : fmt::format("reads the array '{}'", kernel_.params[e->array].name));
        return e;
      }
      facts.hasLoad = true;
      return e;  // its own indices were checked when the load was lowered
    case ExprKind::Unary:
      return checkedOperands(facts);
    case ExprKind::Cast:
      if (isUnsigned(e->operands[0]->type)) {
        // i32(bin[i]) of a u32 array: an indirect index (it reads an array), whatever its form;
        // a u32 value that reads no array has no affine meaning (it wraps).
        IndexFacts inner;
        Expr checked = checkedOperands(inner);
        facts.count(inner.nodes);
        if (!inner.hasLoad)
          facts.fail(e->loc, fmt::format("depends on a {} value that reads no array", typeName(e->operands[0]->type)));
        if (inner.error) facts.fail(inner.error->first, inner.error->second);
        if (inner.nonAffine) facts.notAffine(inner.nonAffine->loc, inner.nonAffine->message, inner.nonAffine->explained);
        facts.dependsOnIndex |= inner.dependsOnIndex;
        facts.hasLoad |= inner.hasLoad;
        return checked;
      }
      if (!isInteger(e->operands[0]->type)) {
        facts.fail(e->loc, fmt::format("depends on a {} value", typeName(e->operands[0]->type)));
        return e;
      }
      return checkedOperands(facts);
    case ExprKind::Binary: {
      IndexFacts fa, fb;
      Expr a = checkIndex(e->operands[0], use, fa);
      Expr b = checkIndex(e->operands[1], use, fb);
      for (IndexFacts* f : {&fa, &fb}) {
        facts.count(f->nodes);
        if (f->error) facts.fail(f->error->first, f->error->second);
        if (f->nonAffine) facts.notAffine(f->nonAffine->loc, f->nonAffine->message, f->nonAffine->explained);
        facts.dependsOnIndex |= f->dependsOnIndex;
        facts.hasLoad |= f->hasLoad;
      }
      bool varA = fa.dependsOnIndex || fa.hasLoad, varB = fb.dependsOnIndex || fb.hasLoad;
      switch (e->binaryOp) {
        case BinaryOp::Add:
        case BinaryOp::Sub:
          break;
        case BinaryOp::Mul:
          if (varA && varB)
            facts.notAffine(e->loc, fmt::format("multiplies '{}' by '{}', which both depend on loop indices",
                                                text(e->operands[0]->loc), text(e->operands[1]->loc)));
          break;
        case BinaryOp::Div:
        case BinaryOp::Mod:
          if (b->kind != ExprKind::IntImm || b->intValue <= 0)
            facts.notAffine(e->operands[1]->loc,
                            fmt::format("divides by '{}'; the divisor of '{}' here must be a positive integer "
                                        "constant", text(e->operands[1]->loc), opSymbol(e->binaryOp)),
                            true);
          else if (use == IndexUse::Bound && varA)
            facts.notAffine(e->loc, fmt::format("applies '{}' to '{}', which depends on a loop index",
                                                opSymbol(e->binaryOp), text(e->operands[0]->loc)));
          break;
        default:
          // Comparisons and logic produce bool: not reachable for integer expressions.
          facts.fail(e->loc, "is not an integer expression");
          break;
      }
      return withOperands(e, {a, b});
    }
    case ExprKind::Call:
      facts.notAffine(e->loc, fmt::format("calls '{}'", fnName(e->mathFn)));
      return e;
    case ExprKind::Select:
      facts.notAffine(e->loc, "uses select");
      return e;
    case ExprKind::Reduce:
      facts.fail(e->loc, "contains a reduction; compute it in a 'let' of another nest or store it in an array first");
      return e;
  }
  RTCG_ASSERT(false, "bad expression kind");
}

// --- nests and statements --------------------------------------------------------------------

// A bound of a reduction's range may be one load of an integer array: a data-dependent range
// (`p in rowptr[i]..rowptr[i + 1]`, IR.h). The array must be an `in` i32 array (the kernel cannot
// change it under the range, and the range is an index's type), and the load's indices follow the
// rules of loop bounds (affine, no loads): the range is known before the reduction runs. Parallel
// bounds stay affine, since the launch needs the domain.
Expr KernelSema::lowerRangeBound(const ast::Expr& e) {
  if (e.kind != ast::ExprKind::Index) return lowerInteger(e, IndexUse::Bound, "loop bound");
  Value v = lower(e, ScalarType::I32);
  if (!v.ok()) return nullptr;
  RTCG_ASSERT(v.isTyped() && v.ir->kind == ExprKind::Load, "an array access lowers to a load");
  const Param& array = kernel_.params[v.ir->array];
  if (array.isWritten()) {
    error(v.loc, fmt::format("loop bound reads '{}', an array this kernel writes; a range may only read 'in' arrays",
                             array.name));
    return nullptr;
  }
  if (array.type != ScalarType::I32) {
    error(v.loc, fmt::format("loop bound must be an i32 value, not {} ('{}' holds {})", typeName(array.type),
                             array.name, typeName(array.type)));
    return nullptr;
  }
  std::vector<Expr> indices;
  for (const Expr& index : v.ir->operands) {
    IndexFacts facts;
    Expr checked = checkIndex(index, IndexUse::Bound, facts);
    if (!reportIndexFacts(facts, IndexUse::Bound, index->loc, fmt::format("index of '{}' in a loop bound", array.name)))
      return nullptr;
    indices.push_back(checked);
  }
  return withOperands(v.ir, std::move(indices));
}

std::optional<Loop> KernelSema::lowerLoop(const ast::Binder& b, Symbol::Kind kind) {
  const bool reduction = kind == Symbol::Kind::Reduction;
  Expr lo = reduction ? lowerRangeBound(*b.lo) : lowerInteger(*b.lo, IndexUse::Bound, "loop bound");
  Expr hi = reduction ? lowerRangeBound(*b.hi) : lowerInteger(*b.hi, IndexUse::Bound, "loop bound");
  Loop loop;
  loop.id = nextId_++;
  loop.name = b.name;
  loop.loc = loc(b.span);
  bool declared = declare(Symbol{kind, b.name, loop.id, ScalarType::I32, loc(b.nameSpan)});
  if (!lo || !hi || !declared) return std::nullopt;
  loop.lo = lo;
  loop.hi = hi;
  return loop;
}

void KernelSema::lowerNest(const std::vector<ast::Binder>* binders, const std::vector<const ast::Stmt*>& stmts,
                           SourceLoc nestLoc) {
  size_t scopeSize = scope_.size();
  LoopNest nest;
  nest.loc = nestLoc;
  bool ok = true;
  if (binders) {
    for (const ast::Binder& b : *binders) {
      std::optional<Loop> loop = lowerLoop(b, Symbol::Kind::Index);
      if (loop) nest.loops.push_back(std::move(*loop));
      else ok = false;
    }
  }
  // An error in the header leaves its index undeclared; checking the body would only report
  // "unknown name" for it, so the body waits for the header to be fixed.
  localReadsInNest_.clear();
  if (ok)
    for (const ast::Stmt* s : stmts) lowerStmt(*s, nest);
  else
    bodyIncomplete_ = true;
  checkLocalReads();
  checkAccumulations(nest);
  scope_.resize(scopeSize);
  kernel_.nests.push_back(std::move(nest));
}

void KernelSema::lowerStmt(const ast::Stmt& s, LoopNest& nest) {
  switch (s.kind) {
    case ast::StmtKind::Let: return lowerLet(s, nest);
    case ast::StmtKind::Store:
    case ast::StmtKind::Accumulate: return lowerStore(s, nest);
    case ast::StmtKind::Assign: return lowerAssign(s);
    case ast::StmtKind::For:
      bodyIncomplete_ = true;
      error(loc(s.headerSpan), "a 'for' cannot be nested inside another 'for'; list all the indices of a "
                               "loop nest in one header: for i in 0..n, j in 0..m { ... }");
      return;
    case ast::StmtKind::Local:
      bodyIncomplete_ = true;
      error(loc(s.span), fmt::format("'local' declares a kernel-local array at the top level of the kernel body, "
                                     "not inside a loop nest; move it before the 'for' that writes '{}' (a value "
                                     "for one point is a 'let')", s.name));
      return;
  }
}

void KernelSema::lowerLet(const ast::Stmt& s, LoopNest& nest) {
  std::optional<ScalarType> declared;
  bool typeOk = true;
  if (s.type) {
    if (s.type->isArray) {
      error(loc(s.type->span), "a let variable holds one value; it cannot have an array type");
      typeOk = false;
    } else if (s.type->name == "int") {
      error(loc(s.type->nameSpan), "'int' is only for size parameters; write i32 for a 32-bit integer");
      typeOk = false;
    } else if (!(declared = parseTypeName(s.type->name))) {
      std::vector<std::string> names(std::begin(kTypeNames), std::end(kTypeNames));
      error(loc(s.type->nameSpan), fmt::format("unknown type '{}'{}", s.type->name, suggestion(s.type->name, names)));
      typeOk = false;
    }
  }
  Value v = lower(*s.value, declared);
  Expr value;
  if (v.ok() && typeOk) {
    if (declared) {
      if (v.isTyped() && v.type() != *declared)
        error(v.loc, fmt::format("cannot initialize '{}' of type {} with a value of type {}; use an explicit "
                                 "cast: {}(...)", s.name, typeName(*declared), typeName(v.type()),
                                 typeName(*declared)));
      else
        value = convert(v, *declared, fmt::format("'{}'", s.name));
    } else {
      value = toDefault(v);
    }
  }
  // Declared even when the value failed, so later uses do not add "unknown name" errors; the
  // type is a guess then, but nothing is emitted after an error.
  int id = nextId_++;
  Symbol sym{Symbol::Kind::Let, s.name, id, value ? value->type : declared.value_or(ScalarType::F32),
             loc(s.nameSpan)};
  if (!declare(sym) || !value) return;
  letValues_[id] = value;
  Stmt st;
  st.kind = StmtKind::Let;
  st.loc = sym.loc;
  st.letId = id;
  st.letName = s.name;
  st.value = value;
  nest.body.push_back(std::move(st));
}

// The operator of an accumulation (`+=`, `max=`, `min=`), or nullopt after reporting a word that
// is none of them.
std::optional<ReduceOp> KernelSema::accumulationOp(const ast::Stmt& s) {
  if (s.accumOp == "+") return ReduceOp::Sum;
  if (s.accumOp == "max") return ReduceOp::Max;
  if (s.accumOp == "min") return ReduceOp::Min;
  error(loc(s.opSpan), fmt::format("'{}=' is not an accumulation; an accumulation is 'a[i] += v', 'a[i] max= v' or "
                                   "'a[i] min= v'",
                                   s.accumOp));
  return std::nullopt;
}

// A nest that accumulates into an array (IR.h): every other write of that array in the nest is an
// accumulation with the same operator, and the nest does not read it (a read would see the element
// part-way through the updates, in an order nothing fixes). ir/Races.cpp checks the same on IR
// built without the frontend.
void KernelSema::checkAccumulations(const LoopNest& nest) {
  std::map<int, const Stmt*> first;  // array -> its first accumulation
  for (const Stmt& st : nest.body)
    if (st.kind == StmtKind::Store && st.accumulate) first.emplace(st.array, &st);
  if (first.empty()) return;
  auto shown = [&](const Stmt& st) {
    return fmt::format("'{} {} ...'", text(st.loc), accumSymbol(st.accumOp));
  };
  for (const Stmt& st : nest.body) {
    auto it = st.kind == StmtKind::Store ? first.find(st.array) : first.end();
    if (it != first.end() && !st.accumulate) {
      error(st.loc, fmt::format("a plain store to '{}' in the loop nest that accumulates into it; the order of the "
                                "store and the updates is not defined. Store in an earlier loop nest, or accumulate "
                                "here too",
                                kernel_.params[st.array].name));
      diags_.note(it->second->loc, fmt::format("the accumulation {}", shown(*it->second)));
    } else if (it != first.end() && st.accumOp != it->second->accumOp) {
      error(st.loc, fmt::format("'{}' is accumulated into with both '{}' and '{}' in one loop nest; the result "
                                "would depend on the order of the updates. Use one operator per array and loop nest",
                                kernel_.params[st.array].name, accumSymbol(it->second->accumOp),
                                accumSymbol(st.accumOp)));
    }
    auto reads = [&](const Expr& e) {
      visitExprs(e, [&](const Expr& x) {
        if (x->kind != ExprKind::Load || !first.count(x->array)) return;
        error(x->loc, fmt::format("'{}' is read in the loop nest that accumulates into it; the value read would "
                                  "depend on the order of the updates. Read it in a later loop nest",
                                  kernel_.params[x->array].name));
        diags_.note(first.at(x->array)->loc, fmt::format("the accumulation {}", shown(*first.at(x->array))));
      });
    };
    if (st.value) reads(st.value);
    for (const Expr& i : st.indices) reads(i);
  }
}

void KernelSema::lowerStore(const ast::Stmt& s, LoopNest& nest) {
  SourceLoc target = loc(s.targetSpan);
  const bool accumulate = s.kind == ast::StmtKind::Accumulate;
  ReduceOp op = ReduceOp::Sum;
  if (accumulate) {
    std::optional<ReduceOp> o = accumulationOp(s);
    if (!o) {
      lower(*s.value, std::nullopt);  // for the errors it may hold
      // One mistake should not also cause "never written".
      if (const Symbol* sym = lookup(s.name); sym && sym->kind == Symbol::Kind::Array) written_[sym->id] = true;
      return;
    }
    op = *o;
  }
  const Symbol* sym = lookup(s.name);
  if (!sym) {
    unknownName(s.name, loc(s.nameSpan), "array");
    return;
  }
  if (sym->kind != Symbol::Kind::Array) {
    error(loc(s.nameSpan), fmt::format("cannot store to '{}': it is {}, not an array", s.name, describe(sym->kind)));
    return;
  }
  int array = sym->id;
  const Param& p = kernel_.params[array];
  bool ok = true;
  if (accumulate && p.mode == ArrayMode::In) {
    error(target, fmt::format("cannot accumulate into '{}': it is an input array; declare it 'inout' (its contents "
                              "are then the starting values of the accumulation)", s.name));
    diags_.note(p.loc, fmt::format("'{}' is declared here", s.name));
    ok = false;
  } else if (p.mode == ArrayMode::In) {
    error(target, fmt::format("cannot write to '{}': it is an input array; declare it 'out' (or 'inout' to also "
                              "read its initial contents)", s.name));
    diags_.note(p.loc, fmt::format("'{}' is declared here", s.name));
    ok = false;
  } else if (accumulate && p.isLocal()) {
    error(target, fmt::format("cannot accumulate into the local array '{}': its elements start undefined and only "
                              "one loop nest may write it; accumulate into an 'inout' parameter", s.name));
    ok = false;
  } else if (accumulate && p.mode == ArrayMode::Out && !written_[array]) {
    error(target, fmt::format("'{}' is an 'out' array and is accumulated into before anything is written to it; "
                              "store its starting values in an earlier loop nest, or declare it 'inout' (the "
                              "caller's contents are the starting values)", s.name));
    ok = false;
  }
  std::string why;
  if (accumulate && ok && !accumulationSupported(op, p.type, &why)) {
    error(loc(s.opSpan), fmt::format("cannot accumulate with '{}' into '{}', an array of {}: {}", accumSymbol(op),
                                     s.name, typeName(p.type), why));
    ok = false;
  }
  std::vector<Expr> indices = lowerIndices(s.indices, array, target);
  Value v = lower(*s.value, p.type);
  Expr value;
  if (v.ok()) {
    if (v.isTyped() && v.type() == ScalarType::Bool)
      error(v.loc, fmt::format("cannot store a bool into '{}', an array of {}; convert it with "
                               "select(condition, 1, 0)", s.name, typeName(p.type)));
    else if (v.isTyped() && v.type() != p.type)
      error(v.loc, fmt::format("cannot store a value of type {} into '{}', an array of {}; use an explicit "
                               "cast: {}(...)", typeName(v.type()), s.name, typeName(p.type), typeName(p.type)));
    else
      value = convert(v, p.type, fmt::format("an element of '{}'", s.name));
  }
  written_[array] = true;  // even after an error: one mistake should not also cause "never written"
  if (p.isLocal()) {
    const int nestIdx = (int)kernel_.nests.size();
    auto [it, first] = localWriter_.emplace(array, std::make_pair(nestIdx, target));
    if (!first && it->second.first != nestIdx) {
      error(target, fmt::format("'{}' is already written by an earlier loop nest; a local array is written by "
                                "exactly one nest (and read by later ones)", s.name));
      diags_.note(it->second.second, fmt::format("'{}' is written here", s.name));
      ok = false;
    }
  }
  if (!ok || !value || indices.size() != s.indices.size()) return;
  Stmt st;
  st.kind = StmtKind::Store;
  st.loc = target;
  st.accumulate = accumulate;
  st.accumOp = op;
  st.array = array;
  st.indices = std::move(indices);
  st.value = value;
  nest.body.push_back(std::move(st));
}

void KernelSema::lowerAssign(const ast::Stmt& s) {
  SourceLoc l = loc(s.nameSpan);
  const Symbol* sym = lookup(s.name);
  if (!sym) {
    unknownName(s.name, l, "name");
  } else {
    switch (sym->kind) {
      case Symbol::Kind::Array:
        error(l, fmt::format("cannot assign to the array '{}' as a whole; assign its elements: {}[...] = ...",
                             s.name, s.name));
        break;
      case Symbol::Kind::Let:
        error(l, fmt::format("cannot assign to '{}': let variables cannot change after they are defined; "
                             "define a new one with 'let'", s.name));
        break;
      default:
        error(l, fmt::format("cannot assign to '{}': it is {}", s.name, describe(sym->kind)));
        break;
    }
  }
  lower(*s.value, std::nullopt);  // for the errors it may hold
}

std::vector<Expr> KernelSema::lowerIndices(const std::vector<ast::ExprPtr>& indices, int array, SourceLoc access) {
  const Param& p = kernel_.params[array];
  std::vector<Expr> out;
  if (indices.size() != p.shape.size() && !p.shape.empty()) {
    error(access, fmt::format("'{}' has {} dimension{} but is indexed with {} ind{}", p.name, p.shape.size(),
                              p.shape.size() == 1 ? "" : "s", indices.size(), indices.size() == 1 ? "ex" : "ices"));
    return out;
  }
  for (size_t d = 0; d < indices.size(); ++d) {
    std::string what = indices.size() == 1 ? fmt::format("index of '{}'", p.name)
                                           : fmt::format("index {} of '{}'", d + 1, p.name);
    if (Expr x = lowerInteger(*indices[d], IndexUse::Index, what)) out.push_back(std::move(x));
  }
  return out;
}

// --- expressions -----------------------------------------------------------------------------

// The IR for an untyped constant or typed value in a context that needs type `t`. Typed values
// must already have type `t` (callers report mismatches with their own wording).
Expr KernelSema::convert(const Value& v, ScalarType t, const std::string& context) {
  if (v.isTyped()) {
    RTCG_ASSERT(v.type() == t, "convert of a typed value to another type");
    return v.ir;
  }
  if (t == ScalarType::Bool) {
    error(v.loc, fmt::format("expected a bool for {}, found {}", context, describe(v)));
    return nullptr;
  }
  if (v.kind == Value::Kind::UntypedInt) {
    if (t == ScalarType::I32 && !fitsI32(v.i)) {
      error(v.loc, fmt::format("integer literal {} does not fit in i32; write {}i64 for a 64-bit integer", v.i, v.i));
      return nullptr;
    }
    if (isInteger(t)) return intImm(v.i, t, v.loc);
    if (t == ScalarType::U32) {
      if (v.i < 0 || v.i > int64_t(UINT32_MAX)) {
        error(v.loc, fmt::format("integer literal {} is out of range for u32 (0 to 4294967295){}", v.i,
                                 v.i < 0 ? "; u32 has no negative values: write u32(...) of an i32 to wrap one" : ""));
        return nullptr;
      }
      return intImm(v.i, t, v.loc);
    }
    if (isNarrowInt(t)) {
      const int64_t lo = t == ScalarType::I8 ? -128 : 0, hi = t == ScalarType::I8 ? 127 : 255;
      if (v.i < lo || v.i > hi) {
        error(v.loc, fmt::format("integer literal {} is out of range for {} ({} to {})", v.i, typeName(t), lo, hi));
        return nullptr;
      }
      return cast(t, intImm(v.i, ScalarType::I32, v.loc), v.loc);
    }
    if (isHalf(t) && std::isinf(intToFloat(v.i, t))) {
      error(v.loc, fmt::format("integer literal {} is out of range for {}", v.i, typeName(t)));
      return nullptr;
    }
    return cast(t, intImm(v.i, fitsI32(v.i) ? ScalarType::I32 : ScalarType::I64, v.loc), v.loc);
  }
  if (isNarrowInt(t)) {
    error(v.loc, fmt::format("a float literal cannot be used as {}; {} holds integers", typeName(t), typeName(t)));
    return nullptr;
  }
  if (isIntegral(t)) {
    error(v.loc, fmt::format("a float literal cannot be used as {} implicitly; use an explicit cast: {}(...)",
                             typeName(t), typeName(t)));
    return nullptr;
  }
  if (t == ScalarType::F64) return floatImm(v.f, ScalarType::F64, v.loc);
  if (isHalf(t)) {
    // Rounded once, from the literal's exact value, when the sizes are bound (Bind folds the cast).
    if (std::isinf(roundToFloat(v.f, t))) {
      error(v.loc, fmt::format("float literal {} is out of range for {}", v.f, typeName(t)));
      return nullptr;
    }
    return cast(t, floatImm(v.f, ScalarType::F64, v.loc), v.loc);
  }
  // A literal is rounded once from its decimal text (v.f32); a folded value from its double.
  const float asF32 = v.f32 ? *v.f32 : std::fabs(v.f) >= 0x1.ffffffp127 ? std::numeric_limits<float>::infinity()
                                                                         : float(v.f);
  if (std::isinf(asF32)) {  // FLT_MAX + half an ulp and beyond round to infinity
    error(v.loc, fmt::format("float literal {} is out of range for f32: it rounds to infinity (the largest f32 is "
                             "3.4028235e38)", v.f));
    return nullptr;
  }
  return cast(ScalarType::F32, floatImm(v.f32 ? double(*v.f32) : v.f, ScalarType::F64, v.loc), v.loc);
}

// An untyped constant with no context takes the default type: i32 for integers, f64 for floats.
Expr KernelSema::toDefault(const Value& v) {
  if (v.isTyped()) return v.ir;
  return convert(v, v.kind == Value::Kind::UntypedInt ? ScalarType::I32 : ScalarType::F64, "a literal");
}

// Gives operands that must agree one type: the type of the typed ones (which must all be equal),
// else the hint if the literals fit it, else the literals' default. Converts every operand to
// typed IR. nullopt after an error.
std::optional<ScalarType> KernelSema::unify(std::vector<Value>& vals, std::optional<ScalarType> hint, SourceLoc l,
                                            const std::string& what) {
  std::optional<ScalarType> t;
  bool anyFloatLiteral = false;
  for (const Value& v : vals) {
    if (!v.ok()) return std::nullopt;
    if (v.kind == Value::Kind::UntypedFloat) anyFloatLiteral = true;
    if (!v.isTyped()) continue;
    if (!t) {
      t = v.type();
    } else if (*t != v.type()) {
      ScalarType half = isStorage(*t) ? *t : v.type();
      // Signed and unsigned: neither converts the other implicitly, and which one is meant is the
      // writer's choice (u32(x) keeps the low 32 bits, i64(...) holds both).
      const bool signedness = isIntegral(*t) && isIntegral(v.type()) && (isUnsigned(*t) || isUnsigned(v.type()));
      error(l, fmt::format("mismatched types {} and {} in {}; {}", typeName(*t), typeName(v.type()), what,
                           isStorage(half) ? halfAdvice(half)
                           : signedness    ? fmt::format("convert one of them: {}(...) or {}(...)", typeName(*t),
                                                         typeName(v.type()))
                                           : fmt::format("use an explicit cast such as {}(...)", typeName(*t))));
      return std::nullopt;
    }
  }
  if (!t) {
    if (hint && (isFloat(*hint) || (isIntegral(*hint) && !anyFloatLiteral))) t = hint;
    else t = anyFloatLiteral ? ScalarType::F64 : ScalarType::I32;
  }
  for (Value& v : vals) {
    if (v.isTyped()) continue;
    Expr x = convert(v, *t, what);
    if (!x) return std::nullopt;
    v = Value::typed(x);
  }
  return t;
}

Value KernelSema::lower(const ast::Expr& e, std::optional<ScalarType> hint) {
  switch (e.kind) {
    case ast::ExprKind::Error:
      return {};
    case ast::ExprKind::Number: {
      SourceLoc l = loc(e.span);
      const ast::Number& n = e.number;
      if (!n.suffix) return n.isFloat ? Value::untypedFloat(n.floatValue, l, n.f32Value) : Value::untypedInt(n.intValue, l);
      if (isFloat(*n.suffix)) return Value::typed(floatImm(n.isFloat ? n.floatValue : (double)n.intValue, *n.suffix, l));
      return Value::typed(intImm(n.intValue, *n.suffix, l));
    }
    case ast::ExprKind::Name: return lowerName(e);
    case ast::ExprKind::Index: return lowerIndexExpr(e);
    case ast::ExprKind::Unary: return lowerUnary(e, hint);
    case ast::ExprKind::Binary: return lowerBinary(e, hint);
    case ast::ExprKind::Call: return e.binders.empty() ? lowerCall(e, hint) : lowerReduce(e, hint);
  }
  RTCG_ASSERT(false, "bad ast expression kind");
}

Value KernelSema::lowerName(const ast::Expr& e) {
  SourceLoc l = loc(e.span);
  const Symbol* s = lookup(e.name);
  if (!s) {
    unknownName(e.name, l, "name");
    return {};
  }
  switch (s->kind) {
    case Symbol::Kind::Size: return Value::typed(var(VarKind::Size, s->id, s->name, ScalarType::I32, l));
    case Symbol::Kind::Scalar: return Value::typed(var(VarKind::Scalar, s->id, s->name, s->type, l));
    case Symbol::Kind::Index:
    case Symbol::Kind::Reduction: return Value::typed(var(VarKind::Index, s->id, s->name, ScalarType::I32, l));
    case Symbol::Kind::Let: return Value::typed(var(VarKind::Let, s->id, s->name, s->type, l));
    case Symbol::Kind::Array:
      error(l, fmt::format("the array '{}' must be indexed: {}[...]", e.name, e.name));
      return {};
  }
  RTCG_ASSERT(false, "bad symbol kind");
}

Value KernelSema::lowerIndexExpr(const ast::Expr& e) {
  SourceLoc l = loc(e.span);
  const Symbol* s = lookup(e.name);
  if (!s) {
    unknownName(e.name, loc(e.nameSpan), "array");
    return {};
  }
  if (s->kind != Symbol::Kind::Array) {
    error(loc(e.nameSpan), fmt::format("'{}' is {}, not an array; it cannot be indexed", e.name, describe(s->kind)));
    return {};
  }
  int array = s->id;
  const Param& p = kernel_.params[array];
  if (p.mode == ArrayMode::Out && !written_[array]) {
    error(l, fmt::format("'{}' is an 'out' array and is read here before anything is written to it; declare it "
                         "'inout' to read its initial contents", e.name));
    return {};
  }
  if (p.isLocal()) {
    localReadsInNest_.emplace(array, l);
    localReads_.emplace(array, l);
  }
  std::vector<Expr> indices = lowerIndices(e.args, array, l);
  if (indices.size() != e.args.size()) return {};
  return Value::typed(load(array, p.type, std::move(indices), l));
}

Value KernelSema::lowerUnary(const ast::Expr& e, std::optional<ScalarType> hint) {
  SourceLoc l = loc(e.span);
  if (hint && isStorage(*hint)) hint.reset();  // negation is arithmetic: never on a storage type
  if (e.unaryOp == UnaryOp::Not) {
    Value a = lower(*e.args[0], std::nullopt);
    if (!a.ok()) return {};
    if (!a.isTyped() || a.type() != ScalarType::Bool) {
      error(a.loc, fmt::format("'!' needs a bool operand, found {}", describe(a)));
      return {};
    }
    return Value::typed(unary(UnaryOp::Not, a.ir, l));
  }
  Value a = lower(*e.args[0], hint);
  if (!a.ok()) return {};
  if (a.kind == Value::Kind::UntypedInt) {
    if (a.i == INT64_MIN) {
      error(l, "integer overflow in constant expression");
      return {};
    }
    return Value::untypedInt(-a.i, l);
  }
  if (a.kind == Value::Kind::UntypedFloat)
    return Value::untypedFloat(-a.f, l, a.f32 ? std::optional<float>(-*a.f32) : std::nullopt);
  if (a.type() == ScalarType::Bool) {
    error(l, "unary '-' needs a number, found a bool");
    return {};
  }
  if (isStorage(a.type())) {
    error(l, fmt::format("unary '-' cannot be applied to {} values: {}", typeName(a.type()), halfAdvice(a.type())));
    return {};
  }
  return Value::typed(unary(UnaryOp::Neg, a.ir, l));
}

// Folds arithmetic on two untyped constants, in the exact integer or double arithmetic the
// literals have before they get a type.
Value KernelSema::fold(BinaryOp op, const Value& a, const Value& b, SourceLoc l) {
  if (a.kind == Value::Kind::UntypedInt && b.kind == Value::Kind::UntypedInt) {
    int64_t r = 0;
    bool overflow = false;
    switch (op) {
      case BinaryOp::Add: overflow = __builtin_add_overflow(a.i, b.i, &r); break;
      case BinaryOp::Sub: overflow = __builtin_sub_overflow(a.i, b.i, &r); break;
      case BinaryOp::Mul: overflow = __builtin_mul_overflow(a.i, b.i, &r); break;
      case BinaryOp::Div:
      case BinaryOp::Mod:
        if (b.i == 0) {
          error(l, "division by zero in constant expression");
          return {};
        }
        overflow = a.i == INT64_MIN && b.i == -1;
        if (!overflow) r = op == BinaryOp::Div ? floorDiv(a.i, b.i) : floorMod(a.i, b.i);
        break;
      default: RTCG_ASSERT(false, "fold of a non-arithmetic operator");
    }
    if (overflow) {
      error(l, "integer overflow in constant expression");
      return {};
    }
    return Value::untypedInt(r, l);
  }
  double x = a.asDouble(), y = b.asDouble(), r = 0;
  switch (op) {
    case BinaryOp::Add: r = x + y; break;
    case BinaryOp::Sub: r = x - y; break;
    case BinaryOp::Mul: r = x * y; break;
    case BinaryOp::Div:
      if (y == 0) {
        error(l, "division by zero in constant expression");
        return {};
      }
      r = x / y;
      break;
    case BinaryOp::Mod:
      error(l, "'%' needs integer operands, found a float literal");
      return {};
    default: RTCG_ASSERT(false, "fold of a non-arithmetic operator");
  }
  if (!std::isfinite(r)) {
    error(l, "floating-point overflow in constant expression");
    return {};
  }
  return Value::untypedFloat(r, l);
}

Value KernelSema::lowerBinary(const ast::Expr& e, std::optional<ScalarType> hint) {
  SourceLoc l = loc(e.span);
  BinaryOp op = e.binaryOp;
  std::string what = fmt::format("'{}'", opSymbol(op));
  if (hint && isStorage(*hint)) hint.reset();  // operators never yield a storage type: literals keep their default

  if (isLogical(op)) {
    Value a = lower(*e.args[0], std::nullopt), b = lower(*e.args[1], std::nullopt);
    if (!a.ok() || !b.ok()) return {};
    for (const Value* v : {&a, &b})
      if (!v->isTyped() || v->type() != ScalarType::Bool) {
        error(v->loc, fmt::format("'{}' needs bool operands, found {}", opSymbol(op), describe(*v)));
        return {};
      }
    return Value::typed(binary(op, a.ir, b.ir, l));
  }

  // Operands agree on a type; the left operand's type guides literals inside the right one.
  std::optional<ScalarType> operandHint = isComparison(op) ? std::nullopt : hint;
  Value a = lower(*e.args[0], operandHint);
  if (a.isTyped()) operandHint = a.type();
  Value b = lower(*e.args[1], operandHint);
  if (!a.ok() || !b.ok()) return {};
  if (!isComparison(op) && a.isUntyped() && b.isUntyped()) return fold(op, a, b, l);

  std::vector<Value> vals = {a, b};
  std::optional<ScalarType> t = unify(vals, isComparison(op) ? std::nullopt : hint, l, what);
  if (!t) return {};
  if (*t == ScalarType::Bool && !(op == BinaryOp::Eq || op == BinaryOp::Ne)) {
    error(l, fmt::format("'{}' cannot be applied to bool values", opSymbol(op)));
    return {};
  }
  if (isStorage(*t)) {
    error(l, fmt::format("'{}' cannot be applied to {} values: {}", opSymbol(op), typeName(*t), halfAdvice(*t)));
    return {};
  }
  if (op == BinaryOp::Mod && isFloat(*t)) {
    error(l, fmt::format("'%' needs integer operands, found {}", typeName(*t)));
    return {};
  }
  // Only fold() saw constant divisors: `i / 0` passed check (and divides by zero on the device).
  Expr divisor = vals[1].ir;
  while (divisor->kind == ExprKind::Cast) divisor = divisor->operands[0];  // 0.0 in f32 context
  if (integerUses_ == 0 && (op == BinaryOp::Div || op == BinaryOp::Mod) &&
      ((divisor->kind == ExprKind::IntImm && divisor->intValue == 0) ||
       (divisor->kind == ExprKind::FloatImm && divisor->floatValue == 0.0))) {
    error(b.loc, fmt::format("division by zero: the divisor of '{}' is the constant 0", opSymbol(op)));
    return {};
  }
  return Value::typed(binary(op, vals[0].ir, vals[1].ir, l));
}

Value KernelSema::lowerCast(const ast::Expr& e, ScalarType to) {
  SourceLoc l = loc(e.span);
  if (e.args.size() != 1) {
    error(l, fmt::format("a conversion to {} takes 1 argument, found {}", typeName(to), e.args.size()));
    return {};
  }
  // A conversion to a storage type computes its argument in f32 (literals alone are rounded once),
  // to i8 or u8 in i32.
  Value v = lower(*e.args[0], isHalf(to) ? ScalarType::F32 : isNarrowInt(to) ? ScalarType::I32 : to);
  if (!v.ok()) return {};
  // i8 / u8 keep an integer's low 8 bits; a float has no such bits: it is converted to an integer first.
  if (isNarrowInt(to) && (v.kind == Value::Kind::UntypedFloat || (v.isTyped() && isFloat(v.type())))) {
    error(l, fmt::format("{0}(...) converts integers (keeping their low 8 bits), not {1}; convert the float to an "
                         "integer first: {0}(i32(...))", typeName(to), describe(v)));
    return {};
  }
  if (v.isUntyped()) {
    // An explicit conversion of a literal: to its own kind it is just a typed literal.
    if (v.kind == Value::Kind::UntypedFloat && isIntegral(to))
      return Value::typed(cast(to, floatImm(v.f, ScalarType::F64, v.loc), l));
    Expr x = convert(v, to, fmt::format("{}(...)", typeName(to)));
    return x ? Value::typed(x) : Value{};
  }
  if (v.type() == to) return v;
  return Value::typed(cast(to, v.ir, l));
}

Value KernelSema::lowerCall(const ast::Expr& e, std::optional<ScalarType> hint) {
  SourceLoc l = loc(e.span);
  const std::string& name = e.name;
  auto arity = [&](size_t n) {
    if (e.args.size() == n) return true;
    error(l, fmt::format("'{}' takes {} argument{}, found {}", name, n, n == 1 ? "" : "s", e.args.size()));
    return false;
  };

  if (std::optional<ScalarType> to = parseTypeName(name); to && *to != ScalarType::Bool) return lowerCast(e, *to);
  if (name == "int") {
    error(loc(e.nameSpan), "'int' is only for size parameters; to convert write i32(...) or i64(...)");
    return {};
  }
  if (name == "bool") {
    error(loc(e.nameSpan), "there is no conversion to bool; compare instead, e.g. x != 0");
    return {};
  }
  if (name == "sum" || name == "product") {
    error(l, fmt::format("'{}' needs an index range: {}(k in 0..n, expression)", name, name));
    return {};
  }
  if (name == "select") {
    if (!arity(3)) return {};
    Value c = lower(*e.args[0], std::nullopt);
    if (!c.ok()) return {};
    if (!c.isTyped() || c.type() != ScalarType::Bool) {
      error(c.loc, fmt::format("the condition of select must be a bool, found {}", describe(c)));
      return {};
    }
    Value a = lower(*e.args[1], hint);
    Value b = lower(*e.args[2], a.isTyped() ? std::optional(a.type()) : hint);
    std::vector<Value> vals = {a, b};
    if (!unify(vals, hint, l, "the branches of select")) return {};
    return Value::typed(select(c.ir, vals[0].ir, vals[1].ir, l));
  }
  auto fn = mathFunctions().find(name);
  if (fn == mathFunctions().end()) {
    if (const Symbol* s = lookup(name)) {
      if (s->kind == Symbol::Kind::Array)
        error(loc(e.nameSpan), fmt::format("'{}' is an array, not a function; index it with brackets: {}[...]",
                                           name, name));
      else
        error(loc(e.nameSpan), fmt::format("'{}' is {}, not a function", name, describe(s->kind)));
    } else {
      error(loc(e.nameSpan), fmt::format("unknown function '{}'{}", name, suggestion(name, callableNames())));
    }
    return {};
  }
  MathFn f = fn->second;
  if (!arity((size_t)fnArity(f))) return {};
  // Float-only functions make literal arguments floats: sqrt(2) is sqrt(2.0). No function takes a
  // storage type, so its hint does not reach the arguments.
  std::optional<ScalarType> argHint = hint && isStorage(*hint) ? std::nullopt : hint;
  if (isFloatOnly(f) && !(argHint && isFloat(*argHint))) argHint = ScalarType::F64;
  std::vector<Value> vals;
  for (const ast::ExprPtr& a : e.args) {
    vals.push_back(lower(*a, argHint));
    if (vals.back().isTyped()) argHint = vals.back().type();  // guides later literal arguments
  }
  std::optional<ScalarType> t = unify(vals, argHint, l, fmt::format("the arguments of '{}'", name));
  if (!t) return {};
  if (*t == ScalarType::Bool) {
    error(l, fmt::format("'{}' cannot be applied to bool values", name));
    return {};
  }
  if (isStorage(*t)) {
    error(l, fmt::format("'{}' cannot be applied to {} values: {}", name, typeName(*t), halfAdvice(*t)));
    return {};
  }
  if (isFloatOnly(f) && !isFloat(*t)) {
    error(l, fmt::format("'{}' needs floating-point arguments, found {}; use an explicit cast such as f32(...)",
                         name, typeName(*t)));
    return {};
  }
  std::vector<Expr> args;
  for (Value& v : vals) args.push_back(v.ir);
  return Value::typed(call(f, std::move(args), l));
}

Value KernelSema::lowerReduce(const ast::Expr& e, std::optional<ScalarType> hint) {
  SourceLoc l = loc(e.span);
  std::optional<ReduceOp> op = reduction(e.name);
  // A difference or a quotient over a range (a scan of one, over 0..i + 1) has no order-free
  // meaning: the reduction and its scan may combine in any order (docs/language.md 6.1, 5.2).
  static const std::set<std::string> unordered = {"difference", "diff", "sub", "subtract", "minus",
                                                  "quotient", "div", "divide"};
  if (!op && unordered.count(e.name)) {
    error(loc(e.nameSpan), fmt::format("'{}' is not associative, so it cannot be a reduction or a scan (their values "
                                       "may combine in any order); only sum, product, max and min take index ranges (a running "
                                       "difference x[0] - x[1] - ... - x[i] is x[0] - sum(j in 1..i + 1, x[j]))",
                                       e.name));
    return {};
  }
  if (!op) {
    error(loc(e.nameSpan), fmt::format("'{}' is not a reduction; only sum, product, max and min take index "
                                       "ranges{}", e.name, suggestion(e.name, {"sum", "product", "max", "min"})));
    return {};
  }
  size_t scopeSize = scope_.size();
  std::vector<Loop> loops;
  bool ok = true;
  for (const ast::Binder& b : e.binders) {
    std::optional<Loop> loop = lowerLoop(b, Symbol::Kind::Reduction);
    if (loop) loops.push_back(std::move(*loop));
    else ok = false;
  }
  Value body;
  if (ok) body = lower(*e.args[0], hint && isStorage(*hint) ? std::nullopt : hint);  // never reduces a storage type
  scope_.resize(scopeSize);
  if (!ok || !body.ok()) return {};
  Expr x;
  if (body.isUntyped()) {
    bool hintFits = hint && ((isFloat(*hint) && !isHalf(*hint)) ||
                             (isIntegral(*hint) && body.kind == Value::Kind::UntypedInt));
    x = hintFits ? convert(body, *hint, "the reduction") : toDefault(body);
  } else {
    x = body.ir;
  }
  if (!x) return {};
  if (x->type == ScalarType::Bool) {
    error(body.loc, fmt::format("'{}' cannot reduce bool values", e.name));
    return {};
  }
  if (isStorage(x->type)) {
    error(body.loc, fmt::format("'{}' cannot reduce {} values: {}", e.name, typeName(x->type), halfAdvice(x->type)));
    return {};
  }
  return Value::typed(reduce(*op, std::move(loops), x, l));
}

// --- kernels ---------------------------------------------------------------------------------

Kernel KernelSema::run() {
  kernel_.name = ast_.name;
  kernel_.loc = loc(ast_.nameSpan);
  declareParams();

  // Each top-level `for` is a nest; each run of statements between them is a nest without loops.
  std::vector<const ast::Stmt*> group;
  auto flush = [&] {
    if (group.empty()) return;
    lowerNest(nullptr, group, loc(group.front()->span));
    group.clear();
  };
  for (const ast::Stmt& s : ast_.body) {
    if (s.kind == ast::StmtKind::Local) {
      flush();
      declareLocal(s);
      continue;
    }
    if (s.kind != ast::StmtKind::For) {
      group.push_back(&s);
      continue;
    }
    flush();
    std::vector<const ast::Stmt*> body;
    for (const ast::Stmt& b : s.body) body.push_back(&b);
    lowerNest(&s.binders, body, loc(s.headerSpan));
  }
  flush();

  checkLocalsUsed();
  for (size_t i = 0; i < kernel_.params.size(); ++i) {
    const Param& p = kernel_.params[i];
    if (p.isWritten() && !p.isLocal() && !written_[i] && !bodyIncomplete_)
      error(p.loc, fmt::format("'{}' is declared '{}' but never written{}", p.name,
                               p.mode == ArrayMode::Out ? "out" : "inout",
                               p.mode == ArrayMode::InOut ? "; declare it 'in' if it is only read" : ""));
  }
  kernel_.numVarIds = nextId_;
  return std::move(kernel_);
}

}  // namespace

std::vector<Kernel> analyze(const ast::Program& program, const LineMap& lines, Diagnostics& diags) {
  std::vector<Kernel> kernels;
  std::map<std::string, SourceLoc> seen;
  for (const ast::Kernel& k : program.kernels) {
    SourceLoc l = lines.loc(k.nameSpan);
    auto [it, fresh] = seen.emplace(k.name, l);
    if (!fresh) {
      diags.error(l, fmt::format("redefinition of kernel '{}'", k.name));
      diags.note(it->second, fmt::format("kernel '{}' is first defined here", k.name));
    }
    kernels.push_back(KernelSema(k, lines, diags).run());
  }
  return kernels;
}

}  // namespace rtcg::frontend
