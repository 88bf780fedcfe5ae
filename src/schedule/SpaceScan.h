// The space's scan family and the model's scan term (schedule/ScanPlan.h): for a nest that is a
// scan (ir/Scan.h), the `scan:` schedules the space offers beside (or, for long lines, instead of)
// the triangular reduction's, and what the static model estimates of one.
#pragma once

#include <optional>
#include <vector>

#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "schedule/SpaceModel.h"

namespace rtcg {

// The `scan:` schedules of nest `nest` (none where it is not a scan).
std::vector<NestSchedule> scanVariants(const Kernel& k, int nest, const SpaceOptions& o);
// Whether the space offers nest `nest` the schedules of a reduction per point too: always, except
// for a scan whose lines are long (O(length^2) work a line: more than 2048 values).
bool pointwiseOffered(const Kernel& k, int nest);

// The model's scan term: the bytes the scan moves (every value read and written once, the segment
// heads read once; lines strided in memory at the sectors their loads waste) at the device's
// bandwidth, the launch's fill of the multiprocessors, and the latency of its serial chain (a
// look-back per wave of tiles; a line's steps one after another in the lines variant).
NestEstimate estimateScan(const Kernel& k, const NestPlan& plan, const DeviceModel& d);

}  // namespace rtcg
