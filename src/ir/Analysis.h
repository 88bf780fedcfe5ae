// Analyses over a *bound* kernel (ir/Bind.h): affine forms of index expressions, value ranges
// over a loop domain, strides, footprints of accesses over a tile, the bounds proof, the race
// check, and a structural hash. These are what the scheduler and the emitter reason with.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"
#include "ir/Interval.h"
#include "support/Diagnostics.h"

namespace rtcg {

// sum(coeffs[id] * var(id)) + constant, over Index variables (by id). Zero coefficients are
// never stored, so two equal forms compare equal.
struct AffineForm {
  std::map<int, int64_t> coeffs;
  int64_t constant = 0;
  int64_t coeff(int id) const;
  bool isConstant() const { return coeffs.empty(); }
  bool operator==(const AffineForm&) const = default;
  std::string str(const std::map<int, std::string>& names = {}) const;
};

// The affine form of an integer expression in Index variables and integer constants, or
// nullopt if it is not affine (floor div/mod, loads, products of two indices, Let variables,
// unbound Size variables, ...).
std::optional<AffineForm> toAffine(const Expr& e);


// The loops that enclose a point of the IR, outermost first (a nest's parallel loops followed by
// the enclosing reduction loops). Bounds of each may refer to the loops before it.
using LoopScope = std::vector<const Loop*>;

// The range of values an integer expression takes over the domain of `scope`, optionally with
// some loops restricted to a sub-range (`restrict`, by loop id: a tile). Exact for affine
// expressions over rectangular and triangular domains (extremes found by eliminating the
// innermost loop first), conservative (interval arithmetic) for floor div/mod, min/max,
// select. nullopt for expressions whose range cannot be bounded (indirect loads, floats).
std::optional<Interval> rangeOf(const Expr& e, const LoopScope& scope,
                                const std::map<int, Interval>& restrict = {});

// Extent of each dimension of an array param of a bound kernel.
std::vector<int64_t> arrayShape(const Kernel& k, int array);

// Flat row-major element offset of an access, as an affine form; nullopt if not affine.
std::optional<AffineForm> flatOffset(const Kernel& k, int array, const std::vector<Expr>& indices);

// One array access in a nest, with the loops enclosing it.
struct Access {
  int array = -1;
  std::vector<Expr> indices;
  bool isWrite = false;
  bool accumulate = false;           // a write that is an accumulation (Stmt::accumulate)
  ReduceOp accumOp = ReduceOp::Sum;  // its operator
  bool indirect = false;  // some index contains a Load
  LoopScope scope;        // parallel loops of the nest, then enclosing reduction loops
  SourceLoc loc;
};
// Every access of nest `nest`, in program order (index-array loads inside indirect indices
// are listed as accesses too, before the access they index). Let variables in the indices are
// replaced by their definitions, so the indices are expressions in loop indices only.
std::vector<Access> collectAccesses(const Kernel& k, int nest);

// Element stride of an access along loop `loopId` (coefficient in the flat offset);
// nullopt if the offset is not affine.
std::optional<int64_t> strideAlong(const Kernel& k, const Access& a, int loopId);

// Box hull of the elements an access touches, one interval per array dimension, when the loops
// in `tile` are restricted to the given ranges and the others range over their full domain.
struct Box {
  std::vector<Interval> dims;
  int64_t elements() const;
};
std::optional<Box> footprint(const Kernel& k, const Access& a, const std::map<int, Interval>& tile = {});

// Parallel (output) loop ids of a nest, and the ids of all reduction loops in it.
std::vector<int> parallelLoops(const Kernel& k, int nest);
std::vector<int> reductionLoops(const Kernel& k, int nest);

// Proves every affine and quasi-affine access of a bound kernel in bounds, or reports an error
// at the access naming the array, the dimension, the reachable index range and the extent.
// Indirect accesses cannot be proved: they get a warning saying they are checked at run time by
// the reference executor (and are flagged in the emitted code). Returns true if no error.
bool checkBounds(const Kernel& k, Diagnostics& diags);

// Proves that no two points of a nest's parallel domain write the same array element, and that
// no point reads an element another point of the same nest writes. Errors at the store.
bool checkRaces(const Kernel& k, Diagnostics& diags);

// Why nests first..first+count-1 of a bound kernel cannot run fused in one launch (empty: they
// can), e.g. "nest 1 reads x[i + 1, j] at another value of its leading index 'i' than the
// point's own". Fused nests share their leading parallel index: every nest has one, over the same
// constant range, and every domain is rectangular. Every array that one of them writes and another
// one reads or writes is accessed, in all of them, only at the accessing point's own value of its
// leading index (first index exactly that index), so that running all nests for one value of the
// shared index one after another (a barrier between nests) computes what the nests in sequence do.
std::vector<std::string> fusionConflicts(const Kernel& k, int first, int count);

// A hash of the kernel's structure and bound sizes, independent of names, comments, whitespace
// and source locations: equal for kernels that compute the same thing the same way.
uint64_t structuralHash(const Kernel& k);

// The canonical text structuralHash hashes: loop and let ids renumbered in order of definition,
// no names, locations or comments; bound sizes included. Equal strings mean equal kernels.
std::string canonicalForm(const Kernel& k);

// An access as the user wrote it, for messages: "a[i + 1, j]".
std::string accessText(const Kernel& k, int array, const std::vector<Expr>& indices);

}  // namespace rtcg
