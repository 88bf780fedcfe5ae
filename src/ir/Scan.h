// Scans: a nest whose one statement is a prefix reduction, recognised from the triangular form a
// user writes (docs/language.md, "Scans"):
//
//   y[i] = sum(j in 0..i + 1, x[j]);                  inclusive (max, min, product alike)
//   y[i] = sum(j in 0..i, x[j]);                      exclusive (the empty first one: the identity)
//   y[r, c] = max(j in 0..c + 1, x[r, j]);            along one index of several: every line alone
//   y[i] = sum(j in head[i]..i + 1, x[j]);            segmented: head[i] is the start of i's segment
//
// Read as written, each output is a reduction over a range that grows with the scanned index, so
// the nest is O(n^2). Recognised, it is one pass: every line (the values of the other indices) is
// scanned with the reduction's associative operator, and a schedule's `scan:` clause emits it as a
// decoupled look-back scan or a scan per line (schedule/ScanPlan.h). The result is the triangular
// form's; a floating-point sum's (or product's) rounding depends on the order of the combination
// (verification allows the error of a sum of the line's length, as for the triangular form).
//
// The recognised form, exactly: the nest has one statement, a plain store y[e0, ..., ek] of a
// reduction of one loop j, whose store indices are the nest's indices (each once, every index
// 0..extent of its dimension of y); the reduction's body is a load x[...] of another array of y's
// shape and element type (i32, i64, f32, f64) at the same indices except j in the scanned
// dimension; j runs from 0 (or a segment start head[same indices as y], an i32 `in` array) to the
// scanned index plus one (inclusive) or to the scanned index (exclusive). A segmented scan's
// head array must be a segmentation of every line: head at position 0 is 0, and at position p > 0
// either p (a segment starts) or head at p - 1 (it continues); the reference executor checks it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg {

struct ScanForm {
  int out = -1, in = -1;  // param ids of y and x
  int head = -1;          // segmented: the head array's param id; -1 otherwise
  ReduceOp op = ReduceOp::Sum;
  ScalarType type = ScalarType::F32;
  bool exclusive = false;
  int dim = 0;            // the scanned dimension of y (and x)
  // The lines: y viewed as [outer, length, inner] (row-major), each (outer, inner) pair a line of
  // `length` values at stride `inner`. Bound kernels only (0 before bindSizes).
  int64_t length = 0, outer = 1, inner = 1;
  int64_t lines() const { return outer * inner; }
};

// The scan form of nest `nest` of `k` (bound or not: the extents then stay 0), or nothing.
std::optional<ScanForm> recogniseScan(const Kernel& k, int nest);

// The form in words: "inclusive sum of x into y along dimension 1 (8192 lines of 4096)".
std::string describeScan(const Kernel& k, const ScanForm& s);

}  // namespace rtcg
