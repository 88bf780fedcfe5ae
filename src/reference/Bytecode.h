// The reference executor's compiled form of a bound kernel: a register machine. Each nest is
// compiled once into straight bytecode with its loops (ForInit/ForNext), so running it never
// walks the Expr tree. Registers are 8-byte slots: float values (f16, bf16, f32 and f64 alike) are
// held as double (exactly), integer and bool values as int64 (u32 values in [0, 2^32): their
// + - * and negation are followed by an IWrap to u32, and / % < max min of such values are unsigned). Internal to src/reference (Reference.cpp drives it).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ir/IR.h"

namespace rtcg::refvm {

union Slot {
  double f;
  int64_t i;
};

enum class Op : uint8_t {
  Move,            // dst = a
  Jump,            // pc = c
  JumpIfZero,      // if (!a.i) pc = c
  JumpIfNonZero,   // if (a.i) pc = c
  ForInit,         // dst = a.i; if (dst >= b.i) pc = c            (loop var dst over [a, b))
  ForNext,         // if (++dst < b.i) pc = c
  CheckRange,      // a data-dependent range [a.i, b.i) (IR.h): throws unless 0 <= a.i <= b.i <= its extent; c = range site
  Affine,          // dst = affines[a].constant + sum coeff * reg
  // float arithmetic on doubles
  FAdd, FSub, FMul, FDiv, FNeg, FMin, FMax, FPow, FFma, FSqrt, FExp, FLog, FSin, FCos, FAbs, FFloor,
  FLt, FLe, FGt, FGe, FEq, FNe,  // -> bool in .i
  // integer arithmetic in 64 bits (wrapping), floor / and %; c = site of the operation
  IAdd, ISub, IMul, IDiv, IMod, INeg, IMin, IMax, IAbs, IFma,
  ILt, ILe, IGt, IGe, IEq, INe, Not,
  // conversions
  FToF32,   // round a double to the nearest float
  FToInt,   // truncate toward zero, saturate to the type in b (ScalarType)
  IToF,     // int64 -> double
  IToF32,   // int64 -> float -> double
  FToHalf,  // round a double to the nearest value of the 16-bit type in b (f16, bf16), ties to even
  IToHalf,  // int64 -> the 16-bit type in b, rounded once
  IWrap,    // wrap to the type in b
  ToBool,   // a.i != 0
  FToBool,  // a.f != 0
  // dst = sum over v in [lo, hi) of the product of 1 or 2 strided loads: a = dot index. Checks the
  // loads' first and last index; when both are in bounds, computes the sum (in the generic code's
  // order, so with identical rounding) and jumps to dots[a].skipPc, else falls through to the
  // generic code of the same reduction, which reports the exact failing point.
  DotF,
  // memory: a = access index, b = value register (stores)
  LoadF, LoadI32, LoadI64, LoadI8, LoadU8, LoadU32, StoreF, StoreI32, StoreI64, StoreI8, StoreU8, StoreU32,
};

struct Instr {
  Op op{};
  int32_t dst = 0, a = 0, b = 0, c = 0;
};

// One array access site: the registers holding its per-dimension indices and the array extents,
// for the bounds check and the row-major offset.
struct AccessSite {
  int array = -1;
  std::vector<int32_t> indexRegs;
  std::vector<int64_t> extents;
  SourceLoc loc;
  bool isStore = false;
  std::vector<std::pair<std::string, int32_t>> loops;  // enclosing loops (name, register), for errors
  // Stores to an array its nest stores to through an indirect index (y[idx[i]] = ...): each
  // records the point that wrote the element (ArrayView::owners), and a second point storing to
  // it is an error. The frontend cannot prove such points write distinct elements, and where two
  // do, the result depends on the order the points run in.
  bool claims = false;
};

// A data-dependent range (ir/DataRanges.h), for CheckRange and its errors.
struct RangeSite {
  std::string index, text;  // "p", "rowptr[i]..rowptr[i + 1]"
  int64_t extent = 0;       // the range must lie in [0, extent]
  std::string limitingArrays;  // "val, col"
  SourceLoc loc;
  std::vector<std::pair<std::string, int32_t>> loops;  // enclosing loops (name, register), for errors
};

struct AffineSum {
  int64_t constant = 0;
  std::vector<std::pair<int64_t, int32_t>> terms;  // (coefficient, register)
};

// One load of a DotSum: index d is baseRegs[d] + coeffs[d] * v.
struct DotOperand {
  int array = -1;
  std::vector<int32_t> baseRegs;
  std::vector<int64_t> coeffs;
  std::vector<int64_t> extents;
};
struct DotSum {
  int32_t lo = 0, hi = 0;  // registers of the reduction's bounds
  int32_t skipPc = 0;
  std::vector<DotOperand> operands;
};

struct Code {
  std::vector<Instr> instrs;
};

struct CompiledNest {
  // Evaluates the outermost loop's bounds (registers outerLo/outerHi); empty for 0-loop nests.
  Code prelude;
  int32_t outerVar = -1, outerLo = -1, outerHi = -1;
  std::string outerName;
  // Runs one value of the outermost loop (or the single point of a 0-loop nest).
  Code body;
  // The arrays whose stores claim their elements (AccessSite::claims), and the number of the
  // nest's parallel loops (the values that name a point).
  std::vector<int> claimed;
  int pointWidth = 0;
  // The nest accumulates (Stmt::accumulate): its points run on one thread, in domain order.
  bool accumulates = false;
};

struct CompiledKernel {
  std::string kernelName;
  std::vector<std::string> paramNames;              // for error messages
  std::vector<bool> written;                        // by param: an out, inout or local array
  int signatureParams = 0;                          // params[signatureParams..] are locals (IR.h)
  std::vector<ScalarType> types;                    // by param: the element or scalar type
  std::vector<Slot> frameTemplate;                  // constants preloaded; scalars filled per run
  std::vector<std::pair<int, int32_t>> scalarRegs;  // (param index, register)
  std::vector<AccessSite> sites;
  std::vector<RangeSite> ranges;
  std::vector<AffineSum> affines;
  std::vector<DotSum> dots;
  std::vector<SourceLoc> opLocs;                    // for integer division by zero errors
  std::vector<CompiledNest> nests;
  std::vector<std::vector<int64_t>> shapes;         // by param (arrays only)
};

// Compiles a bound kernel (Size variables are replaced by constants or taken from k.sizes).
// Throws rtcg::Error for IR it cannot execute (an unbound size, an index used outside its loop,
// a Let used before it is defined, a store to an `in` array, a math function on integers that
// has no integer meaning).
CompiledKernel compileKernel(const Kernel& k);

// Array storage seen by the machine: doubles for float arrays, int32/int64 for integers.
struct ArrayView {
  void* data = nullptr;
  ScalarType type{};
  uint8_t* written = nullptr;  // sampled runs: one byte per element, set to 1 by stores (trackWrites)
  // While a nest that claims this array's elements runs: per element, 1 + the parallel loop
  // values of the point that stored to it (the first slot 0 while no point has), pointWidth + 1
  // slots each. Stores that claim do nothing with it where it is null.
  int64_t* owners = nullptr;
};

// Runs `code` on `frame`. Throws rtcg::Error on an out-of-range index, integer division by zero or
// a store to an element another point of the nest claimed (AccessSite::claims).
// With trackWrites, every store also marks its element in the array's `written` mask (where the
// view has one); without, stores cost what they always did (a separate instantiation).
void execute(const CompiledKernel& k, const Code& code, Slot* frame, const ArrayView* arrays, bool trackWrites = false);

}  // namespace rtcg::refvm
