// The space's scan family and the model's scan term (schedule/SpaceScan.h).
#include "schedule/SpaceScan.h"

#include <algorithm>
#include <cmath>

#include "ir/Scan.h"

namespace rtcg {

namespace {

constexpr int64_t kLongLine = 2048;

NestSchedule scanSchedule(ScanSchedule::Kind kind, int64_t threads, int64_t items, int64_t lanes,
                          bool warpLayout = false) {
  NestSchedule ns;
  ns.scan.kind = kind;
  ns.scan.threads = threads;
  ns.scan.items = items;
  ns.scan.lanes = lanes;
  ns.scan.warpLayout = warpLayout;
  return ns;
}

// The sectors a warp's load wastes: 32-byte sectors of which it uses `useful` bytes.
double sectorWaste(int64_t useful) { return std::max(1.0, 32.0 / double(std::max<int64_t>(1, useful))); }

}  // namespace

std::vector<NestSchedule> scanVariants(const Kernel& k, int nest, const SpaceOptions& o) {
  std::vector<NestSchedule> out;
  auto form = recogniseScan(k, nest);
  if (!form) return out;
  for (int64_t threads : {128, 256, 512})
    for (int64_t items : {4, 8, 12, 16}) {
      if (threads > o.limits.maxThreadsPerBlock) continue;
      out.push_back(scanSchedule(ScanSchedule::Kind::Lookback, threads, items, 32));
    }
  // The warp layout (ScanPlan.h) holds no values across the look-back: longer runs a thread.
  for (int64_t threads : {128, 256, 512})
    for (int64_t items : {8, 12, 16, 24}) {
      if (threads > o.limits.maxThreadsPerBlock) continue;
      out.push_back(scanSchedule(ScanSchedule::Kind::Lookback, threads, items, 32, true));
    }
  for (int64_t lanes : {1, 8, 32})
    for (int64_t items : {1, 4, 8})
      for (int64_t threads : {128, 256}) out.push_back(scanSchedule(ScanSchedule::Kind::Lines, threads, items, lanes));
  return out;
}

bool pointwiseOffered(const Kernel& k, int nest) {
  auto form = recogniseScan(k, nest);
  return !form || form->length <= kLongLine;
}

NestEstimate estimateScan(const Kernel& k, const NestPlan& plan, const DeviceModel& d) {
  const ScanPlan& p = *plan.scan;
  const ScanForm& f = p.form;
  NestEstimate e;
  e.threads = plan.launch.threads;
  e.blocks = plan.launch.blocks;
  e.sharedBytes = p.sharedBytes;
  e.storeArray = k.params[size_t(f.out)].name;
  const int64_t bytes = typeBytes(f.type);
  const double values = double(f.lines()) * double(f.length);
  // Registers: the thread's values (twice: loaded and scanned; the warp layout holds only its
  // loads in flight, ptxas reports 48 for 16 f32 values against the block layout's 70), its
  // flags, addresses.
  e.registers = std::min<int64_t>(255, 32 + (p.warpLayout ? 1 : 2) * p.items * (bytes / 4) + (f.head >= 0 ? p.items : 0));
  const int64_t byThreads = d.maxThreadsPerMultiprocessor / std::max<int64_t>(1, e.threads);
  const int64_t byRegs = d.registersPerMultiprocessor / std::max<int64_t>(1, e.registers * e.threads);
  const int64_t byShared = p.sharedBytes > 0 ? d.sharedPerMultiprocessor / (p.sharedBytes + 1024) : 32;
  e.blocksPerMultiprocessor = std::max<int64_t>(0, std::min({byThreads, byRegs, byShared, int64_t(d.maxBlocksPerMultiprocessor)}));
  e.occupancy = double(e.blocksPerMultiprocessor * e.threads) / d.maxThreadsPerMultiprocessor;
  const double resident = double(std::max<int64_t>(1, e.blocksPerMultiprocessor)) * d.multiprocessors;
  // Strided lines: a lookback tile's (or a lane group's) loads touch one value a sector.
  double waste = 1;
  if (p.kind == ScanSchedule::Kind::Lookback) waste = f.inner > 1 ? sectorWaste(bytes) : 1;
  else if (f.inner == 1) waste = p.lanes == 1 ? 4.0 : sectorWaste(p.lanes * bytes);  // L1 keeps some of a lone thread's line
  else waste = p.lanes == 1 ? 1 : sectorWaste(bytes);
  e.bytes = values * (2.0 * bytes + (f.head >= 0 ? 4.0 : 0.0)) * waste;
  e.flops = values;
  const double memory = e.bytes / d.memoryBandwidth;
  double latency = 0, fill = 1;
  if (p.kind == ScanSchedule::Kind::Lookback) {
    // A wave of resident tiles costs a look-back's round trips (about 1.5 us) whatever its size.
    const double waves = std::ceil(double(p.tiles) / resident);
    fill = std::min(1.0, double(p.tiles) / resident);
    latency = waves * 1.5e-6;
  } else {
    // A line's steps run one after another, each about a memory latency (0.8 us) plus its
    // shuffles; the lines in flight at once are the resident blocks' lines.
    const double steps = std::ceil(double(f.length) / double(p.lanes * p.items));
    const double concurrent = resident * double(p.linesPerBlock);
    fill = std::min(1.0, double(f.lines()) / concurrent);
    latency = std::ceil(double(f.lines()) / concurrent) * steps * (0.8e-6 + 0.02e-6 * p.items * std::log2(double(p.lanes) + 1));
  }
  e.efficiency = std::max(0.05, std::min(1.0, e.occupancy * 2) * fill);
  e.seconds = d.launchOverhead + std::max(memory / e.efficiency, latency);
  return e;
}

}  // namespace rtcg
