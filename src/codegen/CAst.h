// A small syntax tree for the subset of CUDA C that the emitter produces. Code is built as a
// tree and printed by the strict printer (CPrinter.h), which checks identifiers, operators and
// type names and parenthesizes by precedence, so no code is ever pasted together from strings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rtcg::c {

enum class ExprKind : uint8_t {
  IntLit,    // intValue; `longLong` selects an LL suffix, `isUnsigned` a u suffix (unsigned int)
  FloatLit,  // floatValue; `isFloat32` selects float (f suffix) or double
  BoolLit,   // intValue 0/1
  Name,      // text: an identifier
  Member,    // args[0].text   (threadIdx.x): text is the field
  Unary,     // text: - ! & (address of)
  Binary,    // text: + - * / % < <= > >= == != & && ||
  Call,      // text: function name, args
  Cast,      // text: target type (a type name the printer knows), args[0]
  Ternary,   // args = {cond, a, b}
  Index,     // args = {array, index}
};

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

struct Expr {
  ExprKind kind{};
  std::string text;
  int64_t intValue = 0;
  double floatValue = 0.0;
  bool longLong = false;
  bool isFloat32 = false;
  bool isUnsigned = false;
  std::vector<ExprP> args;
};

ExprP intLit(int64_t v, bool longLong = false);
ExprP uintLit(uint32_t v);  // 263u
ExprP floatLit(double v, bool isFloat32);
ExprP boolLit(bool v);
ExprP name(std::string id);
ExprP member(ExprP object, std::string field);
ExprP unary(std::string op, ExprP a);
ExprP binary(std::string op, ExprP a, ExprP b);
ExprP call(std::string fn, std::vector<ExprP> args);
ExprP castTo(std::string type, ExprP a);
ExprP ternary(ExprP cond, ExprP a, ExprP b);
ExprP index(ExprP array, ExprP idx);

// Sum of terms, dropping literal zeros and folding literal constants (for index arithmetic).
ExprP sum(const std::vector<ExprP>& terms);
// a * b, folding multiplication by literal 0 and 1.
ExprP product(ExprP a, ExprP b);

enum class StmtKind : uint8_t {
  Decl,         // [constexpr|const] type name = init;   (init may be null: `type name;`)
  Assign,       // lhs op rhs;   op: = += -= *=
  For,          // for (type name = lo; name < hi; ++name) body, with `unroll`
  If,           // if (cond) body else elseBody
  Block,        // { body }
  Comment,      // // text   (one line per element of `lines`)
  SyncThreads,  // __syncthreads();
  Return,       // return [value];
  Blank,        // an empty line, for readability
  SharedArray,  // __shared__ type name[size];  or, with isExtern, extern __shared__ type name[];
                // or, with size 0 and isScalar, __shared__ type name;
  ExprStmt,     // init;   (a call whose value is not used: __threadfence();)
};

// How a for loop is unrolled: no pragma (the compiler decides), `#pragma unroll` (fully) or
// `#pragma unroll 1` (kept as a loop).
enum class Unroll : uint8_t { Default, Full, Never };

struct Stmt {
  StmtKind kind{};
  // Decl: type, name, init, isConst / isConstexpr. For: type, name (the loop variable).
  std::string type;
  std::string name;
  bool isConst = false;
  bool isConstexpr = false;
  bool isExtern = false;  // SharedArray: dynamic shared memory (size given at launch)
  bool isScalar = false;  // SharedArray: one variable, not an array
  int64_t align = 16;     // SharedArray (extern): its alignment in bytes (wgmma's swizzle: 1024)
  int64_t size = 0;       // SharedArray, Decl (a thread's array, localArray): elements
  ExprP init;
  // Assign
  ExprP lhs;
  std::string op;
  ExprP rhs;
  // For: lo <= name < hi
  ExprP lo, hi;
  Unroll unroll = Unroll::Default;
  // If: cond; Return: value (may be null)
  ExprP cond;
  std::vector<std::string> lines;  // Comment
  std::vector<Stmt> body, elseBody;
};

Stmt decl(std::string type, std::string name, ExprP init, bool isConst = true);
// `type name[elements];`: a thread's own array, indexed only by constants once its loops are
// unrolled (so that it lives in registers).
Stmt localArray(std::string type, std::string name, int64_t elements);
Stmt constexprDecl(std::string type, std::string name, ExprP init);
Stmt assign(ExprP lhs, std::string op, ExprP rhs);
Stmt forLoop(std::string type, std::string var, ExprP lo, ExprP hi, Unroll unroll, std::vector<Stmt> body);
Stmt ifThen(ExprP cond, std::vector<Stmt> body, std::vector<Stmt> elseBody = {});
Stmt block(std::vector<Stmt> body);
Stmt comment(std::string text);  // split into lines at '\n'
Stmt syncThreads();
Stmt returnStmt(ExprP value = nullptr);
Stmt blank();
Stmt sharedArray(std::string type, std::string name, int64_t elements);  // __shared__ type name[elements];
Stmt externSharedArray(std::string type, std::string name, int64_t align = 16);  // extern __shared__ __align__(align) type name[];
Stmt sharedScalar(std::string type, std::string name);                  // __shared__ type name;
Stmt exprStmt(ExprP call);                                               // call;

// Whether an expression of `stmts` (at any depth) names `name`.
bool usesName(const std::vector<Stmt>& stmts, const std::string& name);

struct Param {
  std::string type;        // element or scalar type
  std::string name;
  bool pointer = false;    // `type*`
  bool constPointee = false;
  bool restrict = false;   // __restrict__
  bool gridConstant = false;  // `const __grid_constant__ type name` (a TMA tensor map)
};

enum class FunctionKind : uint8_t {
  Kernel,        // extern "C" __global__ void, optionally __launch_bounds__
  DeviceInline,  // static __device__ __forceinline__
};

struct Function {
  FunctionKind kind{};
  std::string returnType = "void";
  std::string name;
  std::vector<Param> params;
  int launchBounds = 0;  // Kernel: threads per block, 0 for none
  std::vector<std::string> commentLines;  // printed above the function
  std::vector<Stmt> body;
  int minBlocks = 0;     // Kernel: the second argument of __launch_bounds__, 0 for none
};

// A module-scope array in global memory: `__device__ type name[size];` (zero-initialized when the
// module is loaded), with comment lines above it.
struct GlobalArray {
  std::string type;
  std::string name;
  int64_t size = 0;
  std::vector<std::string> commentLines;
  int align = 0;  // bytes (__align__), 0: the type's own
};

struct Module {
  std::vector<std::string> commentLines;  // printed at the top
  // Fixed helper code of the emitter (never text from the user), printed as it is after the comments.
  std::vector<std::string> preludes;
  std::vector<GlobalArray> globals;       // printed before the functions
  std::vector<Function> functions;
};

}  // namespace rtcg::c
