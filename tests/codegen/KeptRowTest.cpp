// Rows kept in registers across fused nests (`keep: x`, KeptRow in schedule/Plan.h): the clause's
// text, the fused code with kept rows run by host emulation against the float64 reference at sizes
// that neither the threads nor the unrolled steps divide, the reads that no longer go to memory,
// the reasons a row cannot be kept, `explain`, the cubin's registers, and the space's candidates.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/CubinInfo.h"
#include "codegen/Emitter.h"
#include "codegen/HostEmulation.h"
#include "codegen/Nvrtc.h"
#include "codegen/SourceKernels.h"
#include "schedule/Plan.h"
#include "schedule/Schedule.h"
#include "schedule/Space.h"

using namespace rtcg;
using namespace rtcg::testing;

namespace {

// The nest schedule `nest` three times, the first one fusing all three and keeping `kept`.
std::string keptThree(const std::string& nest, const std::string& kept = "x") {
  return nest + "; fuse: 3; keep: " + kept + " | " + nest + " | " + nest;
}

std::string reasonsOf(const Kernel& k, const std::string& schedule) {
  ScheduleParseResult r = parseSchedule(schedule);
  EXPECT_TRUE(r.ok()) << r.error;
  std::string all;
  for (const std::string& m : validateSchedule(k, *r.schedule)) all += m + "\n";
  return all;
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(KeptRow, ClausePrintsAndParsesBack) {
  const std::string text = keptThree("i: grid.x; j: serial, unroll 4, thread.x 256");
  ScheduleParseResult r = parseSchedule(text);
  ASSERT_TRUE(r.ok()) << r.error;
  EXPECT_EQ(r.schedule->nests[0].kept, std::vector<std::string>{"x"});
  EXPECT_TRUE(r.schedule->nests[1].kept.empty());
  EXPECT_EQ(printSchedule(*r.schedule), text);
  // Beside a staged array marked transposed, the kept name prints without the mark.
  ScheduleParseResult both = parseSchedule("i: grid.x; j: serial; shared: x^T; keep: x");
  ASSERT_TRUE(both.ok()) << both.error;
  EXPECT_EQ(printNestSchedule(both.schedule->nests[0]), "i: grid.x; j: serial; shared: x^T; keep: x");
  // Names only: an access or a mark is refused at its column.
  ScheduleParseResult access = parseSchedule("i: grid.x; keep: x[i,j]");
  EXPECT_FALSE(access.ok());
  EXPECT_EQ(access.column, 19);
  EXPECT_NE(access.error.find("'keep:' takes array names only"), std::string::npos) << access.error;
  ScheduleParseResult mark = parseSchedule("i: grid.x; keep: x^T");
  EXPECT_FALSE(mark.ok());
  EXPECT_EQ(mark.column, 19);
  ScheduleParseResult twice = parseSchedule("i: grid.x; keep: x, x");
  EXPECT_FALSE(twice.ok());
  EXPECT_NE(twice.error.find("'x' is listed twice in 'keep:'"), std::string::npos) << twice.error;
}

// Softmax with x kept: 1003 columns (not a multiple of 256 x 4 nor of 32 x 2), 7 rows (the last
// block of 2 rows, and of 4, has a row outside), blocks in shuffled order. Only the loading
// nest reads x from memory. (Every block runs the same code on rows of its own: seven rows check
// what 37 did, at a fifth of the emulated threads.)
TEST(KeptRow, SoftmaxMatchesTheReference) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 7}, {"n", 1003}});
  EmulationOptions o;
  o.runs = 2;
  o.blockOrder = 2;
  for (const char* nest : {"i: grid.x; j: serial, unroll 4, thread.x 256", "i: grid.x, thread.y 2; j: serial, thread.x 32, unroll 2",
                           "i: grid.x; j: serial, unroll 4, thread.x 1024", "i: grid.x, thread.y 4; j: serial, thread.x 64, serial 2"}) {
    SCOPED_TRACE(nest);
    EXPECT_EQ(checkOnHost(softmax, keptThree(nest), 1e-5, {}, o), "");
  }
  EmittedModule m = emitCuda(softmax, *parseSchedule(keptThree("i: grid.x; j: serial, unroll 4, thread.x 256")).schedule);
  EXPECT_NE(m.source.find("float x_kept[4];"), std::string::npos) << m.source;
  EXPECT_EQ(count(m.source, "x[i * 1003 + j]"), 1u) << m.source;  // the one load, in nest 0
  EXPECT_EQ(m.source.find("#pragma unroll 1"), std::string::npos) << m.source;  // slots are constants
}

TEST(KeptRow, LayernormMatchesTheReference) {
  Kernel layernorm = exampleKernel("layernorm.rtcg", "layernorm", {{"m", 29}, {"n", 1003}});
  EmulationOptions o;
  o.blockOrder = 1;
  EXPECT_EQ(checkOnHost(layernorm, keptThree("i: grid.x; j: serial, unroll 4, thread.x 256"), 1e-5, {}, o), "");
  EXPECT_EQ(checkOnHost(layernorm, keptThree("i: grid.x, thread.y 8; j: serial, unroll 4, thread.x 32"), 1e-5, {}, o), "");
  // A thread's 4 neighbouring values (vector loads where aligned), the output streamed.
  const std::string n = "i: grid.x, thread.y 2; j: serial, thread.x 64, unroll 4";
  EXPECT_EQ(checkOnHost(layernorm, n + "; fuse: 3; keep: x | " + n + " | " + n + "; stores: streaming", 1e-5, {}, o), "");
}

// Two of three nests fused and x kept between them: nest 0 runs alone and reads x itself.
TEST(KeptRow, PartOfTheNestsFused) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 301}});
  const std::string s = "i: grid.x, thread.x 32; j: serial | i: grid.x; j: serial, unroll 2, thread.x 64; fuse: 2; "
                        "keep: x | i: grid.x; j: serial, unroll 2, thread.x 64";
  EXPECT_EQ(checkOnHost(softmax, s), "");
  EmittedModule m = emitCuda(softmax, *parseSchedule(s).schedule);
  ASSERT_EQ(m.launches.size(), 2u);
  EXPECT_NE(m.source.find("float x_kept[6];"), std::string::npos) << m.source;
}

TEST(KeptRow, RowsThatCannotBeKeptAreRefusedWithTheReason) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 16384}});
  // The mapping of j differs between nests (the same block): each thread would need other values.
  EXPECT_NE(reasonsOf(softmax, "i: grid.x; j: serial, unroll 4, thread.x 256; fuse: 3; keep: x | "
                               "i: grid.x; j: serial, unroll 4, thread.x 256 | i: grid.x; j: serial, unroll 2, thread.x 256")
                .find("nest 0: fuse: 3: keep: x: nest 2 maps 'j' as 'j: serial, unroll 2, thread.x 256', nest 0 as "
                      "'j: serial, unroll 4, thread.x 256'"),
            std::string::npos);
  // 16384 values over 128 threads: 128 a thread, past the cap.
  EXPECT_NE(reasonsOf(softmax, keptThree("i: grid.x; j: serial, unroll 4, thread.x 128"))
                .find("each thread would hold 128 values of 'x' ('j: serial, unroll 4, thread.x 128'), more than the "
                      "64 a kept row may take with 128 threads per block"),
            std::string::npos);
  // 64 values on 256 threads is the cap; 1024 threads leave a thread 64 registers: at most 32 kept
  // values (40000 columns: 40 a thread).
  EXPECT_EQ(reasonsOf(softmax, keptThree("i: grid.x; j: serial, unroll 4, thread.x 256")), "");
  Kernel wide = exampleKernel("softmax.rtcg", "softmax", {{"m", 3}, {"n", 40000}});
  EXPECT_NE(reasonsOf(wide, keptThree("i: grid.x; j: serial, unroll 4, thread.x 1024"))
                .find("each thread would hold 40 values of 'x' ('j: serial, unroll 4, thread.x 1024'), more than the "
                      "32 a kept row may take with 1024 threads per block"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, "i: grid.x; j: serial, thread.x 256; keep: x | i: grid.x; j: serial | i: grid.x; j: serial")
                .find("nest 0: keep: needs fuse: on the same nest"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, keptThree("i: grid.x; j: serial, thread.x 256", "rowmax"))
                .find("keep: rowmax: nest 0 writes 'rowmax'"),
            std::string::npos);
  EXPECT_NE(reasonsOf(softmax, keptThree("i: grid.x; j: serial, thread.x 256", "q")).find("'q' is not an array"),
            std::string::npos);
  Kernel layernorm = exampleKernel("layernorm.rtcg", "layernorm", {{"m", 37}, {"n", 300}});
  EXPECT_NE(reasonsOf(layernorm, keptThree("i: grid.x; j: serial, thread.x 256", "gamma"))
                .find("1 of the fused nests reads 'gamma'"),
            std::string::npos);
  // Two rows a thread (a serial part of the shared index): a thread would need two rows.
  EXPECT_NE(reasonsOf(softmax, keptThree("i: grid.x, serial 2; j: serial, unroll 4, thread.x 1024"))
                .find("the shared index 'i' has a serial part"),
            std::string::npos);
  // The same with the row not kept is legal.
  EXPECT_EQ(reasonsOf(softmax, "i: grid.x; j: serial, unroll 4, thread.x 256; fuse: 3 | i: grid.x; j: serial, unroll "
                               "4, thread.x 256 | i: grid.x; j: serial, unroll 2, thread.x 256"),
            "");
}

TEST(KeptRow, PlanInWords) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 37}, {"n", 1003}});
  SchedulePlan plan = planSchedule(softmax, *parseSchedule(keptThree("i: grid.x; j: serial, unroll 4, thread.x 256")).schedule);
  ASSERT_TRUE(plan.ok()) << plan.reasons[0];
  ASSERT_EQ(plan.fusions.size(), 1u);
  EXPECT_NE(printFusion(softmax, plan.fusions[0])
                .find("kept row: x[i,j] in registers, 4 values of 'j' per thread ('j: serial, unroll 4, thread.x "
                      "256'), loaded by nest 0, read by nests 0, 1, 2\n"),
            std::string::npos)
      << printFusion(softmax, plan.fusions[0]);
}

// Softmax 2048 x 16384 on 1024 threads keeps 16 values a thread, in registers: NVRTC's cubin has no
// local memory, and the row is loaded once (16 global loads in the PTX, not one per nest).
TEST(KeptRow, SixteenValuesStayInRegisters) {
  Kernel softmax = exampleKernel("softmax.rtcg", "softmax", {{"m", 2048}, {"n", 16384}});
  EmittedModule m = emitCuda(softmax, *parseSchedule(keptThree("i: grid.x; j: serial, unroll 4, thread.x 1024")).schedule);
  EXPECT_NE(m.source.find("float x_kept[16];"), std::string::npos);
  CudaCompileResult r = compileCuda(m.source, "softmax.cu", "sm_90", {}, true);
  ASSERT_TRUE(r.success) << r.log;
  std::vector<KernelResources> res = resourcesFromCubin(std::string_view(r.cubin.data(), r.cubin.size()));
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].localBytes, 0);
  EXPECT_LE(res[0].registers, 64);  // 1024 threads a block
  EXPECT_EQ(count(r.ptx, "ld.global"), 16u);
  EXPECT_EQ(count(r.ptx, ".local"), 0u);
}

// The space offers kept candidates beside the fused ones, each legal, and the model ranks one
// first where a row can be kept.
TEST(KeptRow, SpaceOffersAndRanksKeptRows) {
  for (const char* file : {"softmax", "layernorm"}) {
    SCOPED_TRACE(file);
    Kernel k = exampleKernel(std::string(file) + ".rtcg", file, {{"m", 8192}, {"n", 2048}});
    Space space = enumerateSchedules(k);
    int64_t kept = 0;
    for (const Candidate& c : space.candidates)
      if (!c.schedule.nests[0].kept.empty()) {
        ++kept;
        EXPECT_TRUE(validateSchedule(k, c.schedule).empty()) << c.text;
      }
    EXPECT_GT(kept, 10);
    ASSERT_FALSE(space.candidates.empty());
    EXPECT_EQ(space.candidates[0].schedule.nests[0].kept, std::vector<std::string>{"x"}) << space.candidates[0].text;
  }
}
