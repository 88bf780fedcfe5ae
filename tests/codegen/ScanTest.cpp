// Scans (ir/Scan.h, `scan:` schedules, EmitScan.cpp): the triangular forms recognised, the
// reference's one pass equal to the triangular form's evaluation, and every variant emitted and run
// on the host emulation against the reference: every operator, inclusive and exclusive, i32, i64,
// f32 and f64, a line or many along the innermost index, lines along an outer index, segmented,
// at sizes no tile or block divides, run twice in one module (the look-back's epochs) and in
// reversed and shuffled block order (its tickets).
#include <gtest/gtest.h>

#include <cmath>

#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/SourceKernels.h"
#include "ir/Counts.h"
#include "ir/Scan.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"
#include "tune/Verify.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// One kernel per form: OP, the type T and the range's end END (`i + 1` or `i`) are substituted.
std::string flatSource(const std::string& op, const std::string& t, const std::string& end) {
  return "kernel scan(n: int, x: " + t + "[n], out y: " + t + "[n]) {\n  for i in 0..n { y[i] = " + op +
         "(j in 0.." + end + ", x[j]); }\n}\n";
}

const char* kForms = R"(
kernel rows(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {
  for r in 0..m, c in 0..n { y[r, c] = sum(j in 0..c + 1, x[r, j]); }
}
kernel columns(m: int, n: int, x: f32[m, n], out y: f32[m, n]) {
  for r in 0..m, c in 0..n { y[r, c] = sum(j in 0..r + 1, x[j, c]); }
}
kernel rowmax(m: int, n: int, x: i32[m, n], out y: i32[m, n]) {
  for r in 0..m, c in 0..n { y[r, c] = max(j in 0..1 + c, x[r, j]); }
}
kernel segsum(n: int, head: i32[n], x: f32[n], out y: f32[n]) {
  for i in 0..n { y[i] = sum(j in head[i]..i + 1, x[j]); }
}
kernel segexcl(n: int, head: i32[n], x: f64[n], out y: f64[n]) {
  for i in 0..n { y[i] = sum(j in head[i]..i, x[j]); }
}
kernel segmax(n: int, head: i32[n], x: i32[n], out y: i32[n]) {
  for i in 0..n { y[i] = max(j in head[i]..i + 1, x[j]); }
}
kernel segrows(m: int, n: int, head: i32[m, n], x: i64[m, n], out y: i64[m, n]) {
  for r in 0..m, c in 0..n { y[r, c] = min(j in head[r, c]..c, x[r, j]); }
}
kernel notscan(n: int, x: f32[n], out y: f32[n]) {
  for i in 0..n { y[i] = sum(j in 0..i + 1, x[j] * 2.0); }
}
kernel shifted(n: int, x: f32[n], out y: f32[n]) {
  for i in 0..n { y[i] = sum(j in 0..i + 2, x[j]); }
}
kernel plusZero(n: int, x: f32[n], out y: f32[n]) {
  for i in 0..n { y[i] = sum(j in 0..i + 1, x[j] + 0.0); }
}
)";

Kernel form(const std::string& name, const SizeBindings& sizes) { return fromSource(kForms, name, sizes); }

// The look-back with tiles of 64 x 3 = 192 values and lines with a partial last block, on n = 1003.
const char* const kFlatSchedules[] = {
    "scan: lookback threads 64 items 3",  "scan: lookback threads 128 items 1",
    "scan: lines lanes 32 items 3 threads 64", "scan: lines lanes 8 items 2 threads 32",
    "scan: lines lanes 1 items 4 threads 32"};

EmulationOptions twiceShuffled() {
  EmulationOptions o;
  o.runs = 2;
  o.blockOrder = 2;
  return o;
}

}  // namespace

TEST(Scan, RecognisesTheTriangularForms) {
  const Kernel flat = fromSource(flatSource("sum", "f32", "i + 1"), "scan", {{"n", 100}});
  auto f = recogniseScan(flat, 0);
  ASSERT_TRUE(f.has_value());
  EXPECT_FALSE(f->exclusive);
  EXPECT_EQ(f->length, 100);
  EXPECT_EQ(f->lines(), 1);
  EXPECT_EQ(describeScan(flat, *f), "inclusive sum of 'x' into 'y' along dimension 0 (1 line of 100)");
  auto rows = recogniseScan(form("rows", {{"m", 7}, {"n", 9}}), 0);
  ASSERT_TRUE(rows.has_value());
  EXPECT_EQ(rows->dim, 1);
  EXPECT_EQ(rows->lines(), 7);
  EXPECT_EQ(rows->inner, 1);
  auto columns = recogniseScan(form("columns", {{"m", 7}, {"n", 9}}), 0);
  ASSERT_TRUE(columns.has_value());
  EXPECT_EQ(columns->dim, 0);
  EXPECT_EQ(columns->inner, 9);
  EXPECT_EQ(columns->length, 7);
  auto seg = recogniseScan(form("segexcl", {{"n", 10}}), 0);
  ASSERT_TRUE(seg.has_value());
  EXPECT_TRUE(seg->exclusive);
  EXPECT_EQ(seg->head, 1);
  EXPECT_TRUE(recogniseScan(form("rowmax", {{"m", 3}, {"n", 4}}), 0).has_value());  // `1 + c`
  // Not scans: a body other than a load, a range past the index.
  EXPECT_FALSE(recogniseScan(form("notscan", {{"n", 10}}), 0).has_value());
  EXPECT_FALSE(recogniseScan(form("shifted", {{"n", 10}}), 0).has_value());
}

// The reference's one pass gives exactly the triangular form's values (the same combinations in
// the same order): `x[j] + 0.0` is not recognised and runs as a reduction per point.
TEST(Scan, ReferenceOnePassEqualsTheTriangularForm) {
  const Kernel scan = fromSource(flatSource("sum", "f32", "i + 1"), "scan", {{"n", 777}});
  const Kernel tri = form("plusZero", {{"n", 777}});
  ASSERT_FALSE(recogniseScan(tri, 0).has_value());
  HostArgs a(scan), b(tri);
  fillInputs(scan, a, 7);
  b.setArray("x", a.array("x"));
  auto ra = runReference(scan, a), rb = runReference(tri, b);
  EXPECT_EQ(ra.values("y"), rb.values("y"));
}

TEST(Scan, ReferenceRefusesABrokenSegmentation) {
  const Kernel k = form("segsum", {{"n", 5}});
  HostArgs args(k);
  fillInputs(k, args, 3);
  for (int64_t i = 0; i < 5; ++i) args.array("head").setInt(i, i < 3 ? 0 : 1);  // 1 at position 3: neither 3 nor 0
  try {
    runReference(k, args);
    FAIL() << "a broken segmentation ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'head' holds 1 at flat element 3"), std::string::npos) << e.what();
  }
}

// Each of the 32 forms under two of the five schedules, in turn (every schedule meets every
// operator, type and end; all five for f32 sums), to keep the test's compiles few.
TEST(Scan, EveryOperatorAndTypeInclusiveAndExclusive) {
  size_t turn = 0;
  for (const char* op : {"sum", "product", "max", "min"})
    for (const char* t : {"i32", "i64", "f32", "f64"})
      for (const char* end : {"i + 1", "i"}) {
        const Kernel k = fromSource(flatSource(op, t, end), "scan", {{"n", 1003}});
        const bool all = std::string(op) == "sum" && std::string(t) == "f32";
        for (size_t s = 0; s < std::size(kFlatSchedules); ++s)
          if (all || s == turn % 5 || s == (turn + 2) % 5)
            EXPECT_EQ(checkOnHost(k, kFlatSchedules[s], 1e-5), "") << op << " " << t << " " << end << ": " << kFlatSchedules[s];
        ++turn;
      }
}

TEST(Scan, LookBackAcrossLaunchesAndBlockOrders) {
  const Kernel k = fromSource(flatSource("sum", "f32", "i + 1"), "scan", {{"n", 5003}});
  for (int order : {0, 1, 2}) {
    EmulationOptions o;
    o.runs = 3;
    o.blockOrder = order;
    EXPECT_EQ(checkOnHost(k, "scan: lookback threads 32 items 2", 1e-5, {}, o), "") << order;
  }
  const Kernel d = fromSource(flatSource("max", "f64", "i"), "scan", {{"n", 5003}});
  EXPECT_EQ(checkOnHost(d, "scan: lookback threads 32 items 3", 0.0, {}, twiceShuffled()), "");
}

// The emulation runs blocks one after another, so a look-back finds its neighbour's prefix at
// once; with the prefixes held back, each combines the aggregates of every tile before it in its
// line (windows of 32 status words, 4-byte packed and 8-byte fenced, segmented tiles that close).
TEST(Scan, LookBackCombinesAggregates) {
  EmulationOptions held = twiceShuffled();
  held.scanHoldPrefix = true;
  for (const char* t : {"i32", "f32", "f64", "i64"}) {
    const Kernel k = fromSource(flatSource("sum", t, "i + 1"), "scan", {{"n", 5003}});
    EXPECT_EQ(checkOnHost(k, "scan: lookback threads 32 items 1", 1e-5, {}, held), "") << t;
  }
  const Kernel excl = fromSource(flatSource("min", "f32", "i"), "scan", {{"n", 3001}});
  EXPECT_EQ(checkOnHost(excl, "scan: lookback threads 32 items 2", 0.0, {}, held), "");
  const Kernel rows = form("rows", {{"m", 5}, {"n", 2001}});
  EXPECT_EQ(checkOnHost(rows, "scan: lookback threads 32 items 1", 1e-5, {}, held), "");
  const Kernel seg = form("segsum", {{"n", 3001}});
  HostArgs args(seg);
  fillInputs(seg, args, 5);
  fillSegmentHeads(args.array("head"), 9, 3001, 1, 300);
  EXPECT_EQ(checkOnHostWith(seg, "scan: lookback threads 32 items 1", args, 1e-5, {}, held), "");
}

// Whole tiles and a line's last, partial tile, for every value type, inclusive and exclusive, in
// lines whose length no tile divides, and rows that start at an odd offset (1001) or an aligned one.
TEST(Scan, WholeAndPartialTilesOfEveryType) {
  for (const char* t : {"i32", "f32", "f64", "i64"}) {
    const Kernel incl = fromSource(flatSource("sum", t, "i + 1"), "scan", {{"n", 4099}});
    const Kernel excl = fromSource(flatSource("max", t, "i"), "scan", {{"n", 4099}});
    for (const char* s : {"scan: lookback threads 32 items 4", "scan: lookback threads 64 items 8"}) {
      EXPECT_EQ(checkOnHost(incl, s, 1e-5, {}, twiceShuffled()), "") << t << " " << s;
      EXPECT_EQ(checkOnHost(excl, s, 0.0, {}, twiceShuffled()), "") << t << " " << s;
    }
  }
  // Rows of 1001 (the second row starts at an odd offset) and of 1024.
  for (int64_t n : {1001, 1024}) {
    const Kernel rows = form("rows", {{"m", 5}, {"n", n}});
    EXPECT_EQ(checkOnHost(rows, "scan: lookback threads 32 items 8", 1e-5, {}, twiceShuffled()), "") << n;
  }
}

TEST(Scan, RowsAndColumns) {
  const Kernel rows = form("rows", {{"m", 37}, {"n", 301}});
  for (const char* s : {"scan: lookback threads 64 items 2", "scan: lines lanes 32 items 3 threads 64",
                        "scan: lines lanes 4 items 5 threads 32", "scan: lines lanes 1 items 1 threads 32"})
    EXPECT_EQ(checkOnHost(rows, s, 1e-5, {}, twiceShuffled()), "") << s;
  const Kernel columns = form("columns", {{"m", 301}, {"n", 37}});
  for (const char* s : {"scan: lookback threads 32 items 3", "scan: lines lanes 1 items 4 threads 32",
                        "scan: lines lanes 16 items 2 threads 64"})
    EXPECT_EQ(checkOnHost(columns, s, 1e-5, {}, twiceShuffled()), "") << s;
  const Kernel rowmax = form("rowmax", {{"m", 5}, {"n", 1001}});
  EXPECT_EQ(checkOnHost(rowmax, "scan: lookback threads 32 items 4", 0.0, {}, twiceShuffled()), "");
}

TEST(Scan, Segmented) {
  for (const char* name : {"segsum", "segexcl", "segmax"}) {
    const Kernel k = form(name, {{"n", 2003}});
    for (const char* s : kFlatSchedules) EXPECT_EQ(checkOnHost(k, s, 1e-5, {}, twiceShuffled()), "") << name << ": " << s;
    EXPECT_EQ(checkOnHost(k, "scan: lookback threads 32 items 1", 1e-5), "") << name;  // tiles of 32: many without a start
  }
  // Long segments: the look-back crosses tiles inside one segment.
  const Kernel k = form("segsum", {{"n", 3001}});
  HostArgs args(k);
  fillInputs(k, args, 5);
  fillSegmentHeads(args.array("head"), 9, 3001, 1, 700);
  EXPECT_EQ(checkOnHostWith(k, "scan: lookback threads 32 items 2", args, 1e-5, {}, twiceShuffled()), "");
  const Kernel rows = form("segrows", {{"m", 13}, {"n", 257}});
  for (const char* s : {"scan: lookback threads 32 items 3", "scan: lines lanes 32 items 2 threads 64",
                        "scan: lines lanes 1 items 3 threads 32"})
    EXPECT_EQ(checkOnHost(rows, s, 0.0, {}, twiceShuffled()), "") << s;
}

// `layout warp` (each warp owns a run of the tile, one status word a tile for 4-byte values):
// every operator and type, inclusive and exclusive, on 1003 values (tiles of 192 and 512: whole
// tiles without bounds checks, a partial last one), two launches in shuffled block order.
TEST(Scan, WarpLayoutEveryOperatorAndType) {
  const char* const schedules[] = {"scan: lookback threads 64 items 3 layout warp",
                                   "scan: lookback threads 128 items 4 layout warp"};
  size_t turn = 0;
  for (const char* op : {"sum", "product", "max", "min"})
    for (const char* t : {"i32", "i64", "f32", "f64"})
      for (const char* end : {"i + 1", "i"}) {
        const Kernel k = fromSource(flatSource(op, t, end), "scan", {{"n", 1003}});
        const char* s = schedules[turn++ % 2];
        EXPECT_EQ(checkOnHost(k, s, 1e-5, {}, twiceShuffled()), "") << op << " " << t << " " << end << ": " << s;
      }
}

// The warp layout's look-back combining aggregates back to the line's start (prefixes held back)
// through windows of the dense 4-byte and the four-word 8-byte status words; a line shorter than
// one tile; three launches in each block order; rows (the second at an odd offset), columns,
// segmented lines and rows, segments longer than a tile.
TEST(Scan, WarpLayoutLookBackShapesAndSegments) {
  EmulationOptions held = twiceShuffled();
  held.scanHoldPrefix = true;
  for (const char* t : {"i32", "f32", "f64", "i64"}) {
    const Kernel k = fromSource(flatSource("sum", t, "i + 1"), "scan", {{"n", 5003}});
    EXPECT_EQ(checkOnHost(k, "scan: lookback threads 32 items 2 layout warp", 1e-5, {}, held), "") << t;
  }
  const Kernel small = fromSource(flatSource("max", "f32", "i"), "scan", {{"n", 100}});
  EXPECT_EQ(checkOnHost(small, "scan: lookback threads 128 items 8 layout warp", 0.0, {}, twiceShuffled()), "");
  const Kernel flat = fromSource(flatSource("sum", "f32", "i + 1"), "scan", {{"n", 5003}});
  for (int order : {0, 1, 2}) {
    EmulationOptions o;
    o.runs = 3;
    o.blockOrder = order;
    EXPECT_EQ(checkOnHost(flat, "scan: lookback threads 64 items 5 layout warp", 1e-5, {}, o), "") << order;
  }
  const Kernel rows = form("rows", {{"m", 5}, {"n", 1001}});
  EXPECT_EQ(checkOnHost(rows, "scan: lookback threads 32 items 8 layout warp", 1e-5, {}, held), "");
  const Kernel columns = form("columns", {{"m", 301}, {"n", 37}});
  EXPECT_EQ(checkOnHost(columns, "scan: lookback threads 32 items 3 layout warp", 1e-5, {}, twiceShuffled()), "");
  for (const char* name : {"segsum", "segexcl", "segmax"}) {
    const Kernel k = form(name, {{"n", 2003}});
    EXPECT_EQ(checkOnHost(k, "scan: lookback threads 64 items 3 layout warp", 1e-5, {}, twiceShuffled()), "") << name;
  }
  const Kernel seg = form("segsum", {{"n", 3001}});
  HostArgs args(seg);
  fillInputs(seg, args, 5);
  fillSegmentHeads(args.array("head"), 9, 3001, 1, 700);
  EXPECT_EQ(checkOnHostWith(seg, "scan: lookback threads 32 items 2 layout warp", args, 1e-5, {}, held), "");
  const Kernel segrows = form("segrows", {{"m", 13}, {"n", 257}});
  EXPECT_EQ(checkOnHost(segrows, "scan: lookback threads 32 items 3 layout warp", 0.0, {}, twiceShuffled()), "");
}

// The warp layout's plan: one status word a tile for 4-byte values, four for 8-byte ones; its
// templates only in a module that uses them (the block layout's text unchanged).
TEST(Scan, WarpLayoutStatusWordsAndText) {
  for (const char* t : {"f32", "f64"}) {
    const Kernel k = fromSource(flatSource("sum", t, "i + 1"), "scan", {{"n", 10000}});
    auto warp = planNest(k, 0, parseSchedule("scan: lookback threads 128 items 8 layout warp").schedule->nests[0]);
    auto block = planNest(k, 0, parseSchedule("scan: lookback threads 128 items 8").schedule->nests[0]);
    ASSERT_TRUE(warp.ok() && block.ok());
    EXPECT_EQ(warp.plan->scan->tiles, 10);
    EXPECT_EQ(warp.plan->scan->statusWords, std::string(t) == "f32" ? 10 : 40) << t;
    EXPECT_EQ(block.plan->scan->statusWords, 40) << t;
    const std::string w = emitCuda(k, *parseSchedule("scan: lookback threads 128 items 8 layout warp").schedule).source;
    const std::string b = emitCuda(k, *parseSchedule("scan: lookback threads 128 items 8").schedule).source;
    EXPECT_NE(w.find("rtcg_scan::lookbackWarp<"), std::string::npos);
    EXPECT_EQ(b.find("lookbackWarp"), std::string::npos);
  }
  // The layout is a look-back's: a `lines` schedule made with it (not by the parser) is refused.
  const Kernel k = fromSource(flatSource("sum", "f32", "i + 1"), "scan", {{"n", 10000}});
  NestSchedule lines = parseSchedule("scan: lines lanes 32 items 4 threads 64").schedule->nests[0];
  lines.scan.warpLayout = true;
  auto refused = planNest(k, 0, lines);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.reasons[0], "'layout warp' is a look-back's ('scan: lookback ... layout warp')");
}

TEST(Scan, PlanRefusesWithTheReason) {
  const Kernel notScan = form("notscan", {{"n", 100}});
  auto r = planNest(notScan, 0, parseSchedule("scan: lookback threads 64 items 4").schedule->nests[0]);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.reasons[0].find("'scan:' needs a scan"), std::string::npos) << r.reasons[0];
  const Kernel k = fromSource(flatSource("sum", "f64", "i + 1"), "scan", {{"n", 100}});
  auto big = planNest(k, 0, parseSchedule("scan: lookback threads 1024 items 8").schedule->nests[0]);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.reasons[0].find("more than 48 KiB"), std::string::npos) << big.reasons[0];
  auto beside = planNest(k, 0, parseSchedule("scan: lookback threads 64 items 4; stores: streaming").schedule->nests[0]);
  ASSERT_FALSE(beside.ok());
  EXPECT_EQ(beside.reasons[0], "'stores:' does not apply beside 'scan:'");
  // The default schedule of a scan is one pass; of a small triangle that is no scan, not.
  EXPECT_TRUE(defaultSchedule(k).nests[0].scan.any());
  EXPECT_FALSE(defaultSchedule(notScan).nests[0].scan.any());
}

TEST(Scan, ScheduleTextRoundTrips) {
  for (const char* s : {"scan: lookback threads 256 items 8", "scan: lines lanes 32 items 4 threads 256",
                        "scan: lines lanes 1 items 1 threads 32", "scan: lookback threads 256 items 12 layout warp"}) {
    auto p = parseSchedule(s);
    ASSERT_TRUE(p.ok()) << s << ": " << p.error;
    EXPECT_EQ(printSchedule(*p.schedule), s);
  }
  for (const char* s : {"scan: lines lanes 3 items 4 threads 256", "scan: lookback threads 100 items 4",
                        "scan: lookback threads 64 items 40", "scan: sideways threads 64 items 4",
                        "scan: lookback threads 64 items 4 layout sideways", "scan: lines lanes 32 items 4 threads 64 layout warp"})
    EXPECT_FALSE(parseSchedule(s).ok()) << s;
  auto block = parseSchedule("scan: lookback threads 64 items 4 layout block");  // the default, printed without
  ASSERT_TRUE(block.ok()) << block.error;
  EXPECT_EQ(printSchedule(*block.schedule), "scan: lookback threads 64 items 4");
}

// The space offers the scan family; the quadratic reductions only where a line is short.
TEST(Scan, SpaceOffersScansAndTrianglesWhereShort) {
  auto families = [](const Kernel& k) {
    int scans = 0, others = 0;
    const Space space = enumerateSchedules(k);
    for (const Candidate& c : space.candidates) (c.schedule.nests[0].scan.any() ? scans : others) += 1;
    for (const Candidate& c : space.reserve) (c.schedule.nests[0].scan.any() ? scans : others) += 1;
    return std::pair{scans, others};
  };
  const auto [longScans, longOthers] = families(fromSource(flatSource("sum", "f32", "i + 1"), "scan", {{"n", 100000}}));
  EXPECT_GT(longScans, 5);
  EXPECT_EQ(longOthers, 0);
  const auto [shortScans, shortOthers] = families(form("rows", {{"m", 4096}, {"n", 300}}));
  EXPECT_GT(shortScans, 5);
  EXPECT_GT(shortOthers, 5);
}

// A scan counts one combine per value, and its verification allows the error of a sum of its line.
TEST(Scan, CountsAndTolerance) {
  const Kernel k = fromSource(flatSource("sum", "f32", "i + 1"), "scan", {{"n", 25600}});
  EXPECT_EQ(floatOps(k), 25600);
  EXPECT_NEAR(verificationTolerance(k, k.findParam("y"), Precision::Ieee), 1e-5 * 10, 1e-12);  // sqrt(25600 / 256)
  const Kernel rows = form("rows", {{"m", 8}, {"n", 2560}});
  EXPECT_EQ(floatOps(rows), 8 * 2560);
  EXPECT_NEAR(verificationTolerance(rows, rows.findParam("y"), Precision::Ieee), 1e-5 * std::sqrt(10.0), 1e-12);
}
