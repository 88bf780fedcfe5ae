// The rtcg IR: a polyhedral-lite description of a loop kernel.
//
// Semantics
// ---------
// A Kernel has parameters and a sequence of LoopNests, executed one after another (each nest
// sees all writes of the nests before it; on the GPU each nest is its own launch, unless the
// schedule fuses consecutive nests that share their leading index: fusionConflicts, ir/Analysis.h).
//
// A LoopNest has an ordered list of Loops (outermost first) and a body of Stmts. Each Loop is a
// named integer index running over the half-open range [lo, hi), where lo and hi are affine in
// size parameters and the indices of *enclosing* loops of the same nest (triangular domains are
// allowed). The loops of a nest are the *parallel* (output) indices: the body runs once for every
// point of the domain, and the points are independent: no two points may write the same array
// element, and no point may read an element another point writes (the frontend proves this).
//
// The body is a list of Stmts run in order at each point:
//   Let   : a scalar temporary, visible to the following statements of the same body;
//   Store : array[indices] = value, once per point.
//   A Store with `accumulate` set is an *accumulation*, `array[indices] op= value` (op: Sum adds,
//   Max and Min keep the larger / smaller): every point combines its value into the element, and
//   several points may name the same element (a histogram, a scatter-add through an index map).
//   The result equals the updates applied one after another in some order of the points (the
//   reference executor: domain order); an integer result is therefore exact and a max/min one
//   too, while a floating-point sum's rounding depends on the order (verification allows the
//   error of a sum of that length). Element types: i32, u32, i64, f32, f64 for Sum, i32, u32 and
//   i64 for Max and Min (the operations the GPU has atomics for; a u32 sum wraps modulo 2^32). A nest that accumulates into an array
//   neither reads it nor stores it plainly, and accumulates into it with one operator only
//   (checkRaces); the array is written (out after an earlier nest's store, or inout).
//
// Reductions are expressions: Reduce(op, loops, body) combines `body` over its own loops
// (the *reduction* indices), whose bounds may depend on enclosing parallel and reduction
// indices. Reductions nest. An empty reduction yields op's identity (0, 1, -inf, +inf).
// A reduction loop's bound may also be a *range read*: one Load of an `in` i32 array whose
// indices are affine in sizes and enclosing indices (CSR rows: p in rowptr[i]..rowptr[i + 1]);
// passes may also read a local i32 array an earlier nest wrote (the language does not).
// Such a *data-dependent range* must be non-decreasing (lo <= hi) and lie within the extent of
// every array dimension the index indexes alone (ir/DataRanges.h): its hull for the schedule and
// the model; the reference executor checks both at run time, and the bounds proof cannot.
//
// Arrays are dense, row-major (the last index varies fastest), of fixed shape given by
// expressions in size parameters. An access array[e0, ..., ek] has one index expression per
// dimension. Index expressions are affine in indices and size parameters, with floor division
// and floor modulo by positive integer constants allowed (quasi-affine), or *indirect*: they
// contain a Load from an integer array (u[vmap[k, f]]).
//
// Types: every Expr has a ScalarType. Integer `/` and `%` are floor division and floor modulo
// (rounding toward -infinity), as in Python; float `/` is IEEE division. Comparisons and
// logical operators yield Bool. Arithmetic operands always have identical types after the
// frontend (implicit conversions are inserted as explicit Casts, only for untyped literals).
// The storage types f16 and bf16 take no arithmetic (see ScalarType); a Cast to them rounds to
// nearest, ties to even, and a Cast from them is exact.
//
// Kernel-local arrays (`local t: f32[m];`, ArrayMode::Local) are temporaries that live only
// inside one run of the kernel: they are Params after all the signature's parameters (so Loads and
// Stores name them like any array) but take no argument and are never seen by callers. The
// frontend guarantees that each is written by exactly one nest and read only by later nests (never
// by its writer), so every read sees a completed nest's result. Elements no nest writes are
// undefined (the reference executor fills them with NaN / a sentinel). On the GPU a local is
// module-global device memory, so launches of a kernel with locals do not overlap.
//
// Size parameters are integer constants that are bound before code generation (-D n=500).
// bindSizes (ir/Bind.h) substitutes them, after which no Var of kind Size remains and shapes
// and loop bounds are integer expressions in indices only (IntImm for rectangular domains).
//
// Variables are referred to by id: every Loop (parallel or reduction) and every Let of a
// kernel has an id unique within that kernel; Size and Scalar variables use their parameter's
// position in Kernel::params. Names are kept for printing and diagnostics only.
//
// IR values are immutable: an Expr is a shared pointer to a const node. Passes build new trees.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "support/Diagnostics.h"

namespace rtcg {

// F16, BF16, I8 and U8 (appended: the enum's values are part of structural hashes) are storage
// types: array elements, loads, conversions to and from them, lets and selects; never operands of
// arithmetic, comparisons, functions or reductions (the frontend requires a conversion first).
// A conversion to I8 / U8 takes an integer or a bool and keeps its low 8 bits (two's complement).
// U32 (appended likewise) is an arithmetic type, unsigned: + - * and unary - wrap modulo 2^32, /
// and % are unsigned (floor and truncation agree), comparisons, min and max unsigned. A conversion
// to U32 keeps an integer's low 32 bits; a float is truncated toward zero and saturated to
// [0, 2^32 - 1], NaN giving 0 (the device's cvt.rzi.u32). It is no index type: isInteger is
// i32 and i64 only, the types of indices, bounds and the affine analyses; isIntegral adds u32.
enum class ScalarType : uint8_t { Bool, I32, I64, F32, F64, F16, BF16, I8, U8, U32 };

const char* typeName(ScalarType t);      // "bool", "i32", "i64", "f32", "f64", "f16", "bf16", "i8", "u8", "u32"
// "bool", "int", "long long", "float", "double", "__half", "__nv_bfloat16", "signed char", "unsigned char",
// "unsigned int"
const char* cudaTypeName(ScalarType t);
std::optional<ScalarType> parseTypeName(const std::string& s);
// The 16-bit storage floats (f16, bf16).
inline bool isHalf(ScalarType t) { return t == ScalarType::F16 || t == ScalarType::BF16; }
// The 8-bit storage integers (i8, u8).
inline bool isNarrowInt(ScalarType t) { return t == ScalarType::I8 || t == ScalarType::U8; }
// The storage types: no arithmetic on them (see above).
inline bool isStorage(ScalarType t) { return isHalf(t) || isNarrowInt(t); }
inline bool isFloat(ScalarType t) { return t == ScalarType::F32 || t == ScalarType::F64 || isHalf(t); }
inline bool isInteger(ScalarType t) { return t == ScalarType::I32 || t == ScalarType::I64; }
// The unsigned arithmetic type (u32), and the arithmetic integers (i32, i64, u32).
inline bool isUnsigned(ScalarType t) { return t == ScalarType::U32; }
inline bool isIntegral(ScalarType t) { return isInteger(t) || isUnsigned(t); }
int typeBytes(ScalarType t);  // bool counts 1
// `v` rounded to the float type `t` (to nearest, ties to even), as the device converts it.
double roundToFloat(double v, ScalarType t);
// The integer `v` converted to the float type `t`, rounded once.
double intToFloat(int64_t v, ScalarType t);

enum class ExprKind : uint8_t {
  IntImm,    // intValue, type I32/I64/Bool(0/1)
  FloatImm,  // floatValue, type F32/F64, or F16/BF16 holding a value of that type (folded conversions)
  Var,       // varKind + varId (+ name)
  Load,      // array (param index), operands = one index per dimension
  Unary,     // unaryOp, operands = {a}
  Binary,    // binaryOp, operands = {a, b}
  Call,      // mathFn, operands = arguments
  Cast,      // type is the target type, operands = {a}
  Select,    // operands = {cond, ifTrue, ifFalse}
  Reduce,    // reduceOp, loops = reduction loops (outer first), operands = {body}
};

enum class VarKind : uint8_t { Index, Size, Scalar, Let };
enum class UnaryOp : uint8_t { Neg, Not };
enum class BinaryOp : uint8_t { Add, Sub, Mul, Div, Mod, Lt, Le, Gt, Ge, Eq, Ne, And, Or };
enum class MathFn : uint8_t { Sqrt, Exp, Log, Sin, Cos, Abs, Min, Max, Pow, Fma, Floor };
enum class ReduceOp : uint8_t { Sum, Product, Max, Min };

const char* opSymbol(BinaryOp op);   // "+", "<=", "&&", ...
const char* fnName(MathFn fn);       // "sqrt", ...
const char* reduceName(ReduceOp op); // "sum", ...
int fnArity(MathFn fn);
bool isComparison(BinaryOp op);
bool isLogical(BinaryOp op);

struct ExprNode;
using Expr = std::shared_ptr<const ExprNode>;

// A named index over [lo, hi). Used for the parallel loops of a nest and for reduction loops.
struct Loop {
  int id = -1;
  std::string name;
  Expr lo, hi;
  SourceLoc loc;
};

struct ExprNode {
  ExprKind kind{};
  ScalarType type{};
  SourceLoc loc;

  int64_t intValue = 0;     // IntImm
  double floatValue = 0.0;  // FloatImm

  VarKind varKind{};  // Var
  int varId = -1;     // Var: loop/let id, or param index for Size/Scalar
  std::string name;   // Var: for printing

  int array = -1;  // Load: param index of the array

  UnaryOp unaryOp{};
  BinaryOp binaryOp{};
  MathFn mathFn{};
  ReduceOp reduceOp{};

  std::vector<Expr> operands;
  std::vector<Loop> loops;  // Reduce
};

// Constructors. They do not type-check (the frontend does); they set `type` as documented:
// Binary comparisons/logicals give Bool, arithmetic gives the type of `a`.
Expr intImm(int64_t v, ScalarType t = ScalarType::I32, SourceLoc loc = {});
Expr floatImm(double v, ScalarType t = ScalarType::F64, SourceLoc loc = {});
Expr boolImm(bool v, SourceLoc loc = {});
Expr var(VarKind kind, int id, std::string name, ScalarType t, SourceLoc loc = {});
Expr load(int array, ScalarType elemType, std::vector<Expr> indices, SourceLoc loc = {});
Expr unary(UnaryOp op, Expr a, SourceLoc loc = {});
Expr binary(BinaryOp op, Expr a, Expr b, SourceLoc loc = {});
Expr call(MathFn fn, std::vector<Expr> args, SourceLoc loc = {});
Expr cast(ScalarType t, Expr a, SourceLoc loc = {});
Expr select(Expr cond, Expr ifTrue, Expr ifFalse, SourceLoc loc = {});
Expr reduce(ReduceOp op, std::vector<Loop> loops, Expr body, SourceLoc loc = {});
// A copy of `e` with new operands (and loops, for Reduce); other fields kept.
Expr withOperands(const Expr& e, std::vector<Expr> operands, std::vector<Loop> loops = {});
// Whether a loop bound is a range read (a Load: only reduction loops have them), and whether a
// loop has one.
bool isRangeRead(const Expr& bound);
bool isDataDependent(const Loop& l);

enum class StmtKind : uint8_t { Let, Store };

struct Stmt {
  StmtKind kind{};
  SourceLoc loc;
  // Let
  int letId = -1;
  std::string letName;
  // Store
  int array = -1;
  std::vector<Expr> indices;
  // Store: an accumulation `array[indices] op= value` (see the semantics block) when set.
  bool accumulate = false;
  ReduceOp accumOp = ReduceOp::Sum;
  // Both: the value (its type is the Let's type / the array's element type)
  Expr value;
};
// Whether the GPU has an atomic for accumulating values of type `t` with `op` (i32, u32, i64, f32,
// f64 for Sum; i32, u32, i64 for Max and Min); when not, `why` says so in words.
bool accumulationSupported(ReduceOp op, ScalarType t, std::string* why = nullptr);
// The operator's text in an accumulation: "+=", "max=", "min=" ("*=" for Product, never accepted).
const char* accumSymbol(ReduceOp op);

struct LoopNest {
  std::vector<Loop> loops;  // parallel indices, outermost first
  std::vector<Stmt> body;
  SourceLoc loc;
};

enum class ParamKind : uint8_t { Size, Scalar, Array };
// Local (appended: hashed by name) is a kernel-local temporary array (`local t: f32[m];`): not
// part of the kernel's signature, see the semantics block above.
enum class ArrayMode : uint8_t { In, Out, InOut, Local };

struct Param {
  std::string name;
  ParamKind kind{};
  ScalarType type{};         // Size: I32 (as are index variables); Scalar: its type; Array: element type
  std::vector<Expr> shape;   // Array only: extents, outermost first
  ArrayMode mode = ArrayMode::In;
  SourceLoc loc;
  bool isArray() const { return kind == ParamKind::Array; }
  bool isWritten() const { return kind == ParamKind::Array && mode != ArrayMode::In; }
  bool isLocal() const { return kind == ParamKind::Array && mode == ArrayMode::Local; }
};

struct Kernel {
  std::string name;
  std::vector<Param> params;
  std::vector<LoopNest> nests;
  SourceLoc loc;
  int numVarIds = 0;  // loop and let ids are in [0, numVarIds)

  // Values of the size parameters once bound (empty before bindSizes).
  std::map<std::string, int64_t> sizes;
  // The precision policy whose rewrite made these nests ("fp64x": schedule/PolicyRewrite.h), or
  // empty: the nests as written. The reference executes the kernel as written, never a rewrite.
  std::string policy;
  bool isBound() const;

  int findParam(const std::string& name) const;  // -1 if absent; locals included
  // The parameters of the kernel's signature: params[0, numSignatureParams()). The locals follow
  // them (ArrayMode::Local); callers, arguments and outputs never see those.
  size_t numSignatureParams() const;
};

// A parsed source file: several kernels.
struct Program {
  std::string fileName;
  std::string source;
  std::vector<Kernel> kernels;
  const Kernel* find(const std::string& name) const;
};

using SizeBindings = std::map<std::string, int64_t>;

}  // namespace rtcg
