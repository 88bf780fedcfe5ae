// Data-dependent ranges (IR.h): reduction loops whose bounds read integer arrays, as in CSR rows
// `sum(p in rowptr[i]..rowptr[i + 1], val[p] * x[col[p]])`. Their values are data, so nothing here
// is proved; what is fixed is the contract a run checks (the reference executor, before a GPU
// launch): each range is non-decreasing and lies within [0, extent], where extent is the smallest
// extent of the array dimensions its index indexes alone (`val[p]`, `col[p]`: nnz). That interval
// is the index's hull for the schedule, the model and the counts.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg {

struct DataRange {
  const Loop* loop = nullptr;  // the reduction loop (its lo and/or hi is a range read)
  // The smallest extent of the array dimensions indexed by the loop's index alone; nullopt when
  // it indexes none (nothing bounds its values: checkDataRanges reports it).
  std::optional<int64_t> extent;
  std::vector<std::string> limitingArrays;  // the arrays of those dimensions, by name, in order
};

// The data-dependent range of loop `l` of the reduction `reduce`.
DataRange dataRangeOf(const Kernel& k, const Expr& reduce, const Loop& l);
// The extent of the data-dependent range of the loop of id `loopId` (found in the kernel's
// reductions); nullopt when there is none or nothing bounds it.
std::optional<int64_t> dataRangeExtent(const Kernel& k, int loopId);
// Every data-dependent range of nest `nest` of the bound kernel `k`, in order of appearance.
std::vector<DataRange> dataRanges(const Kernel& k, int nest);
// Whether the kernel has any (a kernel without is handled exactly as before).
bool hasDataRanges(const Kernel& k);

// After the bounds proof: an error for a range that nothing bounds, and a warning per range
// saying what cannot be proved and what the run checks instead. False on an error.
bool checkDataRanges(const Kernel& k, Diagnostics& diags);

// "rowptr[i]" and "rowptr[i + 1]": the text of a range's bounds, for messages.
std::string rangeText(const Kernel& k, const Loop& l);

}  // namespace rtcg
