#include <gtest/gtest.h>

#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/Domain.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "reference/DslKernels.h"
#include "schedule/TestKernels.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

Schedule parseOk(const std::string& text) {
  auto r = parseSchedule(text);
  EXPECT_TRUE(r.ok()) << text << ": " << r.error << " at column " << r.column;
  return r.ok() ? *r.schedule : Schedule{};
}

bool hasReason(const std::vector<std::string>& reasons, const std::string& part) {
  for (const std::string& r : reasons)
    if (r.find(part) != std::string::npos) return true;
  return false;
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& r : v) s += r + "\n";
  return s;
}

}  // namespace

TEST(Schedule, PrintsTheDocumentedForm) {
  Schedule s;
  NestSchedule n;
  n.indices.push_back({"i", {{Placement::GridY, {}}, {Placement::ThreadY, 16}, {Placement::Reg, 4}}});
  n.indices.push_back({"j", {{Placement::GridX, {}}, {Placement::ThreadX, 32}}});
  n.indices.push_back({"k", {{Placement::Serial, {}}, {Placement::Unroll, 4}}});
  n.shared = {"a", "b"};
  s.nests.push_back(n);
  EXPECT_EQ(printSchedule(s),
            "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4; shared: a, b");
}

TEST(Schedule, RoundTripsManyTexts) {
  const char* texts[] = {
      "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4; shared: a, b",
      "i: grid.x, thread.x 256",
      "i: serial",
      "-",
      "- | i: grid.x, thread.x 128",
      "i: grid.x, thread.x 64 | j: grid.y; k: grid.x, thread.x 32 | -",
      "b: grid.z; i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 16, reg 2; k: unroll, serial 2; l: unroll",
      "i: thread.z; j: thread.y; k: thread.x",
      "i: reg, serial 3, unroll 2, reg 5",
      "i: grid.x, thread.x 0",
      "i: grid.x, thread.x -3",
      "shared: a",
      "x_1: serial; y2: grid.x",
      "i: grid.y, thread.y 16, reg 8; j: grid.x, thread.x 16; k: serial, unroll 8; shared: a, b; blocks_per_sm: 2",
      "i: grid.x, thread.x 128; blocks_per_sm: 4",
      "i: grid.y, thread.y 16, reg 8; j: grid.x, thread.x 16; k: serial, unroll 8; shared: a^T, b; buffers: 2",
      "shared: x, a^T, y^T; buffers: 2; blocks_per_sm: 2",
      "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32, reg 4; k: serial, unroll 8; shared: a, b; buffers: 3; copy: async",
      "k: grid.x, serial 16, thread.y 8; i: serial, thread.x 32; f: serial, unroll 84; shared: LIFT, flux; buffers: 2; loads: early",
      "i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 16, reg 4; k: serial, unroll 16; shared: a[i,k]^T, a[j,k]^T; buffers: 3; copy: async",
      "shared: a[j,k], b, a[i+1,k]^T",
  };
  for (const char* t : texts) {
    Schedule s = parseOk(t);
    EXPECT_EQ(printSchedule(s), t);
    EXPECT_EQ(parseOk(printSchedule(s)), s);
  }
}

// `shared:` entries name an array or one access of it; spaces inside the brackets are dropped, so
// the entry prints as the accesses' keys (schedule/Domain.h accessKey) and parses back.
TEST(Schedule, SharedAccessEntries) {
  Schedule s = parseOk("i: serial; shared: a [ i, k ]^T, a[j , k], b");
  EXPECT_EQ(s.nests[0].shared, (std::vector<std::string>{"a[i,k]", "a[j,k]", "b"}));
  EXPECT_EQ(s.nests[0].transposed, (std::vector<std::string>{"a[i,k]"}));
  EXPECT_EQ(printSchedule(s), "i: serial; shared: a[i,k]^T, a[j,k], b");
  EXPECT_EQ(stagedArrayName("a[i,k]"), "a");
  EXPECT_EQ(stagedAccess("a[i,k]"), "i,k");
  EXPECT_EQ(stagedArrayName("b"), "b");
  EXPECT_EQ(stagedAccess("b"), "");
}

TEST(Schedule, ParsingIsTolerantOfSpacing) {
  Schedule a = parseOk("i:grid.y,thread.y 16;j:grid.x ,  thread.x 32|k :serial");
  Schedule b = parseOk("i: grid.y, thread.y 16; j: grid.x, thread.x 32 | k: serial");
  EXPECT_EQ(a, b);
  EXPECT_EQ(printSchedule(a), "i: grid.y, thread.y 16; j: grid.x, thread.x 32 | k: serial");
}

TEST(Schedule, Equality) {
  EXPECT_EQ(parseOk("i: grid.x, thread.x 32"), parseOk("i: grid.x, thread.x 32"));
  EXPECT_NE(parseOk("i: grid.x, thread.x 32"), parseOk("i: grid.x, thread.x 64"));
  EXPECT_NE(parseOk("i: grid.x, thread.x 32"), parseOk("i: grid.y, thread.x 32"));
  EXPECT_NE(parseOk("i: serial; shared: a"), parseOk("i: serial"));
}

TEST(Schedule, ParseErrorsHaveColumns) {
  struct Case {
    const char* text;
    int column;
    const char* message;
  } cases[] = {
      {"i: grid.w", 4, "unknown placement 'grid.w'"},
      {"i: grid.x 4", 11, "first part of 'i' takes no factor"},
      {"i: grid.x, thread.x", 20, "needs a factor"},
      {"i grid.x", 3, "expected ':'"},
      {"i: grid.x; ", 12, "expected an index name"},
      {"i: grid.x,", 11, "expected a placement"},
      {"", 1, "expected an index name"},
      {"i: grid.x thread.x", 11, "unexpected 't'"},
      {"i: serial, unroll 4x", 20, "after a factor"},
      {"shared: a; shared: b", 12, "given twice"},
      {"i: serial; blocks_per_sm: 2; blocks_per_sm: 2", 30, "given twice"},
      {"i: serial; blocks_per_sm: 0", 27, "between 1 and 32"},
      {"i: serial; blocks_per_sm: two", 27, "expected a number of blocks"},
      {"shared: 3", 9, "expected an array name"},
      // Found by tests/fuzz/schedule_fuzz: `a^T, a` printed as `a^T, a^T`, not round-tripping.
      {"shared: a^T, a", 14, "'a' is listed twice in 'shared:'"},
      {"shared: b, a, b", 15, "'b' is listed twice in 'shared:'"},
      {"- i: serial", 3, "after '-'"},
      {"i: serial, unroll 99999999999999999", 19, "too large"},
      {"i: serial |", 12, "expected an index name"},
      {"shared: a^t", 11, "expected 'T' after '^'"},
      {"shared: a^", 11, "expected 'T' after '^'"},
      {"i: serial; buffers: 5", 21, "buffers must be between 1 and 4"},
      {"i: serial; copy: later", 18, "unknown copy 'later'"},
      {"i: serial; copy: async; copy: async", 25, "given twice"},
      {"i: serial; buffers: 2; buffers: 2", 24, "given twice"},
      {"i: serial; loads: soon", 19, "unknown loads 'soon' (expected 'early' or 'late')"},
      {"i: serial; loads: early; loads: late", 26, "'loads:' is given twice"},
      // Accesses of an array in `shared:` (two tiles of one array): brackets closed and not empty,
      // each access once (spaces do not make another access).
      {"shared: a[i,k", 10, "unclosed '[' of an access"},
      {"shared: a[i,k; i: serial", 10, "unclosed '[' of an access"},
      {"shared: a[ ]", 10, "needs its index expressions"},
      {"shared: a[i,k], a[i, k]^T", 17, "'a[i,k]' is listed twice in 'shared:'"},
  };
  for (const Case& c : cases) {
    auto r = parseSchedule(c.text);
    EXPECT_FALSE(r.ok()) << c.text;
    EXPECT_EQ(r.column, c.column) << c.text << ": " << r.error;
    EXPECT_NE(r.error.find(c.message), std::string::npos) << c.text << ": " << r.error;
  }
}

TEST(Schedule, ValidSchedulesHaveNoReasons) {
  Kernel mm = matmul(500);
  for (const char* t : {"i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, unroll 4",
                        "i: grid.y; j: grid.x, thread.x 256; k: serial",
                        "j: grid.x, thread.x 32, reg 2; i: grid.y, thread.y 8, reg 4; k: unroll, serial 2",
                        "i: serial; j: thread.x; k: unroll",
                        "i: grid.y, thread.y 4; j: grid.x, thread.x 32; k: serial; shared: b; buffers: 2; blocks_per_sm: 2",
                        "i: grid.y, thread.y 4; j: grid.x, thread.x 32; k: serial, unroll 8; shared: a^T, b^T; buffers: 2",
                        // Split-K: each block steps through its share of k.
                        "i: grid.y, thread.y 4, reg 2; j: grid.x, thread.x 32; k: grid.z, serial 16, unroll 8; shared: a^T, b",
                        "i: grid.y, thread.y 4; j: grid.x, thread.x 32; k: grid.z, serial 8; shared: a, b; buffers: 3; copy: async"}) {
    auto reasons = validateSchedule(mm, parseOk(t));
    EXPECT_TRUE(reasons.empty()) << t << "\n" << joined(reasons);
  }
}

TEST(Schedule, ValidationReasons) {
  Kernel mm = matmul(500);
  struct Case {
    const char* text;
    const char* reason;
  } cases[] = {
      {"i: grid.y; j: grid.x, thread.x 32; k: serial; q: serial", "'q' is not an index of the nest"},
      {"i: grid.y; j: grid.x, thread.x 32", "reduction index 'k' has no clause"},
      {"j: grid.x, thread.x 32; k: serial", "parallel index 'i' has no clause"},
      {"i: grid.x; j: grid.x, thread.x 32; k: serial", "grid.x is used twice"},
      {"i: grid.y, thread.x 2; j: grid.x, thread.x 32; k: serial", "thread.x is used twice"},
      {"i: grid.y, thread.y 0; j: grid.x, thread.x 32; k: serial", "must be positive"},
      {"i: grid.y, thread.y 32; j: grid.x, thread.x 32; k: serial; blocks_per_sm: 3", "exceeds the 2048 threads"},
      {"i: grid.y, thread.y 64; j: grid.x, thread.x 32; k: serial", "2048 threads per block"},
      {"i: grid.y, thread.z 128; j: grid.x, thread.x 2; k: serial", "128 threads on thread.z"},
      {"i: grid.y, reg 16; j: grid.x, thread.x 32, reg 16; k: serial", "register tile of 256 points"},
      {"i: grid.y; j: grid.x, thread.x 32; k: serial, thread.x 8", "thread.x is used twice"},
      {"i: grid.y; j: grid.x, thread.x 32; k: serial, thread.y 64", "2048 threads per block"},
      {"i: grid.y; j: grid.x; k: reg", "the reg part of 'k' would be its steps (its first part)"},
      {"i: grid.y; j: grid.x; k: serial, grid.x 4", "grid.x is used twice"},
      {"i: grid.y, thread.y 4; j: grid.x, thread.x 32; k: serial, grid.z 4, serial 8; shared: a",
       "'k' has a grid part after its first non-grid part, so a step along it would span the values of several blocks"},
      {"i: grid.y; j: grid.x, thread.x 32; k: grid.z, thread.y 4, serial 8; shared: a",
       "the steps along 'k' would be its first non-grid part, which is on thread.y"},
      {"i: grid.y; j: grid.x; k: serial; shared: c", "'c' is written"},
      {"i: grid.y; j: grid.x; k: serial; shared: zz", "'zz' in shared: is not a parameter"},
      {"i: grid.y; j: grid.x; k: serial; shared: n", "'n' in shared: is not an array"},
      {"i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 32; k: serial, serial 200; shared: a",
       "staging needs 51200 bytes of shared memory (at most 49152)"},
      {"i: grid.y; j: grid.x, thread.x 32; k: thread.y, serial 100; shared: a", "give 'k' a serial or unroll first part"},
      {"i: grid.y; j: grid.x; k: serial; i: serial", "'i' is scheduled twice"},
      {"i: grid.y | j: grid.x", "the schedule has 2 nest schedules but kernel 'matmul' has 1"},
      {"i: grid.y; j: grid.x; k: serial; buffers: 2", "but nothing is staged"},
      {"i: grid.y; j: grid.x, thread.x 32; k: serial, unroll 8; shared: b; copy: async", "needs 'buffers: 2' or more"},
      {"i: grid.y; j: grid.x, thread.x 32; k: serial, unroll 8; shared: b; buffers: 3", "add 'copy: async'"},
  };
  for (const Case& c : cases) {
    auto reasons = validateSchedule(mm, parseOk(c.text));
    EXPECT_TRUE(hasReason(reasons, c.reason)) << c.text << "\n" << joined(reasons);
  }
  // Many problems at once: every one is reported.
  auto reasons = validateSchedule(mm, parseOk("i: grid.x, thread.x 0; j: grid.x; q: serial"));
  EXPECT_GE(reasons.size(), 3u) << joined(reasons);
  auto unrolled = validateSchedule(matmul(2000), parseOk("i: grid.y; j: grid.x; k: unroll"));
  EXPECT_TRUE(hasReason(unrolled, "unrolling 2000 iterations")) << joined(unrolled);
  // Grid y is limited to 65535 blocks.
  auto big = validateSchedule(axpby(100000), parseOk("i: grid.y"));
  EXPECT_TRUE(hasReason(big, "100000 blocks on grid.y")) << joined(big);
}

TEST(Schedule, StagingAndSplitReductionReasons) {
  Kernel tri = triangular(16);
  auto moves = validateSchedule(tri, parseOk("i: grid.y; j: grid.x; k: serial; shared: a | i: grid.x; k: serial"));
  EXPECT_TRUE(hasReason(moves, "array 'a' cannot be staged in shared memory")) << joined(moves);
  // A reduction whose bounds vary with a parallel index (`k in i..n`) splits across threads and
  // blocks, also where that index has a register part (the points' union of ranges); one whose
  // range reads an array at a register-tile index is computed in its statement, so it does not.
  EXPECT_TRUE(validateSchedule(tri, parseOk("i: grid.y; j: grid.x; k: serial | i: grid.x; k: serial, thread.x 4")).empty());
  EXPECT_TRUE(validateSchedule(tri, parseOk("i: grid.y; j: grid.x; k: serial | i: grid.x; k: serial, grid.y 2, thread.x 4")).empty());
  EXPECT_TRUE(validateSchedule(tri, parseOk("i: grid.y; j: grid.x; k: serial | i: grid.x, reg 2; k: serial, thread.x 4")).empty());
  Kernel ragged = bindDsl(
      "kernel ragged(n: int, m: int, len: i32[n], a: f32[n, m], out s: f32[n]) {\n"
      "  for i in 0..n { s[i] = sum(j in 0..len[i], a[i, j]); }\n"
      "}\n",
      {{"n", 45}, {"m", 37}});
  auto bounds = validateSchedule(ragged, parseOk("i: grid.x, reg 2; j: serial, thread.x 4"));
  EXPECT_TRUE(hasReason(bounds, "reduction over 'j' cannot be split across threads: it is computed inside a statement"))
      << joined(bounds);
  // Legal: staged per step, whole small arrays, split reductions.
  EXPECT_TRUE(validateSchedule(matmul(500), parseOk("i: grid.y, thread.y 16; j: grid.x, thread.x 16; k: serial, unroll 16; shared: a, b")).empty());
  EXPECT_TRUE(validateSchedule(dgDiff(100, 20), parseOk("k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial; shared: Dr, Ds, Dt, u")).empty());
  EXPECT_TRUE(validateSchedule(dot(1000), parseOk("i: serial, thread.x 256")).empty());
  // Reductions split across blocks: legal on a free grid axis while the global scratch is bounded.
  EXPECT_TRUE(validateSchedule(dot(1 << 26), parseOk("i: serial, unroll 4, grid.x 264, thread.x 256")).empty());
  EXPECT_TRUE(validateSchedule(matmul(500), parseOk("i: grid.y; j: grid.x, thread.x 32; k: serial, grid.z 4")).empty());
  auto scratch = validateSchedule(matmul(4096), parseOk("i: grid.y; j: grid.x, thread.x 256; k: serial, grid.z 64"));
  EXPECT_TRUE(hasReason(scratch, "splitting 'k' across 64 blocks for 65536 output tiles needs")) << joined(scratch);
  EXPECT_TRUE(hasReason(scratch, "bytes of global scratch (at most 134217728)")) << joined(scratch);
  // A staged reduction on the grid alone leaves a block no steps (a small product: its scratch fits).
  auto gridOnly = validateSchedule(matmul(64), parseOk("i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: grid.z; shared: a"));
  EXPECT_TRUE(hasReason(gridOnly, "every part of 'k' is on the grid, so a block has no steps to stage")) << joined(gridOnly);
  // The staging plan says what is staged where.
  NestSchedule ns = parseOk("k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial, unroll 4; shared: Dr, u").nests[0];
  StagingPlan plan = planStaging(dgDiff(100, 20), 0, ns);
  ASSERT_EQ(plan.arrays.size(), 2u);
  EXPECT_EQ(plan.arrays[0].level, StageLevel::Block);  // Dr: the whole 20 x 20 matrix
  EXPECT_EQ(plan.arrays[0].elements, 400);
  EXPECT_EQ(plan.arrays[1].level, StageLevel::Step);   // u: 4 elements x 4 steps of j
  EXPECT_EQ(plan.arrays[1].elements, 16);
  EXPECT_EQ(plan.bytes, 1600 + 64);
  // Transposed and double-buffered: Dr^T is stored row-major over (j, i); u's step tiles twice.
  NestSchedule tb = parseOk("k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial, unroll 4; shared: Dr^T, u; buffers: 2").nests[0];
  EXPECT_TRUE(validateSchedule(dgDiff(100, 20), Schedule{{tb}}).empty());
  StagingPlan tplan = planStaging(dgDiff(100, 20), 0, tb);
  ASSERT_EQ(tplan.arrays.size(), 2u);
  EXPECT_EQ(tplan.arrays[0].order, (std::vector<size_t>{1, 0}));
  EXPECT_EQ(tplan.arrays[0].buffers, 1);  // once per block: nothing to double-buffer
  EXPECT_EQ(tplan.arrays[1].buffers, 2);
  EXPECT_EQ(tplan.bytes, (int64_t)tplan.arrays[0].bytes + 2 * 64);
  // A transposed one-dimensional array, a transposed array that is not staged, buffers without steps.
  auto one = validateSchedule(dot(100), Schedule{{NestSchedule{{{"i", {{Placement::Serial, {}}, {Placement::ThreadX, 32}}}}, {"x"}, {"x"}}}});
  EXPECT_TRUE(hasReason(one, "array 'x' has one dimension")) << joined(one);
  NestSchedule stray = parseOk("i: grid.y; j: grid.x; k: serial; shared: b").nests[0];
  stray.transposed = {"a"};
  auto notStaged = validateSchedule(matmul(64), Schedule{{stray}});
  EXPECT_TRUE(hasReason(notStaged, "array 'a' is marked transposed but is not staged")) << joined(notStaged);
  auto blockOnly = validateSchedule(dgDiff(100, 20), parseOk("k: grid.x, thread.y 4; i: serial, thread.x 32; j: serial; shared: Dr; buffers: 2"));
  EXPECT_TRUE(hasReason(blockOnly, "every staged array is staged once per block")) << joined(blockOnly);
}

// Two tiles of one array (a symmetric rank-k update reads a[i, k] and a[j, k]): each access staged
// per step as its own tile, one moving with i and one with j; the whole array cannot be one tile
// (the reason names the accesses to stage instead), an access no read of the nest has is refused,
// and so is an array staged both whole and by an access.
TEST(Schedule, StagingTwoAccessesOfOneArray) {
  Kernel syrk = bindDsl(
      "kernel syrk(n: int, K: int, a: f32[n, K], out c: f32[n, n]) {\n"
      "  for i in 0..n, j in 0..i + 1 { c[i, j] = sum(k in 0..K, a[i, k] * a[j, k]); }\n"
      "}\n",
      {{"n", 100}, {"K", 30}});
  const std::string tiles = "i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 8, reg 4; k: serial, unroll 8; ";
  auto whole = validateSchedule(syrk, parseOk(tiles + "shared: a"));
  EXPECT_TRUE(hasReason(whole, "(stage each access as its own tile: 'shared: a[i,k], a[j,k]')")) << joined(whole);
  NestSchedule ns = parseOk(tiles + "shared: a[i,k]^T, a[j,k]; buffers: 2").nests[0];
  auto plan = planNest(syrk, 0, ns);
  ASSERT_TRUE(plan.ok()) << joined(plan.reasons);
  const StagingPlan& st = plan.plan->staging;
  ASSERT_EQ(st.arrays.size(), 2u);
  EXPECT_EQ(st.arrays[0].access, "i,k");
  EXPECT_EQ(st.arrays[1].access, "j,k");
  for (const StagedArray& sa : st.arrays) {
    EXPECT_EQ(sa.level, StageLevel::Step);
    EXPECT_EQ(sa.buffers, 2);
    EXPECT_EQ(sa.dims[0].size, 32);  // the block's 32 rows of i (or j)
    EXPECT_EQ(sa.dims[1].size, 8);   // one step of k
  }
  EXPECT_TRUE(movesWith(st.arrays[0], "i") && !movesWith(st.arrays[0], "j"));
  EXPECT_TRUE(movesWith(st.arrays[1], "j") && !movesWith(st.arrays[1], "i"));
  EXPECT_EQ(st.arrays[0].order, (std::vector<size_t>{1, 0}));  // a[i,k]^T
  EXPECT_EQ(st.arrays[1].order, (std::vector<size_t>{0, 1}));
  std::string explained = printPlan(syrk, *plan.plan);
  EXPECT_NE(explained.find("shared a[i,k]^T: per step of reduction group 0, box [i : 32, step : 8]"), std::string::npos)
      << explained;
  EXPECT_NE(explained.find("shared a[j,k]: per step of reduction group 0, box [j : 32, step : 8]"), std::string::npos)
      << explained;
  // One access alone: the other is read from global memory.
  EXPECT_TRUE(validateSchedule(syrk, parseOk(tiles + "shared: a[j,k]")).empty());
  auto none = validateSchedule(syrk, parseOk(tiles + "shared: a[k,i]"));
  EXPECT_TRUE(hasReason(none, "access 'a[k,i]' cannot be staged in shared memory: no read of the nest has these "
                              "indices (its reads of 'a': a[i,k], a[j,k])")) << joined(none);
  auto both = validateSchedule(syrk, parseOk(tiles + "shared: a, a[i,k]"));
  EXPECT_TRUE(hasReason(both, "'a' and 'a[i,k]' are both in shared:")) << joined(both);
  auto written = validateSchedule(syrk, parseOk(tiles + "shared: c[i,j]"));
  EXPECT_TRUE(hasReason(written, "array 'c' is written")) << joined(written);
}

// `loads: early`: which loads of the statements go ahead of their reductions, and the reasons it
// is refused. `loads: late` is the default and prints as nothing.
TEST(Schedule, EarlyStatementLoads) {
  Diagnostics diags;
  const std::string source =
      "kernel upd(n: int, a: f32[n, n], x: f32[n], inout y: f32[n], out z: f32[n], out w: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = y[i] + sum(k in 0..n, a[i, k] * x[k]);\n"
      "    z[i] = y[i] * 2.0 + x[i] + x[n - 1 - i];\n"
      "  }\n"
      "  for i in 0..n { w[i] = x[i] * 3.0; }\n"
      "}\n";
  auto prog = parseProgram("upd.rtcg", source, diags);
  ASSERT_TRUE(prog) << diags.render("upd.rtcg", source);
  auto k = bindSizes(prog->kernels[0], {{"n", 100}}, diags);
  ASSERT_TRUE(k);
  Schedule s = parseOk("i: grid.x, thread.x 32; k: serial, unroll 4 | i: grid.x, thread.x 32");
  // y[i] of the first statement (its own element), x[i] and x[n - 1 - i] of the second; not y[i]
  // there (the first statement writes it).
  std::vector<Expr> loads = earlyStatementLoads(*k, 0, s.nests[0]);
  ASSERT_EQ(loads.size(), 3u);
  EXPECT_EQ(loads[0]->array, k->findParam("y"));
  EXPECT_EQ(loads[1]->array, k->findParam("x"));
  EXPECT_EQ(loads[2]->array, k->findParam("x"));
  // Staged arrays are read from their tiles.
  Schedule staged = parseOk("i: grid.x, thread.x 32; k: serial, unroll 4; shared: x | i: grid.x, thread.x 32");
  EXPECT_EQ(earlyStatementLoads(*k, 0, staged.nests[0]).size(), 1u);
  s.nests[0].earlyLoads = true;
  EXPECT_EQ(printSchedule(s), "i: grid.x, thread.x 32; k: serial, unroll 4; loads: early | i: grid.x, thread.x 32");
  EXPECT_TRUE(validateSchedule(*k, s).empty()) << joined(validateSchedule(*k, s));
  EXPECT_EQ(parseOk("i: serial; loads: late").nests[0].earlyLoads, false);
  // No reduction in the second nest; a reduction split across blocks in the first.
  auto none = validateSchedule(*k, parseOk("i: grid.x, thread.x 32; k: serial | i: grid.x, thread.x 32; loads: early"));
  EXPECT_TRUE(hasReason(none, "no reduction of this nest is computed ahead of its statements")) << joined(none);
  auto split = validateSchedule(*k, parseOk("i: grid.x, thread.x 32; k: serial, grid.y 4; loads: early | i: grid.x"));
  EXPECT_TRUE(hasReason(split, "does not combine with a reduction split across blocks")) << joined(split);
  // A matrix product's statement reads nothing outside its reduction.
  auto mm = validateSchedule(matmul(64), parseOk("i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: serial; loads: early"));
  EXPECT_TRUE(hasReason(mm, "read nothing outside them that can be loaded early")) << joined(mm);
}

TEST(Schedule, UnboundKernelIsRejected) {
  Kernel mm = matmul(8);
  mm.sizes.clear();
  EXPECT_TRUE(hasReason(validateSchedule(mm, defaultSchedule(matmul(8))), "unbound size parameters"));
}

TEST(Schedule, DefaultSchedules) {
  struct Case {
    Kernel k;
    const char* text;
  } cases[] = {
      {matmul(500), "i: grid.y; j: grid.x, thread.x 256; k: serial"},
      {matmul(17), "i: grid.y; j: grid.x, thread.x 32; k: serial"},
      {matmul(1), "i: grid.y; j: grid.x, thread.x 32; k: serial"},
      {axpby(1000000), "i: grid.x, thread.x 256"},
      {dot(1000), "i: serial, thread.x 256"},
      {dot(1000000), "i: serial, grid.x 128, thread.x 256"},
      {dot(100), "i: serial"},
      {dgDiff(10000, 20), "k: grid.y; i: grid.x, thread.x 32; j: serial"},
      {triangular(17), "i: grid.y; j: grid.x, thread.x 32; k: serial | i: grid.x, thread.x 32; k: serial"},
      {batched(4096, 16), "b: grid.z; i: grid.y; j: grid.x, thread.x 32; k: serial; l: serial"},
      {axpby(5), "i: grid.x, thread.x 32"},
  };
  for (const Case& c : cases) {
    Schedule s = defaultSchedule(c.k);
    EXPECT_EQ(printSchedule(s), c.text);
    EXPECT_EQ(parseOk(printSchedule(s)), s);
    EXPECT_TRUE(validateSchedule(c.k, s).empty()) << joined(validateSchedule(c.k, s));
  }
  // Few output points with long sums read contiguously: a block per point (gemv); read with a
  // stride (the transposed product), 32 points a block along the contiguous output index, the sum
  // over 8 threads of each.
  for (bool transposed : {false, true}) {
    KernelBuilder g("gemv");
    int A = g.array("a", ScalarType::F32, {2000, 1500}), X = g.array("x", ScalarType::F32, {transposed ? 2000 : 1500});
    int Y = g.array("y", ScalarType::F32, {transposed ? 1500 : 2000}, ArrayMode::Out);
    Loop i = g.loop("i", 0, transposed ? 1500 : 2000), j = g.loop("j", 0, transposed ? 2000 : 1500);
    auto a = transposed ? g.ld(A, {g.idx(j), g.idx(i)}) : g.ld(A, {g.idx(i), g.idx(j)});
    g.nest({i}, {g.store(Y, {g.idx(i)}, reduce(ReduceOp::Sum, {j}, mul(a, g.ld(X, {g.idx(j)}))))});
    Schedule gs = defaultSchedule(g.k);
    EXPECT_EQ(printSchedule(gs), transposed ? "i: grid.x, thread.x 32; j: serial, unroll 8, thread.y 8" : "i: grid.x; j: serial, thread.x 256");
    EXPECT_TRUE(validateSchedule(g.k, gs).empty()) << joined(validateSchedule(g.k, gs));
  }
  // An outer index beyond the grid's y limit loops inside the thread.
  KernelBuilder b("wide");
  b.size("m", 200000);
  int Y = b.array("y", ScalarType::F32, {200000, 2}, ArrayMode::Out);
  Loop i = b.loop("i", 0, 200000), j = b.loop("j", 0, 2);
  b.nest({i, j}, {b.store(Y, {b.idx(i), b.idx(j)}, f32(1.0))});
  Schedule s = defaultSchedule(b.k);
  EXPECT_EQ(printSchedule(s), "i: grid.y, serial 4; j: grid.x, thread.x 32");
  EXPECT_TRUE(validateSchedule(b.k, s).empty()) << joined(validateSchedule(b.k, s));
}

// The mean row of a varying reduction range: exact while every enclosing loop has at most 16
// values, sampled past that.
TEST(Domain, MeanTripCountOfVaryingRanges) {
  auto reduction = [](const Kernel& k, int nest) {
    auto idx = nestIndices(k, nest);
    EXPECT_TRUE(idx.has_value());
    return idx ? idx->back().loops.front() : nullptr;
  };
  Kernel t16 = triangular(16);
  // `k in 0..j + 1` over the triangle i in 0..16, j in 0..i + 1: 816 values over 136 points.
  EXPECT_DOUBLE_EQ(meanTripCount(t16, 0, *reduction(t16, 0)).value_or(-1), 6.0);
  // `k in i..n`: (n + 1) / 2.
  EXPECT_DOUBLE_EQ(meanTripCount(t16, 1, *reduction(t16, 1)).value_or(-1), 8.5);
  Kernel t3000 = triangular(3000);
  EXPECT_NEAR(meanTripCount(t3000, 1, *reduction(t3000, 1)).value_or(-1), 1500.5, 15);
  // A rectangle's row is its extent.
  Kernel mm = matmul(37);
  EXPECT_DOUBLE_EQ(meanTripCount(mm, 0, *reduction(mm, 0)).value_or(-1), 37.0);
}

TEST(Domain, IndicesAndHulls) {
  Kernel t = triangular(17);
  auto idx = nestIndices(t, 0);
  ASSERT_TRUE(idx.has_value());
  ASSERT_EQ(idx->size(), 3u);
  EXPECT_EQ((*idx)[0].name, "i");
  EXPECT_TRUE((*idx)[0].parallel);
  EXPECT_EQ((*idx)[1].hull, (IndexRange{0, 16}));
  EXPECT_FALSE((*idx)[1].constantBounds);
  EXPECT_EQ((*idx)[2].name, "k");
  EXPECT_FALSE((*idx)[2].parallel);
  EXPECT_EQ((*idx)[2].hull, (IndexRange{0, 16}));
  // dg_diff's three reductions over `j` are one index.
  auto dg = nestIndices(dgDiff(100, 20), 0);
  ASSERT_TRUE(dg.has_value());
  ASSERT_EQ(dg->size(), 3u);
  EXPECT_EQ((*dg)[2].loops.size(), 3u);
}

TEST(Domain, PartExtents) {
  IndexSchedule s{"i", {{Placement::GridY, {}}, {Placement::ThreadY, 16}, {Placement::Reg, 4}}};
  EXPECT_EQ(partExtents(s, 500), (std::vector<int64_t>{8, 16, 4}));
  EXPECT_EQ(partExtents(s, 512), (std::vector<int64_t>{8, 16, 4}));
  EXPECT_EQ(partExtents(s, 1), (std::vector<int64_t>{1, 16, 4}));
  EXPECT_EQ(partExtents(s, 0), (std::vector<int64_t>{1, 16, 4}));
}

// A nest's plan: the launch, the index parts, the staging and the shared memory, derived once; a
// rejected schedule has no plan, only the reasons validateSchedule reports.
TEST(Plan, LaunchPartsStagingAndReasons) {
  Kernel mm = matmul(500);
  Schedule s = parseOk("i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 16; k: serial, unroll 16; shared: a, b; buffers: 2");
  SchedulePlan sp = planSchedule(mm, s);
  ASSERT_TRUE(sp.ok()) << joined(sp.reasons);
  ASSERT_EQ(sp.nests.size(), 1u);
  const NestPlan& p = sp.nests[0];
  EXPECT_EQ(p.launch.grid[0], 32);  // ceil(500 / 16)
  EXPECT_EQ(p.launch.grid[1], 8);   // ceil(500 / 64)
  EXPECT_EQ(p.launch.block[0], 16);
  EXPECT_EQ(p.launch.block[1], 16);
  EXPECT_EQ(p.launch.threads, 256);
  EXPECT_EQ(p.launch.blocks, 256);
  EXPECT_EQ(p.launch.regPoints, 4);
  EXPECT_EQ(p.launch.threadXIndex, "j");
  const IndexPlan* i = p.index("i");
  ASSERT_NE(i, nullptr);
  EXPECT_EQ(i->extents, (std::vector<int64_t>{8, 16, 4}));
  EXPECT_EQ(i->strides, (std::vector<int64_t>{64, 4, 1}));
  EXPECT_FALSE(i->exact);  // 512 points for 500 values: guarded
  ASSERT_EQ(p.staging.arrays.size(), 2u);
  EXPECT_EQ(p.staging.arrays[0].buffers, 2);
  EXPECT_EQ(p.groups.size(), 1u);
  EXPECT_FALSE(p.crossBlock.any());
  EXPECT_FALSE(p.pipeline.any());  // several steps: the buffers pipeline the steps, not positions
  EXPECT_EQ(p.sharedBytes, p.staging.bytes);
  EXPECT_FALSE(p.dynamicShared);
  EXPECT_TRUE(p.cooperative);  // staged: every thread reaches the barriers
  EXPECT_FALSE(planSchedule(mm, defaultSchedule(mm)).nests.at(0).cooperative);

  // A reduction split across threads declares a combine buffer beside the tiles.
  SchedulePlan split = planSchedule(dot(1000), parseOk("i: serial, thread.x 256"));
  ASSERT_TRUE(split.ok()) << joined(split.reasons);
  EXPECT_EQ(split.nests[0].launch.lanes, 256);
  EXPECT_EQ(split.nests[0].sharedBytes, 256 * 4);
  EXPECT_TRUE(split.nests[0].cooperative);

  // Rejected: no plan, and exactly validateSchedule's reasons.
  Schedule bad = parseOk("i: grid.x, thread.x 2048; j: grid.y; k: serial, reg 4");
  SchedulePlan none = planSchedule(mm, bad);
  EXPECT_FALSE(none.ok());
  EXPECT_TRUE(none.nests.empty());
  EXPECT_EQ(none.reasons, validateSchedule(mm, bad));
  EXPECT_TRUE(hasReason(none.reasons, "2048 threads on thread.x (at most 1024)")) << joined(none.reasons);
  NestPlanResult r = planNest(mm, 0, bad.nests[0]);
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.reasons, none.reasons);
}

// The clause table: every row prints and parses back away from its default, and the parser names
// every clause it knows when it expects one.
TEST(Schedule, ClauseTableDrivesPrintingAndParsing) {
  for (const ClauseRow& row : clauseTable()) {
    NestSchedule ns = parseOk("i: grid.x, thread.x 32; k: serial; shared: a").nests[0];
    EXPECT_TRUE(row.kind == ClauseKind::Arrays || clauseAtDefault(row, ns)) << row.name;
    switch (row.kind) {
      case ClauseKind::Arrays:  // `shared: a` above; another row of arrays names one too
        if ((ns.*row.arrays).empty()) (ns.*row.arrays).push_back("a");
        break;
      case ClauseKind::ArrayFlag: (ns.*row.arrays).push_back("a"); break;
      case ClauseKind::Number: ns.*row.number = row.max; break;
      case ClauseKind::Keyword: ns.*row.flag = true; break;
      case ClauseKind::Mma: ns.*row.mma = MmaSchedule{MmaArith::Tf32x3, 2, 4, 4, 2, 32}; break;
      case ClauseKind::Scan: ns.*row.scan = ScanSchedule{ScanSchedule::Kind::Lines, 128, 4, 8}; break;
      case ClauseKind::Accumulate: ns.*row.accumulate = AccumulateSchedule{true, 4, 8}; break;
    }
    EXPECT_FALSE(clauseAtDefault(row, ns)) << row.name;
    std::string text = printNestSchedule(ns);
    auto again = parseSchedule(text);
    ASSERT_TRUE(again.ok()) << text << ": " << again.error;
    EXPECT_EQ(again.schedule->nests[0], ns) << text;
    if (row.kind != ClauseKind::ArrayFlag) {
      EXPECT_NE(text.find(std::string(row.name) + ": "), std::string::npos) << text;
      auto missing = parseSchedule("i: serial; ;");
      EXPECT_NE(missing.error.find(std::string("'") + row.name + "'"), std::string::npos) << missing.error;
    }
  }
}

// `stores: streaming` round-trips (`stores: cached` is the default, not printed), and the plan
// streams the stores of outputs that no other statement of the nest reads; a nest whose every
// stored array is read back by another statement has no plan.
TEST(Schedule, StreamingStores) {
  Diagnostics diags;
  const std::string source =
      "kernel st(n: int, x: f32[n], inout y: f32[n], out z: f32[n], inout u: f32[n], inout v: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    y[i] = y[i] + x[i];\n"
      "    z[i] = y[i] * 2.0;\n"
      "  }\n"
      "  for i in 0..n {\n"
      "    u[i] = x[i];\n"
      "    v[i] = u[i];\n"
      "    u[i] = v[i] + 1.0;\n"
      "  }\n"
      "}\n";
  auto prog = parseProgram("st.rtcg", source, diags);
  ASSERT_TRUE(prog) << diags.render("st.rtcg", source);
  auto k = bindSizes(prog->kernels[0], {{"n", 100}}, diags);
  ASSERT_TRUE(k);
  const std::string text = "i: grid.x, thread.x 32; stores: streaming | i: grid.x, thread.x 32";
  Schedule s = parseOk(text);
  EXPECT_TRUE(s.nests[0].streamingStores);
  EXPECT_EQ(printSchedule(s), text);
  EXPECT_FALSE(parseOk("i: serial; stores: cached").nests[0].streamingStores);
  EXPECT_EQ(printSchedule(parseOk("i: serial; stores: cached")), "i: serial");
  SchedulePlan plan = planSchedule(*k, s);
  ASSERT_TRUE(plan.ok()) << joined(plan.reasons);
  EXPECT_EQ(plan.nests[0].streamedStores, std::vector<int>{1});  // z; not y, which z's statement reads
  EXPECT_TRUE(plan.nests[0].streams(1));
  EXPECT_FALSE(plan.nests[0].streams(0));
  EXPECT_TRUE(plan.nests[1].streamedStores.empty());  // `stores: cached`
  EXPECT_NE(printPlan(*k, plan.nests[0]).find("streaming store: z (statement 1)"), std::string::npos);
  auto none = validateSchedule(*k, parseOk("i: grid.x, thread.x 32 | i: grid.x, thread.x 32; stores: streaming"));
  EXPECT_TRUE(hasReason(none, "nest 1: 'stores: streaming' streams the stores of outputs that no other statement "
                              "of the nest reads, but every array this nest stores is read back in it"))
      << joined(none);
}

// A reg part on a reduction index: the register tile of an outer reduction (OuterTile), and the
// reasons where none can be emitted.
TEST(Schedule, OuterRegisterTiles) {
  Diagnostics diags;
  const std::string source =
      "kernel nd(n: int, m: int, D: int, q: f32[n, D], r: f32[m, D], out d: f32[n], out c: f32[n]) {\n"
      "  for i in 0..n {\n"
      "    d[i] = min(j in 0..m, sum(e in 0..D, (q[i, e] - r[j, e]) * (q[i, e] - r[j, e])));\n"
      "    c[i] = max(j in 0..m, sum(e in 0..j, q[i, e] * r[j, e]));\n"
      "  }\n"
      "  for i in 0..n { d[i] = d[i] + max(j in 0..m, sum(e in 0..D, q[i, e] * r[j, e])); }\n"
      "}\n";
  auto prog = parseProgram("nd.rtcg", source, diags);
  ASSERT_TRUE(prog) << diags.render("nd.rtcg", source);
  auto k = bindSizes(prog->kernels[0], {{"n", 1001}, {"m", 777}, {"D", 13}}, diags);
  ASSERT_TRUE(k);
  const std::string second = " | i: grid.x, thread.x 32; j: serial; e: serial";
  struct Case {
    const char* text;
    const char* reason;
  } cases[] = {
      {"i: grid.x, thread.x 32; j: serial, reg 4; e: serial", "the reduction over 'e' nested in the reduction over 'j' has bounds that depend on 'j'"},
      {"i: grid.x, thread.x 32; j: serial; e: serial, reg 4", "a reduction over it is computed inside a statement"},
      {"i: grid.x, thread.x 32; j: serial, reg 2, reg 2; e: serial", "reduction index 'j' has two reg parts"},
      {"i: grid.x, thread.x 32; j: grid.y, reg 4; e: serial", "the reg part of 'j' would be its steps (its first non-grid part)"},
      {"i: grid.x, reg 16, thread.x 8; j: serial, reg 16; e: serial", "register tile of 16 points per thread times 16 values of 'j'"},
  };
  for (const Case& c : cases) {
    auto reasons = validateSchedule(*k, parseOk(c.text + second));
    EXPECT_TRUE(hasReason(reasons, c.reason)) << c.text << "\n" << joined(reasons);
  }
  // The second nest: one outer reduction with its inner sum; the plan says so, and the schedule
  // prints and parses back.
  const std::string text = "i: grid.x, thread.x 32; j: serial; e: serial | i: grid.x, reg 2, thread.x 16; j: grid.y, serial 25, thread.y 2, reg 4; e: serial, unroll 4";
  Schedule s = parseOk(text);
  EXPECT_EQ(printSchedule(s), text);
  EXPECT_TRUE(validateSchedule(*k, s).empty()) << joined(validateSchedule(*k, s));
  NestPlanResult r = planNest(*k, 1, s.nests[1]);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.plan->outerTile.index, "j");
  EXPECT_EQ(r.plan->outerTile.extent, 4);
  EXPECT_EQ(r.plan->outerTile.part, 3u);
  ASSERT_EQ(r.plan->outerTile.inner.size(), 1u);
  EXPECT_EQ(r.plan->outerTile.inner[0][0]->loops[0].name, "e");
  EXPECT_NE(printPlan(*k, *r.plan).find("outer register tile: 4 values of 'j' per thread"), std::string::npos);
  EXPECT_FALSE(planNest(*k, 1, parseOk("i: grid.x; j: serial; e: serial").nests[0]).plan->outerTile.any());
  // Staged: q (which does not move with j) once per block, r per step of j; with j not stepped,
  // r as the usual rules say (the whole array, once per block).
  NestPlanResult staged = planNest(*k, 1, parseOk("i: grid.x, thread.x 32; j: serial, reg 4; e: serial; shared: q, r").nests[0]);
  ASSERT_TRUE(staged.ok()) << joined(staged.reasons);
  ASSERT_EQ(staged.plan->staging.arrays.size(), 2u);
  EXPECT_EQ(staged.plan->staging.arrays[0].level, StageLevel::Block);
  EXPECT_EQ(staged.plan->staging.arrays[1].level, StageLevel::Step);
  EXPECT_EQ(staged.plan->staging.arrays[1].dims[0].size, 4);
  ScheduleLimits large;
  large.maxSharedBytes = 227 * 1024;
  NestPlanResult whole = planNest(*k, 1, parseOk("i: grid.x, thread.x 32; j: serial; e: serial; shared: r").nests[0], large);
  ASSERT_TRUE(whole.ok()) << joined(whole.reasons);
  EXPECT_EQ(whole.plan->staging.arrays[0].level, StageLevel::Block);
}
