// rtcgc end to end: every example through check / emit / cubin / run --cpu, the exit codes of
// docs/rtcgc.md, and that a failing command never leaves an output file behind.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "FullTests.h"
#include "Shell.h"

namespace fs = std::filesystem;

namespace {

using Result = rtcg::tests::ShellResult;

// `redirect`: where standard error goes (by default with standard output into Result::out).
Result rtcgc(const std::string& args, const char* redirect = "2>&1") {
  return rtcg::tests::shell(std::string(RTCGC_PATH) + " " + args + " " + redirect);
}

std::string example(const std::string& name) { return std::string(RTCG_SOURCE_DIR) + "/examples/" + name; }

fs::path tempDir() {
  fs::path d = fs::temp_directory_path() / ("rtcgc-test-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string writeTemp(const std::string& name, const std::string& text) {
  fs::path p = tempDir() / name;
  std::ofstream(p) << text;
  return p.string();
}

// (file, -D arguments) from examples/sizes.txt.
std::vector<std::pair<std::string, std::string>> exampleSizes() {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/examples/sizes.txt");
  std::vector<std::pair<std::string, std::string>> out;
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string file, b, defs;
    ss >> file;
    while (ss >> b) defs += " -D " + b;
    out.emplace_back(file, defs);
  }
  return out;
}

}  // namespace

TEST(Cli, VersionAndHelp) {
  Result v = rtcgc("--version");
  EXPECT_EQ(v.code, 0);
  EXPECT_NE(v.out.find("rtcgc 0."), std::string::npos) << v.out;
  Result h = rtcgc("--help");
  EXPECT_EQ(h.code, 0);
  for (const char* cmd : {"check", "emit", "run", "ir", "devices"}) EXPECT_NE(h.out.find(cmd), std::string::npos) << cmd;
  EXPECT_NE(h.out.find("Exit codes"), std::string::npos);
}

TEST(Cli, EveryExampleChecksEmitsCompilesAndRunsOnTheCpu) {
  auto sizes = exampleSizes();
  ASSERT_GE(sizes.size(), 10u);
  fs::path dir = tempDir();
  for (const auto& [file, defs] : sizes) {
    SCOPED_TRACE(file);
    Result c = rtcgc("check " + example(file) + defs);
    EXPECT_EQ(c.code, 0) << c.out;
    // All proved, or (indirect indices, ranges that read arrays) what could be analysed, saying so.
    const bool warned = c.out.find("warning: ") != std::string::npos;
    EXPECT_NE(c.out.find(warned ? "rtcg could analyse is proved" : "every access is in bounds, no nest races and "
                                                                     "every element of its out arrays is written"),
              std::string::npos)
        << c.out;

    fs::path cu = dir / (file + ".cu"), cubin = dir / (file + ".cubin");
    Result e = rtcgc("emit " + example(file) + defs + " -o " + cu.string());
    ASSERT_EQ(e.code, 0) << e.out;
    std::ifstream src(cu);
    std::string text((std::istreambuf_iterator<char>(src)), {});
    EXPECT_NE(text.find("extern \"C\" __global__"), std::string::npos);
    EXPECT_NE(text.find("// Schedule: "), std::string::npos);

    Result b = rtcgc("emit " + example(file) + defs + " --cubin --nvrtc-log -o " + cubin.string());
    ASSERT_EQ(b.code, 0) << b.out;
    EXPECT_EQ(b.out.find("warning #"), std::string::npos) << "generated code should compile cleanly:\n" << b.out;
    EXPECT_GT(fs::file_size(cubin), 1000u);
    EXPECT_NE(b.out.find("registers"), std::string::npos) << b.out;
    std::ifstream bin(cubin, std::ios::binary);
    char magic[4] = {};
    bin.read(magic, 4);
    EXPECT_EQ(std::string(magic, 4), "\x7f" "ELF");

    Result r = rtcgc("run --cpu " + example(file) + defs);
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_NE(r.out.find("sum="), std::string::npos) << r.out;
  }
}

TEST(Cli, PtxAndArchitectures) {
  Result p = rtcgc("emit " + example("axpby.rtcg") + " -D n=1000 --ptx --arch compute_80");
  EXPECT_EQ(p.code, 0) << p.out;
  EXPECT_NE(p.out.find(".target sm_80"), std::string::npos) << p.out.substr(0, 400);
  Result bad = rtcgc("emit " + example("axpby.rtcg") + " -D n=1000 --ptx --arch banana");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("bad architecture 'banana'"), std::string::npos) << bad.out;
}

TEST(Cli, CpuRunIsDeterministicPerSeed) {
  Result a = rtcgc("run --cpu " + example("gemv.rtcg") + " -D m=100 -D n=70 --seed 7");
  Result b = rtcgc("run --cpu " + example("gemv.rtcg") + " -D m=100 -D n=70 --seed 7");
  Result c = rtcgc("run --cpu " + example("gemv.rtcg") + " -D m=100 -D n=70 --seed 8");
  ASSERT_EQ(a.code, 0) << a.out;
  auto checksumLine = [](const std::string& s) { return s.substr(s.find("y: ")); };
  EXPECT_EQ(checksumLine(a.out), checksumLine(b.out));
  EXPECT_NE(checksumLine(a.out), checksumLine(c.out));
}

TEST(Cli, RunReferenceSamplingOptions) {
  // GPU runs verify kernels over --reference-max-flops against a sampled reference (as tune
  // does); the option takes a non-negative number and excludes --full-reference.
  std::string file = example("matmul.rtcg") + " -D n=64";
  Result negative = rtcgc("run " + file + " --reference-max-flops -1");
  EXPECT_EQ(negative.code, 2) << negative.out;
  Result both = rtcgc("run " + file + " --reference-max-flops 1e6 --full-reference");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_NE(both.out.find("excludes"), std::string::npos) << both.out;
  Result help = rtcgc("run --help");
  EXPECT_NE(help.out.find("--reference-max-flops"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--full-reference"), std::string::npos) << help.out;
}

TEST(Cli, ScalarsCanBeSet) {
  Result r = rtcgc("run --cpu " + example("axpby.rtcg") + " -D n=10 -S a=0 -S b=0");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("sum=0 sumsq=0 n=10"), std::string::npos) << r.out;
  Result bad = rtcgc("run --cpu " + example("axpby.rtcg") + " -D n=10 -S q=1");
  EXPECT_EQ(bad.code, 2) << bad.out;
  EXPECT_NE(bad.out.find("'q' is not a scalar parameter"), std::string::npos) << bad.out;
}

TEST(Cli, SyntaxErrorExitsOneWithCaretAndWritesNothing) {
  std::string f = writeTemp("bad.rtcg", "kernel k(n: int, out a: f32[n]) {\n  for i in 0..n {\n    a[i] = 1.0\n  }\n}\n");
  fs::path out = tempDir() / "bad.cu";
  Result r = rtcgc("emit " + f + " -D n=4 -o " + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("bad.rtcg:3:15: error: expected ';'"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("^"), std::string::npos) << r.out;
  EXPECT_FALSE(fs::exists(out));
  for (const auto& entry : fs::directory_iterator(tempDir()))
    EXPECT_EQ(entry.path().filename().string().rfind(".bad.cu", 0), std::string::npos) << "temporary left behind";
}

TEST(Cli, OutOfBoundsAccessIsAnErrorOnlyOnceSizesAreBound) {
  std::string f = writeTemp("oob.rtcg",
                            "kernel shift(n: int, a: f32[n], out b: f32[n]) {\n"
                            "  for i in 0..n {\n"
                            "    b[i] = a[i + 1];\n"
                            "  }\n"
                            "}\n");
  Result unbound = rtcgc("check " + f);
  EXPECT_EQ(unbound.code, 0) << unbound.out;
  Result bound = rtcgc("check " + f + " -D n=100");
  EXPECT_EQ(bound.code, 1) << bound.out;
  EXPECT_NE(bound.out.find("oob.rtcg:3:12: error:"), std::string::npos) << bound.out;
  EXPECT_NE(bound.out.find("100"), std::string::npos) << bound.out;
}

TEST(Cli, RaceIsAnError) {
  std::string f = writeTemp("race.rtcg",
                            "kernel rowsum(n: int, a: f32[n, n], out s: f32[n]) {\n"
                            "  for i in 0..n, j in 0..n {\n"
                            "    s[i] = a[i, j];\n"
                            "  }\n"
                            "}\n");
  Result r = rtcgc("check " + f + " -D n=8");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("race.rtcg:3:5: error:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("'j'"), std::string::npos) << r.out;
}

TEST(Cli, SizeBindingErrors) {
  Result missing = rtcgc("emit " + example("matmul.rtcg"));
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("-D n="), std::string::npos) << missing.out;
  Result unknown = rtcgc("emit " + example("matmul.rtcg") + " -D n=4 -D m=3");
  EXPECT_EQ(unknown.code, 1) << unknown.out;
  EXPECT_NE(unknown.out.find("'m'"), std::string::npos) << unknown.out;
  Result malformed = rtcgc("emit " + example("matmul.rtcg") + " -D n=four");
  EXPECT_EQ(malformed.code, 2) << malformed.out;
  EXPECT_NE(malformed.out.find("NAME=INTEGER"), std::string::npos) << malformed.out;
  Result twice = rtcgc("emit " + example("matmul.rtcg") + " -D n=4 -D n=5");
  EXPECT_EQ(twice.code, 2) << twice.out;
}

TEST(Cli, ScheduleErrorsAndHandWrittenSchedules) {
  std::string mm = example("matmul.rtcg") + " -D n=100";
  Result ok = rtcgc("emit " + mm + " --cubin -o " + (tempDir() / "tiled.cubin").string() +
                    " --schedule 'i: grid.y, thread.y 8, reg 4; j: grid.x, thread.x 32, reg 2; k: serial, unroll 4'");
  EXPECT_EQ(ok.code, 0) << ok.out;
  Result syntax = rtcgc("emit " + mm + " --schedule 'i: grid.y, thread.y; j: grid.x'");
  EXPECT_EQ(syntax.code, 1) << syntax.out;
  EXPECT_NE(syntax.out.find("bad schedule at column"), std::string::npos) << syntax.out;
  Result illegal = rtcgc("emit " + mm + " --schedule 'i: grid.x; j: grid.x, thread.x 32; k: serial'");
  EXPECT_EQ(illegal.code, 1) << illegal.out;
  EXPECT_NE(illegal.out.find("illegal schedule"), std::string::npos) << illegal.out;
}

TEST(Cli, LargeTilesNeedTheSharedMemoryLimitRaised) {
  // 84 KiB of staged tiles: over the default 48 KiB, within sm_90's opt-in limit (dynamic shared
  // memory), which `rtcgc run` and the tuner take from the device.
  std::string dg = example("dg_diff.rtcg") + " -D K=1000 -D Np=84 --schedule "
                   "'k: grid.x, thread.y 4; i: serial, thread.x 84; j: serial, unroll 4; shared: Dr, Ds, Dt, u'";
  Result over = rtcgc("emit " + dg);
  EXPECT_EQ(over.code, 1) << over.out;
  EXPECT_NE(over.out.find("staging needs 84736 bytes of shared memory (at most 49152)"), std::string::npos) << over.out;
  Result raised = rtcgc("emit " + dg + " --max-shared 232448 --cubin -o " + (tempDir() / "large.cubin").string());
  EXPECT_EQ(raised.code, 0) << raised.out;
  Result source = rtcgc("emit " + dg + " --max-shared 232448");
  EXPECT_NE(source.out.find("extern __shared__"), std::string::npos) << source.out;
  EXPECT_EQ(rtcgc("emit " + dg + " --max-shared 0").code, 2);
}

// docs/rtcgc.md, tune, "Triangles": trmv's rows split across threads (no "split reductions not
// offered"); `explain` of a split row and of a register tile over rows; the reasons for what is not
// offered (one array read as two tiles).
TEST(Cli, TriangularRangesAndDomains) {
  Result r = rtcgc("tune " + example("trmv.rtcg") + " -D n=3001 --dry-run");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out.find("split reductions not offered"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("i: grid.x, thread.y 8; j: serial, thread.x 32\n"), std::string::npos) << r.out;
  Result rows = rtcgc("explain " + example("trmv.rtcg") + " -D n=3001 --schedule 'i: grid.x, thread.y 8; j: serial, thread.x 32'");
  EXPECT_EQ(rows.code, 0) << rows.out;
  EXPECT_NE(rows.out.find("  reduction j [0, 3000]: serial 94, thread.x 32 (a range that follows other indices: the first "
                          "part's trips from its bounds at run time)\n"),
            std::string::npos)
      << rows.out;
  Result reg = rtcgc("explain " + example("trmv.rtcg") + " -D n=3001 --schedule 'i: grid.x, reg 2, thread.y 4; j: serial, thread.x 32'");
  EXPECT_EQ(reg.code, 0) << reg.out;
  Result two = rtcgc("explain " + example("syrk.rtcg") + " -D n=1000 -D K=300 --schedule "
                     "'i: grid.y, thread.y 16; j: grid.x, thread.x 16; k: serial, unroll 8; shared: a'");
  EXPECT_EQ(two.code, 1) << two.out;
  EXPECT_NE(two.out.find("its accesses move differently with the loop indices"), std::string::npos) << two.out;
}

// docs/rtcgc.md, tune, "Cyclic rows": trmv n=8192's dry-run has the model's balance column, ranks
// consecutive rows first and offers cyclic ones, `explain` prints a cyclic row's index, and a
// rectangular kernel's dry-run has no balance column.
TEST(Cli, CyclicRows) {
  Result r = rtcgc("tune " + example("trmv.rtcg") + " -D n=8192 --dry-run");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find(" rank    model us  threads    blocks  tile   shared    occ    bal  schedule\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("    1        71.5      128      2048     1        0   100%   100%  i: grid.x, thread.y 4; "
                       "j: serial, thread.x 32, unroll 4\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("   12        73.7     1024       264     1        0   100%    88%  i: serial, grid.x 264, thread.y 8; "
                       "j: serial, thread.x 128\n"),
            std::string::npos)
      << r.out;
  Result e = rtcgc("explain " + example("trmv.rtcg") +
                   " -D n=8192 -s 'i: serial, grid.x 1056; j: serial, unroll 2, thread.x 256, unroll 4'");
  EXPECT_EQ(e.code, 0) << e.out;
  EXPECT_NE(e.out.find("  parallel i [0, 8191]: serial 8, grid.x 1056 (8448 points, guarded)\n    i = 1056 * i_0 + blockIdx.x\n"),
            std::string::npos)
      << e.out;
  Result square = rtcgc("tune " + example("gemv.rtcg") + " -D m=2000 -D n=1500 --dry-run");
  EXPECT_EQ(square.code, 0) << square.out;
  EXPECT_EQ(square.out.find("bal"), std::string::npos) << square.out;
}

// docs/rtcgc.md, tune, "Triangles": tiles staged per step along a varying range step over the
// block's hull of its threads' ranges (explain, whole, for trmm's matrix-product schedule); the
// dry run offers such staged candidates; the reasons where a block cannot share the steps.
TEST(Cli, StagedStepsOverTheBlockHull) {
  const std::string schedule = "i: grid.y, thread.y 16, reg 4; j: grid.x, reg 4, thread.x 16; k: serial, unroll 8; "
                               "shared: a^T, b";
  Result e = rtcgc("explain " + example("trmm.rtcg") + " -D n=131 --schedule '" + schedule + "'");
  EXPECT_EQ(e.code, 0) << e.out;
  EXPECT_EQ(e.out,
            "kernel trmm (n=131) for sm_90, schedule: " + schedule + "\n"
            "nest 0: " + schedule + "\n"
            "  launch: grid 3 x 3 x 1 (9 blocks), block 16 x 16 x 1 (256 threads), 16 register points per thread\n"
            "  parallel i [0, 130]: grid.y 3, thread.y 16, reg 4 (192 points, guarded)\n"
            "    i = 64 * blockIdx.y + 4 * threadIdx.y + i_2\n"
            "  parallel j [0, 130]: grid.x 3, reg 4, thread.x 16 (192 points, guarded)\n"
            "    j = 64 * blockIdx.x + 16 * j_1 + threadIdx.x\n"
            "  reduction k [0, 130]: serial 17, unroll 8 (a range that follows other indices: the first part's trips "
            "from its bounds at run time)\n"
            "    k = 8 * k_0 + k_1\n"
            "  reduction group 0: 1 reduction over k, computed ahead of the statements\n"
            "  shared a^T: per step of reduction group 0, box [i : 64, step : 8]\n"
            "    stored dimensions 1, 0 (outermost first), padded 68 x 8, pitches 1, 68; 544 elements x 1 buffer = 2176 "
            "bytes\n"
            "  shared b: per step of reduction group 0, box [step : 8, j : 64]\n"
            "    stored dimensions 0, 1 (outermost first), padded 8 x 68, pitches 68, 1; 544 elements x 1 buffer = 2176 "
            "bytes\n"
            "  steps of reduction group 0 along 'k': over the block's hull of its threads' ranges, lo in [0, 0], hi in "
            "[base_i + 1, base_i + 64] over the block (base: the block's first value of each parallel index), clamped "
            "to [0, 131]; a step inside every thread's range runs unguarded, the others check each thread's own\n"
            "  copies: through registers, 1 buffer\n"
            "  shared memory: 4352 bytes (4352 of tiles, 0 besides), static\n");
  Result r = rtcgc("tune " + example("trmm.rtcg") + " -D n=2048 --dry-run");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("k: serial, unroll 8; shared: a^T, b\n"), std::string::npos) << r.out;
  Result splitK = rtcgc("explain " + example("trmm.rtcg") + " -D n=131 --schedule "
                        "'i: grid.y, thread.y 8; j: grid.x, thread.x 8; k: grid.z, serial 2, unroll 4; shared: b'");
  EXPECT_EQ(splitK.code, 1) << splitK.out;
  EXPECT_NE(splitK.out.find("array 'b' cannot be staged in shared memory: the reduction index 'k' it would be staged "
                            "along has bounds that vary with other indices, and 'k' has a grid.z part"),
            std::string::npos)
      << splitK.out;
}

// A kernel of several nests: its kept candidates combine the nests' schedules, so they may
// outnumber the schedules enumerated nest by nest; the space's line says which count is which
// (softmax at 3001 x 1000: tens of thousands kept from a few thousand a nest).
TEST(Cli, TuneDryRunOfSeveralNestsSaysTheKeptCombineThem) {
  Result r = rtcgc("tune " + example("softmax.rtcg") + " -D m=3001 -D n=1000 --dry-run --max-candidates 4");
  EXPECT_EQ(r.code, 0) << r.out;
  const std::regex line(R"(space of softmax on an sm_90 model \(227 KiB shared per block at most\): (\d+) schedules of its 3 )"
                        R"(nests enumerated, (\d+) candidates kept \(the nests' schedules combined, and fused launches\), \d+ pruned)");
  std::smatch m;
  ASSERT_TRUE(std::regex_search(r.out, m, line)) << r.out;
  EXPECT_GT(std::stoll(m[2]), std::stoll(m[1])) << r.out;
  // One nest keeps the short form, where kept never passes enumerated.
  Result one = rtcgc("tune " + example("matmul.rtcg") + " -D n=500 --dry-run --max-candidates 4");
  const std::regex single(R"(: (\d+) enumerated, (\d+) kept, \d+ pruned\n)");
  ASSERT_TRUE(std::regex_search(one.out, m, single)) << one.out;
  EXPECT_LE(std::stoll(m[2]), std::stoll(m[1])) << one.out;
}

TEST(Cli, TuneDryRunListsWhatTheSearchWouldTake) {
  // No GPU needed: the space on the sm_90 model, and the sample the search would measure: of a
  // budget of 12, 8 sampled up front and 4 left for refinement rounds, as the tuner splits it.
  Result r = rtcgc("tune " + example("dg_lift.rtcg") + " -D K=340630 -D Np=56 -D Nfp=21 --dry-run --max-candidates 12");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("space of dg_lift on an sm_90 model (227 KiB shared per block at most)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pruned"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("the search would take 8 candidates (--max-candidates 12, seed 1), then up to 4 more in "
                       "refinement rounds"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("\n    8  "), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("\n    9  "), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("loads: early"), std::string::npos) << r.out;  // a family the sample always covers
  Result json = rtcgc("tune " + example("matmul.rtcg") + " -D n=500 --dry-run --max-candidates 5 --json");
  EXPECT_EQ(json.code, 0) << json.out;
  EXPECT_NE(json.out.find("\"candidates\": ["), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"predictedUs\""), std::string::npos) << json.out;
  EXPECT_NE(json.out.find("\"refinementBudget\": 0"), std::string::npos) << json.out;  // a budget under 12: none
  // The arithmetic the model divides by: an f32 kernel at the FP32 peak.
  EXPECT_NE(r.out.find("arithmetic: fp32: the model's peak is 66.9 TF/s (FP32 66.9, FP64 33.5 TF/s on this device)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(json.out.find("\"arithmetic\": \"fp32\""), std::string::npos) << json.out;
  // An integer kernel: its peak is a rate of integer operations on the SIMT cores.
  Result i8 = rtcgc("tune " + example("gemm_i8.rtcg") + " -D m=300 -D n=200 -D K=1000 --dry-run --max-candidates 3");
  EXPECT_EQ(i8.code, 0) << i8.out;
  EXPECT_NE(i8.out.find("arithmetic: integer: the model's peak is 66.9 TOPS (SIMT) (FP32 66.9, FP64 33.5 TF/s"),
            std::string::npos)
      << i8.out;
  EXPECT_EQ(rtcgc("tune --manifest x.json --dry-run").code, 2);
  EXPECT_EQ(rtcgc("tune " + example("matmul.rtcg") + " -D n=500 --dry-run --report r.html").code, 2);
  // --resume continues what a database recorded: not with no database, not in a dry run.
  Result resumeNoDb = rtcgc("tune " + example("matmul.rtcg") + " -D n=500 --resume --db -");
  EXPECT_EQ(resumeNoDb.code, 2);
  EXPECT_NE(resumeNoDb.out.find("--resume"), std::string::npos) << resumeNoDb.out;
  EXPECT_EQ(rtcgc("tune " + example("matmul.rtcg") + " -D n=500 --resume --dry-run").code, 2);
}

TEST(Cli, TuneDryRunModelsTheArchitectureAsked) {
  // --arch picks the model's device: an A100 (108 multiprocessors, 163 KiB) for sm_80, an L40S for
  // sm_89; the default stays the sm_90 model.
  std::string matmul = "tune " + example("matmul.rtcg") + " -D n=500 --dry-run --max-candidates 4";
  Result a100 = rtcgc(matmul + " --arch sm_80");
  EXPECT_EQ(a100.code, 0) << a100.out;
  EXPECT_NE(a100.out.find("space of matmul on an sm_80 model (163 KiB shared per block at most)"), std::string::npos)
      << a100.out;
  Result l40s = rtcgc(matmul + " --arch sm_89");
  EXPECT_NE(l40s.out.find("on an sm_89 model (99 KiB shared per block at most)"), std::string::npos) << l40s.out;
  EXPECT_EQ(rtcgc(matmul + " --arch sm_90").out, rtcgc(matmul).out);
  Result unknown = rtcgc(matmul + " --arch sm_75");
  EXPECT_EQ(unknown.code, 2);
  EXPECT_NE(unknown.out.find("--arch takes sm_80, sm_89, sm_90"), std::string::npos) << unknown.out;
  EXPECT_EQ(rtcgc("tune " + example("matmul.rtcg") + " -D n=500 --arch sm_80").code, 2);  // a search: its device's
}

TEST(Cli, UsageErrors) {
  EXPECT_EQ(rtcgc("").code, 2);
  EXPECT_EQ(rtcgc("frobnicate x").code, 2);
  EXPECT_EQ(rtcgc("emit").code, 2);
  Result cubin = rtcgc("emit " + example("dot.rtcg") + " -D n=10 --cubin");
  EXPECT_EQ(cubin.code, 2) << cubin.out;
  Result nofile = rtcgc("check /nonexistent/x.rtcg");
  EXPECT_EQ(nofile.code, 1) << nofile.out;
  EXPECT_NE(nofile.out.find("cannot read"), std::string::npos);
  Result several = rtcgc("check " + writeTemp("two.rtcg",
                                              "kernel a(n: int, out x: f32[n]) { for i in 0..n { x[i] = 1.0; } }\n"
                                              "kernel b(n: int, out y: f32[n]) { for i in 0..n { y[i] = 2.0; } }\n") +
                         " -D n=3");
  EXPECT_EQ(several.code, 1) << several.out;
  EXPECT_NE(several.out.find("--kernel"), std::string::npos) << several.out;
  Result both = rtcgc("tune " + example("matmul.rtcg") + " -D n=8 --full-reference --reference-max-flops 1e9");
  EXPECT_EQ(both.code, 2) << both.out;
  EXPECT_NE(both.out.find("excludes"), std::string::npos) << both.out;
  EXPECT_EQ(rtcgc("tune " + example("matmul.rtcg") + " -D n=8 --reference-max-flops -5").code, 2);
}

TEST(Cli, GpuCommandsWithoutADeviceExitFour) {
  Result d = rtcgc("devices");
  if (d.code == 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_EQ(d.code, 4) << d.out;
  EXPECT_NE(d.out.find("no CUDA"), std::string::npos) << d.out;
  Result r = rtcgc("run " + example("axpby.rtcg") + " -D n=100");
  EXPECT_EQ(r.code, 4) << r.out;
}

TEST(Cli, GpuRunMatchesTheReference) {
  if (rtcgc("devices").code != 0) GTEST_SKIP() << "no CUDA device";
  for (const auto& [file, defs] : exampleSizes()) {
    SCOPED_TRACE(file);
    Result r = rtcgc("run " + example(file) + defs + " --repeats 5");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  }
}

TEST(Cli, IrPrints) {
  Result r = rtcgc("ir " + example("matmul.rtcg") + " -D n=64");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_NE(r.out.find("matmul"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("sum"), std::string::npos) << r.out;
}

namespace {

// rtcgc's standard output alone (standard error discarded), and its exit code.
Result rtcgcStdout(const std::string& args) { return rtcgc(args, "2>/dev/null"); }

// The schedules of `rtcgc tune --dry-run --json` (the model's sample of the space, sm_90 limits).
std::vector<std::string> dryRunSchedules(const std::string& file, const std::string& defs) {
  Result r = rtcgcStdout("tune " + example(file) + defs + " --dry-run --json --max-candidates 64");
  std::vector<std::string> out;
  const std::string key = "\"schedule\": \"";
  for (size_t at = r.out.find(key); at != std::string::npos; at = r.out.find(key, at + 1)) {
    size_t from = at + key.size();
    out.push_back(r.out.substr(from, r.out.find('"', from) - from));
  }
  return out;
}

}  // namespace

// `rtcgc explain` on every example at its sizes: the default schedule, a staged schedule of the
// model's sample (else its best candidate) and one split across threads or blocks where the
// sample has one; every nest's plan is printed.
TEST(Cli, ExplainEveryExample) {
  auto sizes = exampleSizes();
  ASSERT_GE(sizes.size(), 10u);
  rtcgtest::CaseSample sample(2);
  for (const auto& [file, defs] : sizes) {
    SCOPED_TRACE(file);
    Result def = rtcgcStdout("explain " + example(file) + defs);
    EXPECT_EQ(def.code, 0) << def.out;
    EXPECT_EQ(def.out.rfind("kernel ", 0), 0u) << def.out;
    EXPECT_NE(def.out.find("nest 0: "), std::string::npos) << def.out;
    EXPECT_NE(def.out.find("  launch: grid "), std::string::npos) << def.out;
    // The dry run enumerates the space at the example's sizes (seconds each on a loaded machine):
    // by default the staged and split explains run for every other example and for dot, whose
    // reduction is split across blocks; RTCG_FULL_TESTS=1 for every example.
    if (!sample.keep() && file != "dot.rtcg") continue;
    std::vector<std::string> schedules = dryRunSchedules(file, defs);
    ASSERT_FALSE(schedules.empty());
    std::string staged = schedules.front(), split;
    for (const std::string& s : schedules)
      if (s.find("shared:") != std::string::npos) {
        staged = s;
        break;
      }
    // A reduction split across blocks: `i: serial, unroll 4, grid.x 132, thread.x 1024` (dot, gemv).
    // (Not cyclic rows, `i: serial, grid.y 50, thread.y 16`: a parallel index's serial part ahead of
    // its grid part.)
    static const std::regex acrossBlocks("(^|; )[a-z]+: serial, (unroll [0-9]+, )?grid\\.[xyz] [0-9]+, thread\\.x [0-9]+(;|$)");
    // The accumulation examples' grid-stride loops have that shape on their parallel index.
    const bool accumulates = file.rfind("histogram", 0) == 0 || file == "assemble.rtcg";
    for (const std::string& s : schedules)
      if (split.empty() && !accumulates && std::regex_search(s, acrossBlocks)) split = s;
    for (const std::string& s : {staged, split}) {
      if (s.empty()) continue;
      Result r = rtcgcStdout("explain " + example(file) + defs + " --max-shared 232448 -s '" + s + "'");
      EXPECT_EQ(r.code, 0) << s << "\n" << r.out;
      EXPECT_NE(r.out.find("schedule: " + s + "\n"), std::string::npos) << r.out;
      if (s == split) EXPECT_NE(r.out.find("\n  split across blocks: "), std::string::npos) << r.out;
      if (s.find("shared:") != std::string::npos) {
        EXPECT_NE(r.out.find("\n  shared "), std::string::npos) << r.out;
        EXPECT_NE(r.out.find("\n  shared memory: "), std::string::npos) << r.out;
      }
    }
  }
}

// The plan in words, exactly: matmul's staged 4 x 16 tile with buffers filled by cp.async.
TEST(Cli, ExplainPrintsThePlan) {
  Result r = rtcgcStdout("explain " + example("matmul.rtcg") +
                         " -D n=500 -s 'i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 16; k: serial, unroll 16; "
                         "shared: a^T, b; buffers: 3; copy: async'");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out,
            "kernel matmul (n=500) for sm_90, schedule: i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 16; k: "
            "serial, unroll 16; shared: a^T, b; buffers: 3; copy: async\n"
            "nest 0: i: grid.y, thread.y 16, reg 4; j: grid.x, thread.x 16; k: serial, unroll 16; shared: a^T, b; "
            "buffers: 3; copy: async\n"
            "  launch: grid 32 x 8 x 1 (256 blocks), block 16 x 16 x 1 (256 threads), 4 register points per thread\n"
            "  parallel i [0, 499]: grid.y 8, thread.y 16, reg 4 (512 points, guarded)\n"
            "    i = 64 * blockIdx.y + 4 * threadIdx.y + i_2\n"
            "  parallel j [0, 499]: grid.x 32, thread.x 16 (512 points, guarded)\n"
            "    j = 16 * blockIdx.x + threadIdx.x\n"
            "  reduction k [0, 499]: serial 32, unroll 16 (512 points, guarded)\n"
            "    k = 16 * k_0 + k_1\n"
            "  reduction group 0: 1 reduction over k, computed ahead of the statements\n"
            "  shared a^T: per step of reduction group 0, box [i : 64, step : 16]\n"
            "    stored dimensions 1, 0 (outermost first), padded 68 x 16, pitches 1, 68; 1088 elements x 3 buffers = "
            "13056 bytes\n"
            "  shared b: per step of reduction group 0, box [step : 16, j : 16]\n"
            "    stored dimensions 0, 1 (outermost first), padded 16 x 16, pitches 16, 1; 256 elements x 3 buffers = "
            "3072 bytes\n"
            "  copies: cp.async, 3 buffers\n"
            "  shared memory: 16128 bytes (16128 of tiles, 0 besides), static\n");
}

// A rejected schedule: its reasons on standard error, nothing on standard output, exit 1; a bad
// command line exits 2.
TEST(Cli, ExplainRejectedSchedule) {
  const std::string args = "explain " + example("matmul.rtcg") + " -D n=500 -s 'i: grid.y, thread.y 64; j: grid.x, thread.x 64; k: serial; shared: c'";
  Result out = rtcgcStdout(args);
  EXPECT_EQ(out.code, 1);
  EXPECT_EQ(out.out, "");
  Result all = rtcgc(args);
  EXPECT_EQ(all.code, 1);
  EXPECT_NE(all.out.find("illegal schedule: 4096 threads per block (at most 1024)"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("illegal schedule: array 'c' is written and cannot be staged"), std::string::npos) << all.out;
  Result syntax = rtcgc("explain " + example("matmul.rtcg") + " -D n=500 -s 'i: grid.y;;'");
  EXPECT_EQ(syntax.code, 1);
  EXPECT_NE(syntax.out.find("bad schedule at column"), std::string::npos) << syntax.out;
  EXPECT_EQ(rtcgc("explain " + example("matmul.rtcg") + " -D n=500 --arch nonsense").code, 2);
  EXPECT_EQ(rtcgc("explain").code, 2);
}

TEST(Cli, RunChecksTheRangesOfCsrOffsetsGivenAsInput) {
  // --input gives an array's values; offsets that decrease or leave the nonzeros are run-time
  // errors naming the range and the row (exit 1), before any GPU launch would read through them.
  const fs::path dir = fs::temp_directory_path() / ("rtcgc-csr-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto file = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string spmv = example("spmv.rtcg") + " -D n=4 -D nnz=6 --cpu";
  Result good = rtcgc("run " + spmv + " --input rowptr=" + file("good.txt", "0 2 2 5 6\n"));
  EXPECT_EQ(good.code, 0) << good.out;
  Result down = rtcgc("run " + spmv + " --input rowptr=" + file("down.txt", "0 3 2 5 6\n"));
  EXPECT_EQ(down.code, 1) << down.out;
  EXPECT_NE(down.out.find("the range of 'p' (rowptr[i]..rowptr[i + 1]) is decreasing (3 > 2) at i=1"),
            std::string::npos)
      << down.out;
  Result past = rtcgc("run " + spmv + " --input rowptr=" + file("past.txt", "0 2 2 5 9\n"));
  EXPECT_EQ(past.code, 1) << past.out;
  EXPECT_NE(past.out.find("is 5..9, outside [0, 6] (the extent of val, col) at i=3"), std::string::npos) << past.out;
  // Column indices past x: the indirect index is checked too.
  Result cols = rtcgc("run " + spmv + " --input rowptr=" + file("good2.txt", "0 2 2 5 6") +
                      " --input col=" + file("cols.txt", "0 1 2 3 4 0"));
  EXPECT_EQ(cols.code, 1) << cols.out;
  EXPECT_NE(cols.out.find("index 4 is out of range for dimension 0 of array 'x' (extent 4)"), std::string::npos)
      << cols.out;
  // The file must hold exactly the array's elements, as numbers; the name an input array.
  Result few = rtcgc("run " + spmv + " --input rowptr=" + file("few.txt", "0 2 2"));
  EXPECT_EQ(few.code, 1) << few.out;
  EXPECT_NE(few.out.find("'rowptr' has 5 elements, the file holds 3"), std::string::npos) << few.out;
  Result word = rtcgc("run " + spmv + " --input rowptr=" + file("word.txt", "0 2 x 5 6"));
  EXPECT_EQ(word.code, 1) << word.out;
  EXPECT_NE(word.out.find("value 3 ('x') is not an integer"), std::string::npos) << word.out;
  EXPECT_EQ(rtcgc("run " + spmv + " --input y=" + file("y.txt", "0 0 0 0")).code, 2);
  fs::remove_all(dir);
}

TEST(Cli, TuneTakesInputFilesAndChecksThemBeforeAnyGpuWork) {
  // tune --input: the same files as run's, read before the search (exit 1 naming a bad one), only
  // for in/inout arrays (exit 2), and not with --dry-run or --manifest (exit 2). A good one gets as
  // far as the device (exit 4 without one) and tunes on it.
  const fs::path dir = fs::temp_directory_path() / ("rtcgc-tune-input-" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto file = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  const std::string spmv = example("spmv.rtcg") + " -D n=4 -D nnz=6 --time-limit 1 --db - --input rowptr=";
  Result few = rtcgc("tune " + spmv + file("few.txt", "0 2 2"));
  EXPECT_EQ(few.code, 1) << few.out;
  EXPECT_NE(few.out.find("few.txt: 'rowptr' has 5 elements, the file holds 3"), std::string::npos) << few.out;
  Result missing = rtcgc("tune " + spmv + (dir / "missing.txt").string());
  EXPECT_EQ(missing.code, 1) << missing.out;
  EXPECT_NE(missing.out.find("missing.txt"), std::string::npos) << missing.out;
  Result out = rtcgc("tune " + example("spmv.rtcg") + " -D n=4 -D nnz=6 --db - --input y=" + file("y.txt", "0 0 0 0"));
  EXPECT_EQ(out.code, 2) << out.out;
  EXPECT_NE(out.out.find("expected NAME=FILE for an in or inout array of kernel 'spmv'"), std::string::npos) << out.out;
  // A kernel-local array is no input either (run and tune share the check).
  Result local = rtcgc("tune " + example("softmax.rtcg") + " -D m=3 -D n=3 --db - --input rowmax=" + file("l.txt", "0 0 0"));
  EXPECT_EQ(local.code, 2) << local.out;
  EXPECT_NE(local.out.find("expected NAME=FILE for an in or inout array of kernel 'softmax'"), std::string::npos) << local.out;
  Result twice = rtcgc("tune " + spmv + file("a.txt", "0 2 2 5 6") + " --input rowptr=" + file("b.txt", "0 2 2 5 6"));
  EXPECT_EQ(twice.code, 2) << twice.out;
  EXPECT_NE(twice.out.find("--input gives 'rowptr' twice"), std::string::npos) << twice.out;
  Result dry = rtcgc("tune " + spmv + file("c.txt", "0 2 2 5 6") + " --dry-run");
  EXPECT_EQ(dry.code, 2) << dry.out;
  EXPECT_NE(dry.out.find("a --dry-run measures nothing"), std::string::npos) << dry.out;
  Result good = rtcgc("tune " + spmv + file("good.txt", "0 2 2 5 6") + " --input col=" + file("col.txt", "0 3 0 1 2 3"));
  EXPECT_EQ(good.code, rtcgc("devices").code == 0 ? 0 : 4) << good.out;
  fs::remove_all(dir);
}

TEST(Cli, GpuCsrRowsMatchTheReference) {
  // CSR rows on the GPU at sizes no tile divides: a thread per row and groups of 4 and 32 lanes
  // per row; then offsets that decrease stop the run (exit 1) before the launch.
  if (rtcgc("devices").code != 0) GTEST_SKIP() << "no CUDA device";
  const std::string spmv = example("spmv.rtcg") + " -D n=30011 -D nnz=210013 --repeats 3";
  for (const char* schedule : {"i: grid.x, thread.x 128; p: serial", "i: grid.x, thread.y 32; p: serial, thread.x 4",
                               "i: grid.x, thread.y 8; p: serial, thread.x 32"}) {
    SCOPED_TRACE(schedule);
    Result r = rtcgc("run " + spmv + " --schedule '" + std::string(schedule) + "'");
    EXPECT_EQ(r.code, 0) << r.out;
    EXPECT_EQ(r.out.find("MISMATCH"), std::string::npos) << r.out;
  }
  Result down = rtcgc("run " + example("spmv.rtcg") + " -D n=4 -D nnz=6 --input rowptr=" +
                      writeTemp("gpu-down.txt", "0 3 2 5 6"));
  EXPECT_EQ(down.code, 1) << down.out;
  EXPECT_NE(down.out.find("is decreasing (3 > 2) at i=1"), std::string::npos) << down.out;
}

// --precision on emit, run, explain and tune: the policy decides which mma arithmetic a schedule
// may use; a policy that cannot apply is an input error with the reason, an unknown one a usage error.
TEST(Cli, PrecisionPolicy) {
  const std::string mm = example("matmul.rtcg") + " -D n=37";
  const std::string x3 = " --schedule 'mma: tf32x3 m16n8k8 warps 2x1 tile 1x2 k 8 stages 2'";
  Result refused = rtcgc("explain " + mm + x3);
  EXPECT_EQ(refused.code, 1) << refused.out;
  EXPECT_NE(refused.out.find("use --precision tf32x3"), std::string::npos) << refused.out;
  Result plan = rtcgc("explain " + mm + x3 + " --precision tf32x3");
  EXPECT_EQ(plan.code, 0) << plan.out;
  EXPECT_NE(plan.out.find("pipeline: 2 buffers filled by cp.async"), std::string::npos) << plan.out;
  Result emitted = rtcgc("emit " + mm + x3 + " --precision tf32", "2>/dev/null");
  EXPECT_EQ(emitted.code, 0);
  EXPECT_NE(emitted.out.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
  Result bogus = rtcgc("emit " + mm + " --precision fp8");
  EXPECT_EQ(bogus.code, 2) << bogus.out;
  const std::string f64 = writeTemp("dgemm.rtcg", "kernel dgemm(n: int, a: f64[n, n], b: f64[n, n], out c: f64[n, n]) {\n"
                                                  "  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }\n}\n");
  Result onF64 = rtcgc("emit " + f64 + " -D n=20 --precision tf32");
  EXPECT_EQ(onF64.code, 1) << onF64.out;
  EXPECT_NE(onF64.out.find("computes in f64 only"), std::string::npos) << onF64.out;
  Result tuneF64 = rtcgc("tune " + f64 + " -D n=20 --dry-run --precision tf32x3");
  EXPECT_EQ(tuneF64.code, 1) << tuneF64.out;
  // The dry run shows mma schedules where the policy and the types allow them.
  Result ieee = rtcgc("tune " + example("matmul.rtcg") + " -D n=512 --dry-run --max-candidates 40");
  EXPECT_EQ(ieee.out.find("mma:"), std::string::npos);
  Result tc = rtcgc("tune " + example("matmul.rtcg") + " -D n=512 --dry-run --max-candidates 40 --precision tf32x3");
  EXPECT_EQ(tc.code, 0) << tc.out;
  EXPECT_NE(tc.out.find("mma: tf32x3"), std::string::npos) << tc.out;
  // f64: on sm_90 the model ranks the m16n8k* shapes first; sm_80 has m8n8k4 only.
  Result fp64 = rtcgc("tune " + f64 + " -D n=512 --dry-run --max-candidates 40");
  EXPECT_NE(fp64.out.find("mma: f64 m16n8k"), std::string::npos) << fp64.out;
  Result fp64a100 = rtcgc("tune " + f64 + " -D n=512 --dry-run --max-candidates 40 --arch sm_80");
  EXPECT_NE(fp64a100.out.find("mma: f64 m8n8k4"), std::string::npos) << fp64a100.out;
  EXPECT_EQ(fp64a100.out.find("mma: f64 m16n8k"), std::string::npos) << fp64a100.out;
  // A target below sm_90 refuses the sm_90 shapes with the reason (exit 1); sm_90 emits them.
  const std::string dmma = " -D n=37 -s 'mma: f64 m16n8k8 warps 2x2 tile 2x2 k 16 stages 3'";
  Result old = rtcgc("emit " + f64 + dmma + " --arch sm_80");
  EXPECT_EQ(old.code, 1) << old.out;
  EXPECT_NE(old.out.find("needs sm_90 or later"), std::string::npos) << old.out;
  Result hopper = rtcgc("emit " + f64 + dmma + " --arch sm_90");
  EXPECT_EQ(hopper.code, 0) << hopper.out;
  EXPECT_NE(hopper.out.find("mma.sync.aligned.m16n8k8.row.col.f64.f64.f64.f64"), std::string::npos);
  Result explained = rtcgc("explain " + f64 + dmma + " --arch sm_80");
  EXPECT_EQ(explained.code, 1) << explained.out;
}

// --precision fp64x / fp32x: explain prints the rewritten kernel before the plans, the dry run
// offers the products' nest s8 tensor cores, and a kernel without a contraction of the policy's
// type is an input error with the reason.
TEST(Cli, OzakiPolicies) {
  const std::string f64 = example("dgemm.rtcg");
  Result ex = rtcgcStdout("explain " + f64 + " -D n=1240 --precision fp64x");
  EXPECT_EQ(ex.code, 0) << ex.out;
  EXPECT_NE(ex.out.find("precision fp64x: the f64 contractions are rewritten"), std::string::npos) << ex.out;
  EXPECT_NE(ex.out.find("for modulus in 0..14, i in 0..1240, j in 0..1240"), std::string::npos) << ex.out;
  EXPECT_NE(ex.out.find("nest 5:"), std::string::npos) << ex.out;  // scale and residues of a and b, products, c
  // Where the scheme cannot be faster (n = 300: its memory traffic alone outlasts the product on
  // FP64 tensor cores), the contraction stays as written, and explain says why.
  Result small = rtcgcStdout("explain " + f64 + " -D n=300 --precision fp64x");
  EXPECT_EQ(small.code, 0) << small.out;
  EXPECT_NE(small.out.find("precision fp64x: no f64 contraction is rewritten into the Ozaki scheme II; where the scheme "
                           "cannot be faster, a contraction stays as written:\n  nest 1: its 14 moduli's memory traffic"),
            std::string::npos)
      << small.out;
  EXPECT_EQ(small.out.find("modulus"), std::string::npos) << small.out;
  Result dry = rtcgc("tune " + f64 + " -D n=1240 --dry-run --max-candidates 40 --precision fp64x");
  EXPECT_EQ(dry.code, 0) << dry.out;
  EXPECT_NE(dry.out.find("mma: s8 "), std::string::npos) << dry.out;  // mma.sync or wgmma
  Result f32 = rtcgc("emit " + example("matmul.rtcg") + " -D n=20 --precision fp64x");
  EXPECT_EQ(f32.code, 1) << f32.out;
  EXPECT_NE(f32.out.find("precision 'fp64x' computes f64 contractions on INT8 tensor cores, but kernel 'matmul' has none"),
            std::string::npos)
      << f32.out;
  Result tuneF32 = rtcgc("tune " + example("matmul.rtcg") + " -D n=20 --dry-run --precision fp64x");
  EXPECT_EQ(tuneF32.code, 1) << tuneF32.out;
  Result emitted = rtcgc("emit " + example("matmul.rtcg") + " -D n=640 --precision fp32x", "2>/dev/null");
  EXPECT_EQ(emitted.code, 0);
  EXPECT_NE(emitted.out.find("matmul_local_ozaki0_c8"), std::string::npos);
  // A search under fp32x on a stand-in device (the test suite's fake worker measures): the
  // rewritten kernel's candidates compile with NVRTC, s8 products among them, and the key's
  // reference is the kernel's as written (fp32x: the smallest square product the scheme can pay
  // for is n = 603, fp64x's 1207, a larger reference).
  Result tuned = rtcg::tests::shell("RTCG_TEST_DEVICE='Fake GPU,sm_90,132' RTCG_FAKE_WORKER_MODE=verified RTCG_CACHE_DIR=" +
                                    (tempDir() / "oz-cache").string() + " " + RTCGC_PATH + " tune " + example("matmul.rtcg") +
                                    " -D n=640 --precision fp32x --max-candidates 6 --compile-threads 1 --db - --worker " +
                                    RTCG_FAKE_WORKER + " 2>&1");
  EXPECT_EQ(tuned.code, 0) << tuned.out;
  EXPECT_NE(tuned.out.find(" 0 wrong"), std::string::npos) << tuned.out;
  EXPECT_NE(tuned.out.find("mma: s8 "), std::string::npos) << tuned.out;
}

// A kernel of several launches (fp32x's steps): the worker times each launch alone (the fake one
// by its launch configuration), refinement tries each nest's fastest measured schedule together,
// and the log gives the best's launches.
TEST(Cli, TuneRecombinesEachNestsFastestSchedule) {
  Result tuned = rtcg::tests::shell("RTCG_TEST_DEVICE='Fake GPU,sm_90,132' RTCG_FAKE_WORKER_MODE=verified "
                                    "RTCG_FAKE_WORKER_PER_LAUNCH=1 RTCG_CACHE_DIR=" +
                                    (tempDir() / "recombine-cache").string() + " " + RTCGC_PATH + " tune " + example("matmul.rtcg") +
                                    " -D n=640 --precision fp32x --max-candidates 12 --compile-threads 2 --db - --worker " +
                                    RTCG_FAKE_WORKER + " 2>&1");
  EXPECT_EQ(tuned.code, 0) << tuned.out;
  EXPECT_NE(tuned.out.find("refinement: each nest's fastest measured schedule together: "), std::string::npos)
      << tuned.out;
  EXPECT_NE(tuned.out.find("the best's launches, each alone (ms): matmul_"), std::string::npos) << tuned.out;
  EXPECT_NE(tuned.out.find(" 0 wrong"), std::string::npos) << tuned.out;
}

// The refinement rounds are appended to the search's compile pool's batch: they run on the compile
// workers the search started, so a search starts each of its --compile-threads workers once
// (a pool per round started 2 more per round).
TEST(Cli, TuneStartsEachCompileWorkerOnce) {
  Result tuned = rtcg::tests::shell("RTCG_TEST_DEVICE='Fake GPU,sm_90,132' RTCG_FAKE_WORKER_MODE=verified " +
                                    std::string(RTCGC_PATH) + " tune " + example("matmul.rtcg") +
                                    " -D n=64 --max-candidates 12 --compile-threads 2 --db - --worker " +
                                    RTCG_FAKE_WORKER + " 2>&1");
  EXPECT_EQ(tuned.code, 0) << tuned.out;
  EXPECT_NE(tuned.out.find("refinement round 2: "), std::string::npos) << tuned.out;
  EXPECT_NE(tuned.out.find("12 candidates (4 from refinement), 12 verified"), std::string::npos) << tuned.out;
  static const std::regex started("compile worker [0-9]+ started");
  auto lines = std::distance(std::sregex_iterator(tuned.out.begin(), tuned.out.end(), started), std::sregex_iterator());
  EXPECT_GE(lines, 1) << tuned.out;
  EXPECT_LE(lines, 2) << tuned.out;
  EXPECT_NE(tuned.out.find("worker restarts: 0"), std::string::npos) << tuned.out;
}

// --timeline: when each phase of the search ended (seconds since it began) as it ends, where its own
// time went at the end, and the same events in the JSON summary.
TEST(Cli, TuneTimelineSaysWhenEachPhaseEnded) {
  Result tuned = rtcg::tests::shell("RTCG_TEST_DEVICE='Fake GPU,sm_90,132' RTCG_FAKE_WORKER_MODE=verified " +
                                    std::string(RTCGC_PATH) + " tune " + example("matmul.rtcg") +
                                    " -D n=64 --max-candidates 6 --compile-threads 1 --db - --timeline --json --worker " +
                                    RTCG_FAKE_WORKER + " 2>&1");
  EXPECT_EQ(tuned.code, 0) << tuned.out;
  for (const char* event : {"compile pool started", "enumeration done", "reference done", "measuring workers ready",
                            "default schedule compiled", "first result", "last result"})
    EXPECT_TRUE(std::regex_search(tuned.out, std::regex(std::string("rtcgc tune: timeline: +[0-9]+\\.[0-9]{3} s  ") + event)))
        << event << "\n" << tuned.out;
  EXPECT_TRUE(std::regex_search(tuned.out, std::regex("rtcgc tune: timeline: busy: device 0 waiting for an outcome [0-9.]+ s")))
      << tuned.out;
  EXPECT_NE(tuned.out.find("\"event\": \"enumeration done\""), std::string::npos) << tuned.out;
  EXPECT_NE(tuned.out.find("\"event\": \"last result\""), std::string::npos) << tuned.out;
  // Without it, none.
  Result quiet = rtcg::tests::shell("RTCG_TEST_DEVICE='Fake GPU,sm_90,132' RTCG_FAKE_WORKER_MODE=verified " +
                                    std::string(RTCGC_PATH) + " tune " + example("matmul.rtcg") +
                                    " -D n=64 --max-candidates 6 --compile-threads 1 --db - --worker " +
                                    RTCG_FAKE_WORKER + " 2>&1");
  EXPECT_EQ(quiet.code, 0) << quiet.out;
  EXPECT_EQ(quiet.out.find("timeline:"), std::string::npos) << quiet.out;
}

// wgmma (`mma: ... wgmma`): explain says the layouts, emit compiles an sm_90a cubin where the
// target is sm_90 and refuses another target (exit 1), bad text is refused with its column, and the
// dry run offers wgmma for sm_90 only.
TEST(Cli, WgmmaSchedules) {
  const std::string gemm = example("gemm_bf16.rtcg");
  const std::string s = " -D n=1000 --max-shared 232448 -s 'mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4'";
  Result ex = rtcgcStdout("explain " + gemm + s);
  EXPECT_EQ(ex.code, 0) << ex.out;
  EXPECT_NE(ex.out.find("bf16 wgmma.mma_async m64n128k16 (sm_90a): block tile 128x128"), std::string::npos) << ex.out;
  Result cubin = rtcgc("emit " + gemm + s + " --arch sm_90 --cubin -o " + (tempDir() / "wgmma.cubin").string());
  EXPECT_EQ(cubin.code, 0) << cubin.out;
  Result other = rtcgc("emit " + gemm + s + " --arch sm_80 --cubin -o " + (tempDir() / "wgmma80.cubin").string());
  EXPECT_EQ(other.code, 1) << other.out;
  EXPECT_NE(other.out.find("wgmma (wgmma.mma_async) exists on sm_90 only (compiled for sm_90a); the target is sm_80"),
            std::string::npos) << other.out;
  EXPECT_FALSE(std::filesystem::exists(tempDir() / "wgmma80.cubin"));
  // export for several architectures refuses it the same way (the plan knows each target), and
  // writes nothing.
  const std::filesystem::path exported = tempDir() / "wgmma-export";
  Result both = rtcgc("export " + gemm + " -D n=1000 -s 'mma: bf16 wgmma m64n64k16 warpgroups 1x1 k 32 stages 3'" +
                      " --arch sm_80,sm_90 -o " + exported.string());
  EXPECT_EQ(both.code, 1) << both.out;
  EXPECT_NE(both.out.find("exists on sm_90 only (compiled for sm_90a); the target is sm_80"), std::string::npos)
      << both.out;
  EXPECT_EQ(both.out.find("bug in rtcg"), std::string::npos) << both.out;
  EXPECT_FALSE(std::filesystem::exists(exported / "gemm_bf16.h"));
  Result bad = rtcgc("explain " + gemm + " -D n=64 -s 'mma: bf16 wgmma m64n100k16 warpgroups 1x1 k 16 stages 2'");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("wgmma N must be a multiple of 8 from 8 to 256, not 100"), std::string::npos) << bad.out;
  Result sm90 = rtcgc("tune " + gemm + " -D n=2048 --dry-run --max-candidates 40 --arch sm_90");
  EXPECT_EQ(sm90.code, 0) << sm90.out;
  EXPECT_NE(sm90.out.find(" wgmma m64n"), std::string::npos) << sm90.out;
  Result sm80 = rtcgc("tune " + gemm + " -D n=2048 --dry-run --max-candidates 40 --arch sm_80");
  EXPECT_EQ(sm80.code, 0) << sm80.out;
  EXPECT_EQ(sm80.out.find(" wgmma "), std::string::npos) << sm80.out;
}

// `swizzle 128 tma`: explain says the boxes and the mbarriers; export refuses it with the reason
// (its header does not encode tensor maps) and writes nothing; a refusal names the operand.
TEST(Cli, WgmmaTmaSchedules) {
  const std::string gemm = example("gemm_bf16.rtcg");
  const std::string s =
      " -D n=1000 --max-shared 232448 -s 'mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 swizzle 128 tma'";
  Result ex = rtcgcStdout("explain " + gemm + s);
  EXPECT_EQ(ex.code, 0) << ex.out;
  EXPECT_NE(ex.out.find("TMA: thread 0 copies each stage by cp.async.bulk.tensor.2d (128-byte swizzle, zeros outside "
                        "the arrays): A 1 box of 64 x 128 from a 1000 x 1000 map; B 2 boxes of 64 x 64"),
            std::string::npos) << ex.out;
  const std::filesystem::path exported = tempDir() / "tma-export";
  // (export takes the architecture's shared memory; it has no --max-shared)
  Result exp = rtcgc("export " + gemm + " -D n=1000 -s 'mma: bf16 wgmma m64n128k16 warpgroups 2x1 k 64 stages 4 "
                     "swizzle 128 tma' --arch sm_90 -o " + exported.string());
  EXPECT_EQ(exp.code, 1) << exp.out;
  EXPECT_NE(exp.out.find("copies tiles by TMA ('tma'), whose tensor maps an exported header does not encode"),
            std::string::npos) << exp.out;
  EXPECT_FALSE(std::filesystem::exists(exported / "gemm_bf16.h"));
  Result odd = rtcgc("explain " + gemm + " -D n=1003 --max-shared 232448 -s 'mma: bf16 wgmma m64n128k16 warpgroups 2x1 "
                     "k 64 stages 4 swizzle 128 tma'");
  EXPECT_EQ(odd.code, 1) << odd.out;
  EXPECT_NE(odd.out.find("'tma' cannot copy A ('f32(a[i, k])'): its rows are 2006 bytes apart, not a multiple of 16"),
            std::string::npos) << odd.out;
}

// `fuse: N`: explain says which nests share a launch and which locals moved to shared memory; a
// fusion that cannot apply is an error (exit 1) with its reason, a bad count a parse error.
TEST(Cli, ExplainAndEmitFusedNests) {
  const std::string nest = "i: grid.x; j: serial, thread.x 64";
  Result ok = rtcgcStdout("explain " + example("softmax.rtcg") + " -D m=37 -D n=300 -s '" + nest + "; fuse: 3 | " + nest +
                          " | " + nest + "'");
  EXPECT_EQ(ok.code, 0) << ok.out;
  EXPECT_NE(ok.out.find("fused: nests 0 to 2 in one launch over 'i' (1 value per block, a barrier between nests); "
                        "locals in shared memory: rowmax, rowsum (8 bytes per block)\n"),
            std::string::npos)
      << ok.out;
  Result bad = rtcgc("emit " + example("softmax.rtcg") + " -D m=37 -D n=300 -s '" + nest + "; fuse: 3 | " + nest +
                     " | i: grid.x; j: grid.y, thread.x 64'");
  EXPECT_EQ(bad.code, 1) << bad.out;
  EXPECT_NE(bad.out.find("nest 0: fuse: 3: nest 2: index 'j' has a grid part"), std::string::npos) << bad.out;
  Result count = rtcgc("emit " + example("softmax.rtcg") + " -D m=37 -D n=300 -s 'i: grid.x; fuse: 0'");
  EXPECT_NE(count.code, 0) << count.out;
  EXPECT_NE(count.out.find("fuse must be between 1 and 64"), std::string::npos) << count.out;
}
