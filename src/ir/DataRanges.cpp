#include "ir/DataRanges.h"

#include <algorithm>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ir/Analysis.h"
#include "ir/Printer.h"
#include "ir/Walk.h"

namespace rtcg {

namespace {

// The smallest extent among the dimensions that `loopId` indexes alone in `within` (loads at any
// depth, in bounds and bodies), with the arrays of those dimensions.
void limitIn(const Kernel& k, int loopId, const Expr& within, DataRange& r) {
  visitExprs(within, [&](const Expr& e) {
    if (e->kind != ExprKind::Load) return;
    std::vector<int64_t> shape = arrayShape(k, e->array);
    for (size_t d = 0; d < e->operands.size() && d < shape.size(); ++d) {
      const Expr& i = e->operands[d];
      if (i->kind != ExprKind::Var || i->varKind != VarKind::Index || i->varId != loopId) continue;
      r.extent = r.extent ? std::min(*r.extent, shape[d]) : shape[d];
      const std::string& name = k.params[e->array].name;
      if (std::find(r.limitingArrays.begin(), r.limitingArrays.end(), name) == r.limitingArrays.end())
        r.limitingArrays.push_back(name);
    }
  });
}

}  // namespace

DataRange dataRangeOf(const Kernel& k, const Expr& reduce, const Loop& l) {
  DataRange r;
  r.loop = &l;
  limitIn(k, l.id, reduce, r);
  return r;
}

std::vector<DataRange> dataRanges(const Kernel& k, int nest) {
  std::vector<DataRange> out;
  auto scan = [&](const Expr& root) {
    visitExprs(root, [&](const Expr& e) {
      if (e->kind != ExprKind::Reduce) return;
      for (const Loop& l : e->loops) {
        if (!isDataDependent(l)) continue;
        out.push_back(dataRangeOf(k, e, l));
      }
    });
  };
  for (const Stmt& s : k.nests[nest].body) {
    for (const Expr& i : s.indices) scan(i);
    scan(s.value);
  }
  return out;
}

std::optional<int64_t> dataRangeExtent(const Kernel& k, int loopId) {
  for (int n = 0; n < int(k.nests.size()); ++n)
    for (const DataRange& r : dataRanges(k, n))
      if (r.loop->id == loopId) return r.extent;
  return std::nullopt;
}

bool hasDataRanges(const Kernel& k) {
  bool any = false;
  visitKernelExprs(k, [&](const Expr& e) {
    if (e->kind == ExprKind::Reduce)
      for (const Loop& l : e->loops) any = any || isDataDependent(l);
  });
  return any;
}

std::string rangeText(const Kernel& k, const Loop& l) {
  return printExpr(l.lo, &k) + ".." + printExpr(l.hi, &k);
}

bool checkDataRanges(const Kernel& k, Diagnostics& diags) {
  bool ok = true;
  for (int n = 0; n < int(k.nests.size()); ++n)
    for (const DataRange& r : dataRanges(k, n)) {
      const Loop& l = *r.loop;
      if (!r.extent) {
        diags.error(l.loc, fmt::format("the range of '{}' ({}) reads an array, and '{}' indexes no array dimension "
                                       "alone, so nothing bounds its values; use it as a whole index (as in "
                                       "'val[{}]')",
                                       l.name, rangeText(k, l), l.name, l.name));
        ok = false;
        continue;
      }
      diags.warning(l.loc, fmt::format("the range of '{}' ({}) reads an array and cannot be proved; it is checked at "
                                       "run time by the reference executor: non-decreasing and within [0, {}] (the "
                                       "extent of {})",
                                       l.name, rangeText(k, l), *r.extent, fmt::join(r.limitingArrays, ", ")));
    }
  return ok;
}

}  // namespace rtcg
