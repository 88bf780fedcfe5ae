// The plan of a `scan:` schedule (Schedule.h, ScanSchedule) for a nest that is a scan (ir/Scan.h).
//
// `scan: lookback threads T items V` (a single-pass decoupled look-back scan, Merrill and Garland
// 2016): every line of the scan is cut into tiles of T * V values, and each block takes one tile.
// Blocks take their tiles in the order they start, by a ticket (an atomic counter of the module),
// so a block waits only on tiles that blocks started before it hold: no deadlock, whatever the
// hardware's order of blocks. A block loads its tile (coalesced, through shared memory, V values a
// thread), scans it, publishes the tile's aggregate, then looks back at the tiles before it in its
// line, warp 0 reading 32 of their status words at a time, until it meets one that has published
// its inclusive prefix; it combines the aggregates on the way, publishes its own inclusive prefix,
// and stores the tile. A status word is the flag and the value together (4-byte values: one 64-bit
// word, one store publishes both) or a flag word written after the value with a fence between
// (8-byte values). The flags carry the launch's epoch (ticket / tiles), so the status words of the
// launch before never read as this one's and nothing needs resetting between launches; launches of
// one module must not overlap (as for a reduction split across blocks). The ticket counts on every
// launch taking all its tiles: a launch that dies midway loses the context, and the module's
// globals with it. A segmented scan carries
// a segment-start flag with every value; a tile that holds a segment start publishes its prefix at
// once.
//
// `scan: lookback threads T items V layout warp`: the same tiles, tickets and look-back, but warp
// w of the block owns the tile's run w * 32 * V .. (w + 1) * 32 * V - 1 from load to store: it
// loads the run coalesced into its part of the shared tile, each lane reduces its V neighbours
// there, and after the block's scan it rewrites them in place and stores the run, with only
// __syncwarp between (two block barriers fewer than the block layout's six). The values are read
// again from shared memory after the look-back instead of held in registers across it (about V
// registers a thread fewer: more blocks resident); a tile inside the line loads and stores
// without bounds checks. 4-byte values have one status word a tile (the 32 words a look-back step
// reads are 256 contiguous bytes, not 32 words 32 bytes apart); 8-byte values keep four.
//
// `scan: lines lanes L items V threads T`: L lanes (of one warp) scan a whole line, V values per
// lane a step (coalesced: lane l reads the step's values l, l + L, ...), combining by shuffles and
// carrying the step's total to the next; T / L lines per block. With L = 1 a thread scans its line
// alone (lines next to each other in memory: the threads' loads coalesce), with L = 32 a warp does.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ir/Scan.h"
#include "schedule/Schedule.h"

namespace rtcg {

struct ScanPlan {
  ScanForm form;
  ScanSchedule::Kind kind = ScanSchedule::Kind::Lookback;
  int64_t threads = 256, items = 8, lanes = 32;
  bool warpLayout = false;  // lookback: `layout warp`
  // lookback: values a tile, tiles a line, tiles in all (the launch's blocks); the status words
  // (four 64-bit words a tile: flag or packed word, aggregate, inclusive prefix, unused; with
  // `layout warp` one a tile for 4-byte values, the packed word).
  int64_t tile = 0, tilesPerLine = 0, tiles = 0, statusWords = 0;
  // lines: lines a block, blocks.
  int64_t linesPerBlock = 0, blocks = 0;
  int64_t sharedBytes = 0;  // static shared memory of the block
};

// The plan of `s` (its `scan:` clause) for nest `nest` of the bound kernel `k`, or the reasons why
// there is none (appended to `reasons`).
std::optional<ScanPlan> planScan(const Kernel& k, int nest, const NestSchedule& s, const ScheduleLimits& limits,
                                 std::vector<std::string>& reasons);

// The default schedule of a scan nest (defaultSchedule, Schedule.h): one pass, never the
// quadratic form; nothing for a nest that is not a scan.
std::optional<NestSchedule> defaultScanSchedule(const Kernel& k, int nest);

// The plan in words, for `rtcgc explain`.
std::string scanLines(const Kernel& k, const ScanPlan& p);

}  // namespace rtcg
