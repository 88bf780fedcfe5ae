// The tuned-schedule lookup ladder: which database rows may serve a tuning key, best rung first.
//
// A tuning key is exact (driver, NVRTC and rtcg versions, board name, sizes), so a driver update,
// an "H100 PCIe" next to an "H100 SXM" tuning, or n=512 next to a tuned n=500 would miss it. The
// rungs below the exact key offer measurements that are likely good, to be re-planned (validated
// against the kernel) before use:
//   1. Exact         the key itself.
//   2. SameDevice    the same kernel and sizes (kernel hash) on the same architecture and
//                    multiprocessor count (or, for rows that predate the count, the same board),
//                    with another driver, NVRTC or rtcg version or board name.
//   3. NearestSizes  the same kernel name and size names on the same architecture, other sizes,
//                    nearest first (the sum of |log(size ratio)| over the sizes). The kernel hash
//                    covers the bound sizes, so the name stands for "the same kernel": a namesake
//                    kernel's schedule is only used when it plans for this one.
// The default schedule is the rung below.
#pragma once

#include <string>
#include <vector>

#include "tune/TuningDb.h"

namespace rtcg {

enum class LookupRung { Exact, SameDevice, NearestSizes };
// The origin compile() reports: "tuning database", "tuning database (other versions or board)",
// "tuning database (nearest sizes)".
const char* rungOrigin(LookupRung r);

struct LookupOffer {
  LookupRung rung;
  TuningKey key;          // the row's key
  CandidateRecord best;   // its fastest verified candidate
  double distance = 0;    // NearestSizes: the size distance
};

// Every row that may serve `key`, in ladder order (within a rung: the same board first, then the
// nearest sizes, then the fastest). At most `perRung` offers per rung below the exact one.
std::vector<LookupOffer> lookupLadder(TuningDb& db, const TuningKey& key, size_t perRung = 4);
// The rungs below the exact key only (they read every key of the database: compile() asks for them
// only when the exact key gives nothing that plans).
std::vector<LookupOffer> lookupBelowExact(TuningDb& db, const TuningKey& key, size_t perRung = 4);

// The sizes text of a key ("m=3,n=500") as name/value pairs; empty on a malformed text.
std::vector<std::pair<std::string, double>> parseSizesText(const std::string& sizes);

}  // namespace rtcg
