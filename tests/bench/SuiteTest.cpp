// CPU-side tests of the benchmark suite: the workload list and its DSL, selection, and the
// table / JSON / HTML output. The GPU measurement itself runs in bench_suite (docs/bench.md).
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "bench/suite/Results.h"
#include "bench/suite/Workloads.h"
#include "driver/Executable.h"
#include "driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "ir/Bind.h"
#include "schedule/Schedule.h"
#include "support/Error.h"

namespace rtcg::bench {
namespace {

namespace fs = std::filesystem;

TEST(BenchWorkloads, TheSuiteOfTheIssue) {
  std::vector<Workload> all = allWorkloads();
  // 30, the 4 CSR rows and 14 rows beyond rectangles of issue 23 (trmm's two with the staged steps
  // over a block's hull), the 21 tensor-core rows of issue 22, the 4 accumulation rows and the 4 scan rows of issue 37,
  // and issue 36's 10 rows (dg_diff of three statements N5-N8 and sum factorisation p = 5, 7, 9 under
  // tf32x3, the f64 differentiation N3, N5, N7), and issue 41's 4 Ozaki rows (DGEMM fp64x, SGEMM
  // fp32x at n = 4096, 8192) with tf32x3 at 8192 beside them, igemm_4096, and the f64 DG
  // differentiation N3, N5, N7 under fp64x
  ASSERT_EQ(all.size(), 96u);
  std::set<std::string> names;
  for (const Workload& w : all) EXPECT_TRUE(names.insert(w.name).second) << w.name;
  for (const char* n : {"sgemm_500", "sgemm_1000", "sgemm_1500", "sgemm_2048", "sgemm_3000", "sgemm_4096",
                        "sgemv_8192", "transpose_8192x8192", "transpose_4097x1023", "dot_2^26",
                        "batched_16x16x65536", "dg_lift_N3", "dg_lift_N5", "dg_lift_N7", "spmv_laplace3d_64",
                        "spmv_laplace3d_160", "spmv_powerlaw_1M", "spmv_powerlaw_4M"})
    EXPECT_TRUE(names.count(n)) << n;
  for (int order = 1; order <= 8; ++order) {
    EXPECT_TRUE(names.count("dg_diff_N" + std::to_string(order)));
    EXPECT_TRUE(names.count("dg_diff_stacked_N" + std::to_string(order)));
    EXPECT_TRUE(names.count("dg_diff_stacked_tf32x3_N" + std::to_string(order)));
  }
  // Tensor cores: each row under the policy its peer compares it with.
  for (const Workload& w : all) {
    if (w.name.rfind("sgemm_tf32x3_", 0) == 0 || w.group == "dg_tc" || w.group == "batched_tc" ||
        w.group == "dg_tc3" || w.group == "sumfact")
      EXPECT_EQ(w.precision, Precision::Tf32x3) << w.name;
    else if (w.name == "sgemm_tf32_4096")
      EXPECT_EQ(w.peer, PeerKind::SgemmTf32);
    else if (w.name == "igemm_4096")
      EXPECT_EQ(w.peer, PeerKind::GemmI8);
    else if (w.group == "ozaki")
      EXPECT_EQ(w.precision, w.kernelName == "matmul" ? Precision::Fp32x : Precision::Fp64x) << w.name;
    else
      EXPECT_EQ(w.precision, Precision::Ieee) << w.name;
  }
  for (const char* n : {"sgemm_tf32x3_1000", "sgemm_tf32x3_2048", "sgemm_tf32x3_4096", "sgemm_tf32x3_8192", "sgemm_tf32_4096", "dgemm_1000",
                        "dgemm_2048", "dgemm_4096", "batched_tf32x3_16x16x65536", "dg_lift_tf32x3_N3",
                        "dg_lift_tf32x3_N5", "dg_lift_tf32x3_N7", "gemm_bf16_2048", "gemm_bf16_4096"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const Workload& w : all)
    if (w.group == "gemm_bf16") EXPECT_EQ(w.peer, PeerKind::GemmBf16) << w.name;
  // Beyond rectangles: cuBLAS peers for the triangular rows, PyTorch for the others.
  for (const Workload& w : all) {
    if (w.group == "trmv") EXPECT_EQ(w.peer, PeerKind::Strmv) << w.name;
    if (w.group == "syrk") EXPECT_EQ(w.peer, PeerKind::Ssyrk) << w.name;
    if (w.group == "trmm") EXPECT_EQ(w.peer, PeerKind::Strmm) << w.name;
    if (w.group == "softmax" || w.group == "layernorm" || w.group == "nearest" || w.group == "histogram" ||
        w.group == "histogram_weighted" || w.group == "assemble")
      EXPECT_EQ(w.peer, PeerKind::Torch) << w.name;
    // Compared with PyTorch, which outputs y alone: the row statistics are kernel-local.
    if (w.group == "softmax" || w.group == "layernorm")
      EXPECT_EQ(w.source.find("out rowmax"), std::string::npos) << w.name;
  }
  for (const char* n : {"dg_diff_tf32x3_N5", "dg_diff_tf32x3_N8", "dg_diff_f64_N3", "dg_diff_f64_N7", "sumfact_tf32x3_p5",
                        "sumfact_tf32x3_p9"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const Workload& w : all) {
    if (w.group == "dg_f64") EXPECT_EQ(w.peer, PeerKind::DgDiffStackedF64) << w.name;
    if (w.group == "sumfact") EXPECT_EQ(w.peer, PeerKind::Torch) << w.name;
  }
  for (const char* n : {"histogram_2^26_256", "histogram_2^26_65536", "histogram_weighted_2^26_1024", "assemble_2^20x20"})
    EXPECT_TRUE(names.count(n)) << n;
  for (const char* n : {"trmv_8192", "trmv_16384", "trmm_2048", "trmm_4096", "syrk_2048x2048", "syrk_4096x1024", "softmax_65536x256",
                        "softmax_8192x2048", "softmax_2048x16384", "layernorm_65536x256", "layernorm_8192x2048",
                        "layernorm_2048x16384", "nearest_8192_D16", "nearest_16384_D64"})
    EXPECT_TRUE(names.count(n)) << n;
}

// --peer-times: the PyTorch peers' file (bench/peers/torch_peers.py) read back, and files that are
// not one refused with the file, the workload and what is wrong.
TEST(BenchResults, PeerTimesOfTheTorchScript) {
  fs::path dir = fs::temp_directory_path() / fmt::format("rtcg-bench-peers-{}", ::getpid());
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  auto peers = loadPeerTimes(write("ok.json", R"J({"device": "H200", "workloads": {
      "softmax_8192x2048": {"peer": "torch.softmax", "ms": 0.071, "relErr": 2e-7, "forms": {"torch.softmax": 0.071}},
      "nearest_8192_D16": {"peer": "torch.compile(direct differences)", "ms": 1.5}}})J"));
  ASSERT_EQ(peers.size(), 2u);
  EXPECT_EQ(peers.at("softmax_8192x2048").label, "torch.softmax");
  EXPECT_DOUBLE_EQ(peers.at("softmax_8192x2048").ms, 0.071);
  EXPECT_DOUBLE_EQ(peers.at("softmax_8192x2048").relErr, 2e-7);
  EXPECT_DOUBLE_EQ(peers.at("nearest_8192_D16").relErr, -1);
  auto refused = [&](const std::string& text, const std::string& says) {
    try {
      loadPeerTimes(write("bad.json", text));
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("bad.json"), std::string::npos) << e.what();
    }
  };
  refused("{", "not JSON");
  refused(R"({"workloads": []})", "no \"workloads\" object");
  refused(R"({"workloads": {"w": {"ms": 1}}})", "workload w: needs a \"peer\" string");
  refused(R"({"workloads": {"w": {"peer": "p", "ms": 0}}})", "workload w: \"ms\" must be a positive time");
  refused(R"({"workloads": {"w": {"peer": "p", "ms": 1, "relErr": "x"}}})", "\"relErr\" is not a number");
  EXPECT_THROW(loadPeerTimes((dir / "missing.json").string()), Error);
  fs::remove_all(dir);
}

TEST(BenchWorkloads, NodeCounts) {
  EXPECT_EQ(tetNodes(1), 4);
  EXPECT_EQ(tetNodes(3), 20);
  EXPECT_EQ(tetNodes(8), 165);
  EXPECT_EQ(faceNodes(3), 10);
  EXPECT_EQ(faceNodes(7), 36);
}

// Small stand-ins of every kernel (the suite's sizes take long to prove on 2 cores) must parse,
// bind and prove; the DG sizes are checked on the real bindings through their traffic.
TEST(BenchWorkloads, EveryKernelCompilesToCuda) {
  std::set<std::string> done;
  for (const Workload& w : allWorkloads()) {
    if (!done.insert(w.kernelName).second) continue;
    SizeBindings small;
    for (const auto& [name, value] : w.sizes) {
      bool keep = name == "Np" || name == "Nfp" || (name == "n" && value == 16);  // structural sizes
      small[name] = keep ? value : std::min<int64_t>(value, 37);
    }
    SourceText src{w.name, w.source};
    Diagnostics diags;
    PipelineOptions po;
    po.kernelName = w.kernelName;
    po.compile = false;
    std::optional<Compiled> c = compilePipeline(src, small, po, diags);
    EXPECT_TRUE(c) << w.name << ": " << renderDiagnostics(diags, src);
  }
}

TEST(BenchWorkloads, CsrMatricesAreValidAndMatchTheirSizes) {
  // The 7-point Laplacian on a 3^3 grid: 27 rows, the centre has all 7 neighbours, a corner 4.
  CsrStructure lap = laplacian3d(3);
  EXPECT_EQ(lap.rows(), 27);
  EXPECT_EQ(lap.nonzeros(), 7 * 27 - 6 * 9);
  EXPECT_EQ(lap.rowptr[14] - lap.rowptr[13], 7);
  EXPECT_EQ(lap.rowptr[1] - lap.rowptr[0], 4);
  // Power-law rows: deterministic, most short, some long.
  CsrStructure pl = powerLawRows(5000, 23), again = powerLawRows(5000, 23);
  EXPECT_EQ(pl.col, again.col);
  int64_t longest = 0, ones = 0;
  for (int64_t i = 0; i < pl.rows(); ++i) {
    longest = std::max<int64_t>(longest, pl.rowptr[size_t(i) + 1] - pl.rowptr[size_t(i)]);
    ones += pl.rowptr[size_t(i) + 1] - pl.rowptr[size_t(i)] == 1;
  }
  EXPECT_GT(longest, 100);
  EXPECT_GT(ones, 2000);
  // Every workload's sizes are its matrix's, whose offsets are non-decreasing from 0 to nnz and
  // whose columns index x (the small ones; the larger are the same code at other sizes).
  for (const Workload& w : selectWorkloads("spmv_laplace3d_64,spmv_powerlaw_1M")) {
    CsrStructure m = csrOf(w);
    EXPECT_EQ(m.rows(), w.sizes.at("n")) << w.name;
    EXPECT_EQ(m.nonzeros(), w.sizes.at("nnz")) << w.name;
    EXPECT_EQ(m.rowptr.front(), 0);
    EXPECT_TRUE(std::is_sorted(m.rowptr.begin(), m.rowptr.end())) << w.name;
    EXPECT_TRUE(std::all_of(m.col.begin(), m.col.end(), [&](int32_t c) { return c >= 0 && c < m.rows(); }));
  }
}

TEST(BenchWorkloads, DgDataIsAbout256MiB) {
  for (const Workload& w : allWorkloads()) {
    if (w.group != "dg_diff" && w.group != "dg_diff_stacked" && w.group != "dg_lift") continue;
    int64_t k = w.sizes.at("K"), np = w.sizes.at("Np");
    int64_t floats = w.group != "dg_lift" ? 3 * np * np + 4 * k * np
                                          : np * 4 * w.sizes.at("Nfp") + k * (4 * w.sizes.at("Nfp") + 1 + 2 * np);
    double mib = double(floats) * 4 / (1 << 20);
    EXPECT_GT(mib, 255.9) << w.name;
    EXPECT_LE(mib, 256.0) << w.name;
  }
}

TEST(BenchWorkloads, Selection) {
  EXPECT_EQ(selectWorkloads("").size(), 96u);
  EXPECT_EQ(selectWorkloads("ozaki").size(), 8u);  // the policies' GEMM and DG rows, and igemm_4096 (their products)
  EXPECT_EQ(selectWorkloads("histogram").size(), 2u);  // not histogram_weighted: a group name matches the group only
  EXPECT_EQ(selectWorkloads("dg_diff").size(), 8u);  // a group name matches the group only
  EXPECT_EQ(selectWorkloads("dg_diff_stacked").size(), 8u);
  EXPECT_EQ(selectWorkloads("sgemm").size(), 6u);
  std::vector<Workload> s = selectWorkloads("dg_lift_N5,dot,sgemm_500");
  ASSERT_EQ(s.size(), 3u);  // suite order, not the order given
  EXPECT_EQ(s[0].name, "sgemm_500");
  EXPECT_EQ(s[1].name, "dot_2^26");
  EXPECT_EQ(s[2].name, "dg_lift_N5");
  try {
    selectWorkloads("sgemm,gemm");
    FAIL() << "no error for an unknown workload";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown workload 'gemm'"), std::string::npos) << e.what();
  }
}

Row sampleRow() {
  Row r;
  r.name = "sgemm_<500>";
  r.group = "sgemm";
  r.sizes = "n=500";
  r.peer = "cublasSgemm";
  r.flops = 250'000'000;
  r.bytes = 3'000'000;
  r.rtcgMs = 0.5;
  r.peerMs = 0.25;
  r.rooflineMs = 250'000'000 / 67e12 * 1e3;
  r.relErrPeer = 2e-7;
  r.relErrReference = 1e-7;
  r.tolerance = 1e-5;
  r.pass = true;
  return r;
}

TEST(BenchResults, Rates) {
  Row r = sampleRow();
  EXPECT_DOUBLE_EQ(r.gflops(), 500.0);
  EXPECT_DOUBLE_EQ(r.gbytes(), 6.0);
  EXPECT_DOUBLE_EQ(r.speedRatio(), 0.5);
  EXPECT_NEAR(r.roofline(), 500.0 / 67000, 1e-12);
  EXPECT_NEAR(r.peerRoofline(), 1000.0 / 67000, 1e-12);
  Row none;
  EXPECT_EQ(none.speedRatio(), 0);
  EXPECT_EQ(none.gflops(), 0);
}

TEST(BenchResults, TableJsonHtml) {
  Row bad = sampleRow();
  bad.name = "dot_2^26";
  bad.error = "compiling the schedule failed";
  std::vector<Row> rows = {sampleRow(), bad};
  SuiteInfo info{"NVIDIA H100 & co", "sm_90", "13.0.0", "13.0", "tuned now", 67000, 3000};

  std::string table = renderTable(rows);
  EXPECT_NE(table.find("sgemm_<500>"), std::string::npos);
  EXPECT_NE(table.find("0.50x"), std::string::npos) << table;
  EXPECT_NE(table.find("500.0"), std::string::npos) << table;
  EXPECT_NE(table.find("ERROR: compiling the schedule failed"), std::string::npos) << table;

  nlohmann::json j = toJson(info, rows);
  EXPECT_EQ(j["copyBandwidthGBs"], 3000);
  ASSERT_EQ(j["workloads"].size(), 2u);
  EXPECT_EQ(j["workloads"][0]["speedRatio"], 0.5);
  EXPECT_EQ(j["workloads"][0]["pass"], true);
  EXPECT_EQ(j["workloads"][1]["error"], "compiling the schedule failed");
  EXPECT_FALSE(j["workloads"][1].contains("rtcgMs"));

  std::string html = renderHtml(info, rows);
  EXPECT_NE(html.find("<svg"), std::string::npos);
  EXPECT_NE(html.find("sgemm_&lt;500&gt;"), std::string::npos);
  EXPECT_EQ(html.find("sgemm_<500>"), std::string::npos);
  EXPECT_NE(html.find("NVIDIA H100 &amp; co"), std::string::npos);
  EXPECT_EQ(html.find("<script"), std::string::npos);
}

// --schedules: an earlier run's bench.json read back (its own output round-trips, the results
// committed in bench/results load and name every workload of the suite), and files that are not
// one are refused with the file's name and what is wrong.
TEST(BenchResults, EarlierSchedulesFromAnEarlierRun) {
  Row bad = sampleRow();
  bad.name = "dot_2^26";
  bad.error = "compiling the schedule failed";
  Row dflt = sampleRow();
  dflt.name = "sgemv_8192";
  dflt.schedule = "";
  Row good = sampleRow();
  good.schedule = "i: grid.y, thread.y 8; j: grid.x, thread.x 32; k: serial, unroll 8";
  good.rtcgMs = 0.25;
  SuiteInfo info{"H100", "sm_90", "13.0.0", "13.0", "tuned now", 67000, 3000};
  fs::path dir = fs::temp_directory_path() / fmt::format("rtcg-bench-earlier-{}", ::getpid());
  fs::create_directories(dir);
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  };
  std::map<std::string, EarlierSchedule> e = loadEarlierSchedules(write("ok.json", toJson(info, {good, bad, dflt}).dump()));
  ASSERT_EQ(e.size(), 1u);  // the failed row and the default schedule are left out
  EXPECT_EQ(e.at(good.name).schedule, good.schedule);
  EXPECT_DOUBLE_EQ(e.at(good.name).ms, 0.25);

  // Every committed table's schedules are still legal for their workloads on an H100 (so that
  // the next run on a GPU can measure them without tuning).
  for (const char* table : {"h100-2026-11-25-splitk.json", "h100-2026-11-25-pipelined.json",
                            "h100-2026-11-25-tall.json"}) {
    std::map<std::string, EarlierSchedule> committed =
        loadEarlierSchedules(std::string(RTCG_SOURCE_DIR) + "/bench/results/" + table);
    EXPECT_EQ(committed.size(), 22u) << table;  // the suite before the stacked DG rows
    for (const Workload& w : allWorkloads()) {
      if (w.group == "dg_diff_stacked" || w.group == "spmv" || w.group == "sgemm_tc" || w.group == "dgemm" || w.group == "batched_tc" ||
          w.group == "dg_tc" || w.group == "gemm_bf16" || w.group == "trmv" || w.group == "trmm" || w.group == "syrk" || w.group == "softmax" ||
          w.group == "layernorm" || w.group == "nearest" || w.group == "histogram" || w.group == "histogram_weighted" ||
          w.group == "assemble" || w.group == "cumsum" || w.group == "exclusive_scan" || w.group == "row_cumsum" ||
          w.group == "segmented_sum" || w.group == "dg_tc3" || w.group == "dg_f64" || w.group == "sumfact" ||
          w.group == "ozaki")
        continue;
      ASSERT_EQ(committed.count(w.name), 1u) << table << ": " << w.name;
      Diagnostics diags;
      std::optional<Program> prog = parseProgram(w.name, w.source, diags);
      ASSERT_TRUE(prog) << w.name;
      std::optional<Kernel> bound = bindSizes(*prog->find(w.kernelName), w.sizes, diags);
      ASSERT_TRUE(bound) << w.name;
      ScheduleParseResult parsed = parseSchedule(committed.at(w.name).schedule);
      ASSERT_TRUE(parsed.ok()) << table << ": " << w.name << ": " << parsed.error;
      std::vector<std::string> reasons = validateSchedule(*bound, *parsed.schedule, deviceScheduleLimits(232448, 1024));
      EXPECT_TRUE(reasons.empty()) << table << ": " << w.name << ": " << reasons.front();
    }
  }

  auto error = [&](const std::string& path) {
    try {
      loadEarlierSchedules(path);
    } catch (const Error& x) {
      return std::string(x.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error((dir / "missing.json").string()).find("cannot read"), std::string::npos);
  EXPECT_NE(error(write("a.json", "{\"workloads\": [")).find("a.json: not JSON"), std::string::npos);
  EXPECT_NE(error(write("b.json", "{\"rows\": []}")).find("b.json: no \"workloads\" array"), std::string::npos);
  EXPECT_NE(error(write("c.json", "{\"workloads\": [{\"schedule\": \"x\"}]}")).find("workload 1 has no \"name\""),
            std::string::npos);
  EXPECT_NE(error(write("d.json", "{\"workloads\": [{\"name\": \"w\", \"schedule\": 3}]}")).find("\"schedule\" is not a string"),
            std::string::npos);
  EXPECT_NE(error(write("e.json", "{\"workloads\": [{\"name\": \"w\", \"schedule\": \"x\"}, {\"name\": \"w\", \"schedule\": \"y\"}]}"))
                .find("workload w is listed twice"),
            std::string::npos);
  fs::remove_all(dir);
}

TEST(BenchResults, ShortSchedule) {
  EXPECT_EQ(shortSchedule(""), "default");
  EXPECT_LE(shortSchedule("nest 0: this is not a schedule at all but quite a long text", 20).size(), 20u);
}

// Several --schedules files: each workload's distinct legal schedules, in the files' order, with
// where each came from; illegal ones are named with their file and reason.
TEST(BenchResults, ContendersFromSeveralEarlierRuns) {
  std::vector<Workload> workloads = allWorkloads();
  auto sgemm = std::find_if(workloads.begin(), workloads.end(), [](const Workload& w) { return w.name == "sgemm_3000"; });
  ASSERT_NE(sgemm, workloads.end());
  Diagnostics diags;
  std::optional<Program> prog = parseProgram(sgemm->name, sgemm->source, diags);
  ASSERT_TRUE(prog);
  std::optional<Kernel> bound = bindSizes(*prog->find(sgemm->kernelName), sgemm->sizes, diags);
  ASSERT_TRUE(bound);
  const std::string tile = "i: grid.y, thread.y 8, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; k: serial, unroll 8; "
                           "shared: a^T, b; blocks_per_sm: 2";
  const std::string split = "i: grid.y, thread.y 8, reg 8; j: grid.x, thread.x 16, reg 4; k: grid.z, serial 94, "
                            "unroll 16; shared: a^T, b";
  std::vector<std::pair<std::string, EarlierSchedule>> earlier{
      {"a.json", {split, 1.3342}},
      {"b.json", {tile, 1.3014}},
      {"c.json", {split, 1.3345}},                                               // the same again
      {"d.json", {"i: grid.y, thread.y 64; j: grid.x, thread.x 64; k: serial", 1}},  // 4096 threads
      {"e.json", {"i: nowhere", 1}}};
  std::vector<std::string> rejected;
  std::vector<Contender> c = legalEarlierSchedules(*bound, Precision::Ieee, deviceScheduleLimits(232448, 1024), earlier, rejected);
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].schedule, split);
  EXPECT_EQ(c[0].source, "a.json (1.3342 ms there)");
  EXPECT_EQ(c[1].schedule, tile);
  EXPECT_EQ(c[1].source, "b.json (1.3014 ms there)");
  ASSERT_EQ(rejected.size(), 2u);
  EXPECT_EQ(rejected[0].rfind("d.json: ", 0), 0u) << rejected[0];
  EXPECT_NE(rejected[0].find("threads per block"), std::string::npos) << rejected[0];
  EXPECT_EQ(rejected[1].rfind("e.json: ", 0), 0u) << rejected[1];
}

// A rewriting policy's row: its schedules are of the policy's steps (six nests for fp64x DGEMM), so
// they are checked against the rewritten kernel (bench_suite once refused s36's fp64x schedule
// against the one-nest DGEMM: "the schedule has 6 nest schedules but kernel 'dgemm' has 1").
TEST(Results, EarlierSchedulesOfAPolicyRowAreOfItsSteps) {
  std::vector<Workload> workloads = allWorkloads();
  auto row = std::find_if(workloads.begin(), workloads.end(), [](const Workload& w) { return w.name == "dgemm_fp64x_4096"; });
  ASSERT_NE(row, workloads.end());
  ASSERT_EQ(row->precision, Precision::Fp64x);
  Diagnostics diags;
  std::optional<Program> prog = parseProgram(row->name, row->source, diags);
  ASSERT_TRUE(prog);
  std::optional<Kernel> bound = bindSizes(*prog->find(row->kernelName), row->sizes, diags);
  ASSERT_TRUE(bound);
  const std::string steps =
      "i: grid.x; k: serial, thread.x 256 | i: grid.y; k: grid.x, thread.x 256 | j: grid.x, thread.x 32; k: serial, "
      "unroll 8, thread.y 8 | j: grid.y, reg 4, thread.y 8; k: grid.x, thread.x 32; shared: b | mma: s8 wgmma "
      "m64n128k32 warpgroups 2x2 k 128 stages 4 swizzle 128 tma | i: grid.y; j: grid.x, thread.x 256; k: serial";
  std::vector<std::pair<std::string, EarlierSchedule>> earlier{{"a.json", {steps, 2.4}},
                                                               {"b.json", {"i: grid.y; j: grid.x, thread.x 256; k: serial", 9}}};
  std::vector<std::string> rejected;
  std::vector<Contender> c = legalEarlierSchedules(*bound, row->precision, deviceScheduleLimits(232448, 1024), earlier, rejected);
  ASSERT_EQ(c.size(), 1u) << (rejected.empty() ? "" : rejected.front());
  EXPECT_EQ(c[0].schedule, steps);
  ASSERT_EQ(rejected.size(), 1u);  // one nest's schedule for a kernel of six steps
  EXPECT_EQ(rejected[0].rfind("b.json: ", 0), 0u) << rejected[0];
}

}  // namespace
}  // namespace rtcg::bench
