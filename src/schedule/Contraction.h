// Which nests are contractions that tensor cores may compute (`mma:`): the qualification on the IR.
//
// A statement qualifies when it is one store whose value holds one sum over one reduction index k
// of a product of two operands, each a load (after conversions) whose affine indices make a GEMM
// with the nest's parallel indices:
//
//   o[k, i] = invJ[k] * sum(f, LIFT[i, f] * flux[k, f])      M = i (LIFT), N = k (flux), K = f
//
// The parallel indices in the first operand only are M, those in the second only are N; every
// other parallel index is a batch index (in both operands, or in neither: then the operands are
// shared by the batch), wherever it stands in the nest. M and N may each be several indices
// (collapsed rows: the nest's order, the last fastest), as in a 1-D operator applied along one
// axis of each element's p x p x p nodes:
//
//   v[e, a, b, i] = sum(j, A[i, j] * u[e, a, b, j])          M = i, N = (e, a, b), K = j
//
// Whatever surrounds the sum (`invJ[k] * `, `rhs[k, i] + `) is the epilogue: evaluated per output
// point once the sum is known. Bounds are constant (rectangular tiles).
//
// A nest of several such statements qualifies as one stacked contraction when they share one
// operand exactly and their other operands differ only in the array (same indices, type and
// shape; the sums' own reduction indices stand for one K), over the same M, N, K and batch indices, each writing an array of its own that no other
// statement reads: DG differentiation's three matrices applied to one u,
//
//   ur[k, i] = sum(j, Dr[i, j] * u[k, j]);  us[k, i] = sum(j, Ds[i, j] * u[k, j]);  ...
//
// is M = (statement, i) over Dr, Ds, Dt (the outermost row dimension picks the statement), N = k.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg {

// One dimension of a side's rows (M of A, N of B): a parallel loop, or (loop -1) the stacked
// statements (extent: their count).
struct ContractionRow {
  int loop = -1;
  int64_t lo = 0, extent = 1;
  std::string name;  // the loop's name (explain); "statement" for the stacked statements
};

// One statement of a (stacked) contraction.
struct ContractionPart {
  int statement = 0;  // index into the nest's body
  Expr sum;           // its Reduce node (its epilogue sees it replaced by the accumulator)
  Expr a, b;          // its operands: a holds M, b holds N
  const Loop* kLoop = nullptr;  // its own reduction loop (each sum has one; same bounds)
};

// A nest that qualifies, as the plan and the emitter need it.
struct Contraction {
  std::vector<ContractionPart> parts;  // every statement computed, parts[0] the first
  // The first (or only) statement's body index, sum, operands and reduction loop (parts[0]'s): a
  // plain side's operand, the sizes' and the loop's names for explain, K's bounds.
  int statement() const { return parts[0].statement; }
  const Expr& sum() const { return parts[0].sum; }
  const Expr& a() const { return parts[0].a; }
  const Expr& b() const { return parts[0].b; }
  const Loop* kLoop() const { return parts[0].kLoop; }
  ScalarType type{};                   // of the product and the sum: F32, F64 or I32
  int m = -1, n = -1;                  // the innermost (fastest) loop of M and of N
  // The rows of each side, outermost first: a row point r of M is lo + (r / stride) % extent in
  // each dimension (stride: the product of the extents after it). A side of one loop is {m}.
  std::vector<ContractionRow> mRows, nRows;
  std::vector<int> batch;  // loop ids of the batch indices, outermost first
  // mLo / nLo: the lower bound of loop m / n; mExtent / nExtent: the product of the side's extents.
  int64_t mLo = 0, mExtent = 0, nLo = 0, nExtent = 0, kLo = 0, kExtent = 0;
  std::vector<int64_t> batchLo, batchExtent;
  // Whether the operand's elements along k are contiguous in memory (else along M / N): the
  // staging copy walks the contiguous direction with consecutive threads (coalesced).
  bool aAlongK = true, bAlongK = true;
  // The storage type of both operands when each is a conversion of a load of it to the
  // contraction's type: f16 / bf16 under f32 (the 16-bit arithmetics apply), i8 / u8 under i32
  // (i8: the s8 arithmetic), else the contraction's type.
  ScalarType narrowOperands = ScalarType::F32;
};

// Whether side A (isA) or B has rows of one loop (no collapsed indices, no stacked statements):
// a row point is then the loop's value minus its lower bound, and the operand one expression.
bool plainRows(const Contraction& c, bool isA);
// Whether side A (isA) or B stacks the statements (its operand differs per part).
bool stackedRows(const Contraction& c, bool isA);
// Side A's or B's rows and operands in words where they are more than one loop and one operand
// (explain): "M = (statement, i): Dr[i, j] | Ds[i, j] | Dt[i, j]"; empty for plain rows.
std::string rowsText(const Kernel& k, const Contraction& c, bool isA);
// A and B swapped (M and N with them): the transposed product C^T = B^T A^T.
void transpose(Contraction& c);

// A load of a contraction's statement beside its sum: the epilogue's reads (DG lifting's
// `rhs[k, i] + invJ[k] * sum`). `conditional`: under a select or a logical operator, which may
// skip it. The model's epilogue reads, the plan's L2 prefetches and the emitter's order of the
// epilogue's loads and stores all start from this one walk.
struct EpilogueLoad {
  Expr load;
  int part = 0;  // its statement's place in Contraction::parts
  bool conditional = false;
};
// The loads beside each part's sum in `nest`'s body, outermost ones only (a load in another's
// indices is that one's), in evaluation order.
std::vector<EpilogueLoad> epilogueLoads(const LoopNest& nest, const Contraction& c);

struct ContractionMatch {
  std::optional<Contraction> contraction;
  std::vector<std::string> reasons;  // why the nest does not qualify
};
ContractionMatch matchContraction(const Kernel& k, int nest);

}  // namespace rtcg
