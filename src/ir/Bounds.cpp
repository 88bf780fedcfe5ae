// The bounds proof: every index of every access stays within its array's extent.
#include <fmt/format.h>

#include "ir/Analysis.h"
#include "ir/DataRanges.h"
#include "ir/Printer.h"

namespace rtcg {

std::string accessText(const Kernel& k, int array, const std::vector<Expr>& indices) {
  std::string out = k.params[array].name + "[";
  for (size_t i = 0; i < indices.size(); ++i) out += (i ? ", " : "") + printExpr(indices[i], &k);
  return out + "]";
}

bool checkBounds(const Kernel& k, Diagnostics& diags) {
  int errorsBefore = diags.errorCount();
  for (int n = 0; n < (int)k.nests.size(); ++n) {
    for (const Access& a : collectAccesses(k, n)) {
      const Param& p = k.params[a.array];
      std::vector<int64_t> shape = arrayShape(k, a.array);
      if (a.indices.size() != shape.size()) {
        diags.error(a.loc, fmt::format("access {} has {} indices but '{}' has {} dimensions",
                                       accessText(k, a.array, a.indices), a.indices.size(), p.name,
                                       shape.size()));
        continue;
      }
      if (a.indirect) {
        // The index-array loads are accesses of their own (checked below in the same loop);
        // the values they produce are data, known only at run time.
        diags.warning(a.loc, fmt::format("indirect index into {} cannot be proved in bounds; it is checked "
                                         "at run time by the reference executor",
                                         p.name));
        continue;
      }
      for (size_t d = 0; d < shape.size(); ++d) {
        auto r = rangeOf(a.indices[d], a.scope);
        if (!r) {
          diags.warning(a.loc, fmt::format("index {} of access {} depends on run-time values and cannot be "
                                           "proved in bounds; it is checked at run time by the reference "
                                           "executor",
                                           d, accessText(k, a.array, a.indices)));
          continue;
        }
        if (r->empty()) continue;  // the access never executes
        std::string range = fmt::format("the index ranges over [{}, {}]", r->lo, r->hi);
        if (r->hi >= shape[d])
          diags.error(a.loc, fmt::format("access {} may be out of bounds: dimension {} reaches {} but the "
                                         "extent is {} ({})",
                                         accessText(k, a.array, a.indices), d, r->hi, shape[d], range));
        else if (r->lo < 0)
          diags.error(a.loc, fmt::format("access {} may be out of bounds: dimension {} reaches {} but "
                                         "indices start at 0 ({})",
                                         accessText(k, a.array, a.indices), d, r->lo, range));
      }
    }
  }
  // Ranges that read arrays: what cannot be proved of them, and what the run checks instead.
  checkDataRanges(k, diags);
  return diags.errorCount() == errorsBefore;
}

}  // namespace rtcg
