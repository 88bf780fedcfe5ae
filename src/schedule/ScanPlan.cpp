// The plan of a `scan:` schedule (schedule/ScanPlan.h).
#include "schedule/ScanPlan.h"

#include <fmt/format.h>

#include "ir/IR.h"
#include "ir/IntOps.h"
#include "schedule/Plan.h"

namespace rtcg {

namespace {

// Index clauses and every other clause: the scan maps the nest itself.
void checkAlone(const NestSchedule& s, std::vector<std::string>& reasons) {
  if (!s.indices.empty())
    reasons.push_back(fmt::format("'scan:' maps the nest's indices itself: no index clause beside it ('{}')",
                                  printIndexSchedule(s.indices[0])));
  for (const ClauseRow& row : clauseTable())
    if (row.kind != ClauseKind::Scan && !clauseAtDefault(row, s))
      reasons.push_back(fmt::format("'{}:' does not apply beside 'scan:'", row.name));
}

}  // namespace

std::optional<ScanPlan> planScan(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits,
                                 std::vector<std::string>& reasons) {
  const size_t before = reasons.size();
  auto form = recogniseScan(k, nest);
  if (!form) {
    reasons.push_back("'scan:' needs a scan: the nest's one statement a prefix reduction such as "
                      "'y[i] = sum(j in 0..i + 1, x[j])' (docs/language.md, 5.2)");
    return std::nullopt;
  }
  checkAlone(s, reasons);
  ScanPlan p;
  p.form = *form;
  p.kind = s.scan.kind;
  p.threads = s.scan.threads, p.items = s.scan.items, p.lanes = s.scan.lanes;
  p.warpLayout = s.scan.warpLayout;
  const int64_t bytes = typeBytes(form->type);
  if (p.threads > limits.maxThreadsPerBlock)
    reasons.push_back(fmt::format("scan threads {} exceed the device's {} threads per block", p.threads,
                                  limits.maxThreadsPerBlock));
  if (p.kind == ScanSchedule::Kind::Lookback) {
    p.tile = p.threads * p.items;
    p.tilesPerLine = ceilDiv(form->length, p.tile);
    p.tiles = p.tilesPerLine * form->lines();
    p.statusWords = (p.warpLayout && bytes == 4 ? 1 : 4) * p.tiles;
    // The tile (values with a word of padding every 32, and segment flags), the warps' totals, the
    // ticket and the tile's prefix.
    p.sharedBytes = (p.tile + p.tile / 32) * bytes + (form->head >= 0 ? p.tile : 0) + 33 * (bytes + 4) + 8 + bytes;
    if (p.tiles > 2147483647)
      reasons.push_back(fmt::format("{} tiles of {} values exceed a grid's 2147483647 blocks", p.tiles, p.tile));
    if (p.statusWords * 8 > limits.maxGlobalScratchBytes)
      reasons.push_back(fmt::format("the look-back's status words ({} bytes) exceed the {} bytes of global scratch",
                                    p.statusWords * 8, limits.maxGlobalScratchBytes));
  } else {
    if (p.warpLayout) reasons.push_back("'layout warp' is a look-back's ('scan: lookback ... layout warp')");
    if (p.lanes > p.threads)
      reasons.push_back(fmt::format("scan lanes {} exceed the block's {} threads", p.lanes, p.threads));
    p.linesPerBlock = p.threads / p.lanes;
    p.blocks = ceilDiv(form->lines(), p.linesPerBlock);
    p.sharedBytes = 0;
    if (p.blocks > 2147483647)
      reasons.push_back(fmt::format("{} blocks exceed a grid's 2147483647", p.blocks));
  }
  if (p.sharedBytes > 48 * 1024)
    reasons.push_back(fmt::format("a scan tile of {} x {} {} values needs {} bytes of shared memory, more than 48 KiB",
                                  p.threads, p.items, typeName(form->type), p.sharedBytes));
  if (reasons.size() > before) return std::nullopt;
  return p;
}

NestPlanResult planScanNest(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits) {
  NestPlanResult r;
  auto scan = planScan(k, nest, s, limits, r.reasons);
  if (!scan) {
    if (k.nests.size() > 1)
      for (std::string& m : r.reasons) m = fmt::format("nest {}: {}", nest, m);
    return r;
  }
  NestPlan plan;
  plan.nest = nest;
  plan.schedule = s;
  LaunchPlan& l = plan.launch;
  l.block[0] = scan->threads;
  l.grid[0] = scan->kind == ScanSchedule::Kind::Lookback ? scan->tiles : scan->blocks;
  l.threads = l.block[0];
  l.blocks = l.grid[0];
  l.threadX = l.block[0];
  plan.sharedBytes = scan->sharedBytes;
  plan.cooperative = true;
  plan.scan = std::move(scan);
  r.plan = std::move(plan);
  return r;
}

std::optional<NestSchedule> defaultScanSchedule(const Kernel& k, int nest) {
  auto form = recogniseScan(k, nest);
  if (!form) return std::nullopt;
  NestSchedule ns;
  // Many lines: a warp a line along memory, a thread a line across it; few: the look-back.
  ns.scan = ScanSchedule{ScanSchedule::Kind::Lookback, 256, 8, 32};
  if (form->lines() >= 1024) ns.scan = ScanSchedule{ScanSchedule::Kind::Lines, 256, 4, form->inner == 1 ? 32 : 1};
  return ns;
}

std::string scanLines(const Kernel& k, const ScanPlan& p) {
  std::string out = fmt::format("  scan: {}\n", describeScan(k, p.form));
  if (p.kind == ScanSchedule::Kind::Lookback)
    out += fmt::format("  decoupled look-back: tiles of {} values ({} threads x {}), {} a line, {} in all; "
                       "tickets in start order; {} status words{}\n",
                       p.tile, p.threads, p.items, p.tilesPerLine, p.tiles, p.statusWords,
                       p.warpLayout ? "; each warp loads, scans and stores its own run of the tile" : "");
  else
    out += fmt::format("  lines: {} lane{} a line, {} values a lane a step, {} lines a block, {} blocks\n", p.lanes,
                       p.lanes == 1 ? "" : "s", p.items, p.linesPerBlock, p.blocks);
  return out;
}

}  // namespace rtcg
