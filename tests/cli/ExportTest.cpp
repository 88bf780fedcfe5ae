// rtcgc export: the command (arguments, errors, the directory written whole or not at all) and,
// where a device exists, kernels exported at build time (tests/cli/CMakeLists.txt) launched
// through their generated headers against the CPU reference. The headers' driver calls go to
// ExportDriverShim.cpp, so this binary starts without a driver and the GPU tests skip.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "Shell.h"
#include "axpby/axpby.h"
#include "driver/Executable.h"
#include "driver/Pipeline.h"
#include "matmul/matmul.h"
#include "reference/Compare.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Stream.h"
#include "tune/TuningDb.h"
#include "tune/TuningKeyFor.h"

namespace fs = std::filesystem;
using namespace rtcg;

namespace {

using Result = rtcg::tests::ShellResult;

Result rtcgc(const std::string& args) { return rtcg::tests::shell(std::string(RTCGC_PATH) + " " + args + " 2>&1"); }

std::string example(const std::string& name) { return std::string(RTCG_SOURCE_DIR) + "/examples/" + name; }

Kernel proved(const std::string& file, const SizeBindings& sizes) {
  std::ifstream in(example(file));
  SourceText src{file, std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>())};
  Diagnostics diags;
  std::optional<Kernel> k = proveKernel(src, sizes, "", diags);
  EXPECT_TRUE(k) << renderDiagnostics(diags, src);
  return *k;
}

fs::path scratch(const std::string& name) {
  fs::path d = fs::temp_directory_path() / ("rtcgc-export-test-" + std::to_string(::getpid())) / name;
  fs::remove_all(d);
  fs::create_directories(d.parent_path());
  return d;
}

std::string readText(const fs::path& p) {
  std::ifstream in(p);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// What lies beside `dir` under its name: the directory itself, and any staging directory
// (".NAME.tmp-XXXXXX") a failed export must not leave behind.
std::vector<std::string> leftovers(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(dir.parent_path()))
    if (e.path().filename().string().find(dir.filename().string()) != std::string::npos)
      out.push_back(e.path().filename().string());
  return out;
}

}  // namespace

TEST(Export, WritesCubinsAndAHeaderPerArchitecture) {
  fs::path out = scratch("axpby");
  Result r = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 --arch sm_80,sm_90 -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::exists(out / "axpby.sm_80.cubin"));
  EXPECT_TRUE(fs::exists(out / "axpby.sm_90.cubin"));
  std::string header = readText(out / "axpby.h");
  EXPECT_NE(header.find("class axpby"), std::string::npos) << header;
  EXPECT_NE(header.find("static constexpr long long n = 1000;"), std::string::npos) << header;
  EXPECT_NE(header.find("std::string launch(detail::Exact<float> a, CUdeviceptr x, detail::Exact<float> b, "
                        "CUdeviceptr y, CUdeviceptr z, CUstream stream) const"),
            std::string::npos)
      << header;
  EXPECT_NE(header.find("checkArray(\"axpby\", \"z\", z, 1000ull * 4)"), std::string::npos) << header;
  // Exported again over the first: replaced as a whole, no staging directory left.
  r = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 --arch sm_90 -o " + out.string() + "/");
  ASSERT_EQ(r.code, 0) << r.out;
  EXPECT_FALSE(fs::exists(out / "axpby.sm_80.cubin"));
  EXPECT_EQ(leftovers(out), std::vector<std::string>{"axpby"});
}

TEST(Export, EveryExamplesHeaderCompilesBesideTheOthers) {
  // Every example with its sizes (examples/sizes.txt), all headers in one translation unit under
  // -Wall -Wextra -Wpedantic -Werror: the shared helpers are defined once, the names do not clash.
  fs::path dir = scratch("all");
  fs::create_directories(dir);
  std::ifstream sizes(std::string(RTCG_SOURCE_DIR) + "/examples/sizes.txt");
  std::string line, includes;
  while (std::getline(sizes, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string file, binding, defines;
    ss >> file;
    while (ss >> binding) defines += " -D " + binding;
    std::string name = file.substr(0, file.find('.'));
    Result r = rtcgc("export " + example(file) + defines + " --arch sm_80,sm_90 -o " + (dir / name).string());
    ASSERT_EQ(r.code, 0) << file << ": " << r.out;
    includes += "#include \"" + (dir / name / (name + ".h")).string() + "\"\n";
  }
  std::ofstream(dir / "all.cpp") << includes << "int main() {}\n";
  std::string cmd = std::string(RTCG_CXX) + " -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I" +
                    RTCG_CUDA_INCLUDE + " " + (dir / "all.cpp").string();
  Result compiled;
  compiled.code = std::system((cmd + " > " + (dir / "log.txt").string() + " 2>&1").c_str());
  EXPECT_EQ(compiled.code, 0) << cmd << "\n" << readText(dir / "log.txt");
}

TEST(Export, FailuresLeaveNothingBehind) {
  fs::path out = scratch("failed");
  Result arch = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 --arch sm_91 -o " + out.string());
  EXPECT_EQ(arch.code, 2) << arch.out;
  EXPECT_NE(arch.out.find("supported are sm_75, sm_80, sm_86, sm_87, sm_89, sm_90, sm_100, sm_120"), std::string::npos) << arch.out;
  Result sizes = rtcgc("export " + example("axpby.rtcg") + " -o " + out.string());
  EXPECT_EQ(sizes.code, 1) << sizes.out;
  Result schedule = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 -s 'i: grid.x, thread.x 4096' -o " +
                          out.string());
  EXPECT_EQ(schedule.code, 1) << schedule.out;
  Result both = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 --tuned -s 'i: grid.x, thread.x 256' -o " +
                      out.string());
  EXPECT_EQ(both.code, 2) << both.out;
  Result noDb = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 --tuned --db " + (out.string() + ".sqlite") +
                      " -o " + out.string());
  EXPECT_EQ(noDb.code, 1) << noDb.out;
  EXPECT_NE(noDb.out.find("no tuning database at"), std::string::npos) << noDb.out;
  EXPECT_TRUE(leftovers(out).empty());
  // Over a file: refused, the file kept.
  std::ofstream(out) << "mine";
  Result file = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 -o " + out.string());
  EXPECT_EQ(file.code, 1) << file.out;
  EXPECT_EQ(readText(out), "mine");
  EXPECT_EQ(leftovers(out), std::vector<std::string>{"failed"});
  // A directory that is not an earlier export is kept as it is: -o . must not delete the files there.
  fs::path kept = scratch("kept");
  fs::create_directories(kept);
  std::ofstream(kept / "notes.txt") << "mine";
  std::ofstream(kept / "mine.h") << "#pragma once\n";
  for (const std::string& o : std::vector<std::string>{kept.string(), kept.string() + "/.", ""}) {
    Result r = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 -o '" + o + "'");
    EXPECT_EQ(r.code, 1) << o << ": " << r.out;
  }
  fs::remove(kept / "notes.txt");
  Result header = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 -o " + kept.string());
  EXPECT_EQ(header.code, 1) << header.out;
  EXPECT_NE(header.out.find("is not an rtcgc export (it has no intact .rtcgc-export manifest of one)"),
            std::string::npos)
      << header.out;
  EXPECT_EQ(readText(kept / "mine.h"), "#pragma once\n");
  EXPECT_EQ(rtcgc("export " + example("axpby.rtcg") + " -D n=1000 -o /").code, 1);
}

// Issue 40, item 12: a directory that merely looked like an earlier export (cubins, and headers
// that start as rtcgc's do) was deleted. Only one whose manifest proves that rtcgc wrote every
// file in it, unchanged since, is replaced.
TEST(Export, OnlyADirectoryProvedToBeAnUntouchedExportIsReplaced) {
  const std::string gen = "// Generated by rtcgc export from my own generator\n";
  fs::path lookalike = scratch("lookalike");
  fs::create_directories(lookalike);
  std::ofstream(lookalike / "mine.sm_90.cubin") << "my cubin";
  std::ofstream(lookalike / "mine.h") << gen;
  const std::string axpby = "export " + example("axpby.rtcg") + " -D n=1000 --arch sm_90 -o ";
  Result r = rtcgc(axpby + lookalike.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("is not an rtcgc export"), std::string::npos) << r.out;
  EXPECT_EQ(readText(lookalike / "mine.sm_90.cubin"), "my cubin");
  EXPECT_EQ(readText(lookalike / "mine.h"), gen);

  // A real export, then a file of one's own beside it, then an edit of the header: both kept.
  fs::path out = scratch("proved");
  ASSERT_EQ(rtcgc(axpby + out.string()).code, 0);
  EXPECT_TRUE(fs::is_regular_file(out / ".rtcgc-export"));
  ASSERT_EQ(rtcgc(axpby + out.string()).code, 0) << "an untouched export is replaced";
  std::ofstream(out / "notes.sm_80.cubin") << "mine";
  r = rtcgc(axpby + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("holds 'notes.sm_80.cubin', which rtcgc export did not write there"), std::string::npos)
      << r.out;
  fs::remove(out / "notes.sm_80.cubin");
  std::ofstream(out / "axpby.h", std::ios::app) << "// my change\n";
  r = rtcgc(axpby + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("'axpby.h' of the export"), std::string::npos) << r.out;
  EXPECT_NE(readText(out / "axpby.h").find("// my change"), std::string::npos);
  // A manifest edited to claim a file is not one rtcgc wrote.
  fs::remove(out / "axpby.h");
  std::ofstream(out / ".rtcgc-export", std::ios::app) << "0123 extra.h\n";
  r = rtcgc(axpby + out.string());
  EXPECT_EQ(r.code, 1) << r.out;
}

TEST(Export, EmitTunedWithoutAScheduleSaysSo) {
  fs::path db = scratch("empty.sqlite");
  TuningDb{db.string()};  // an empty database
  Result r = rtcgc("emit " + example("axpby.rtcg") + " -D n=1000 --tuned --db " + db.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("no verified schedule for kernel 'axpby' (n=1000) for sm_90"), std::string::npos) << r.out;
}

TEST(Export, TunedTakesTheDatabasesBestAndSaysSo) {
  fs::path db = scratch("tuned.sqlite");
  Kernel k = proved("axpby.rtcg", {{"n", 1000}});
  std::string version = rtcgc("--version").out;  // "rtcgc 0.1.0"
  TuningKey key{kernelHashOf(k), "axpby", "n=1000", "NVIDIA Test GPU", "sm_80", 13000, "13.0",
                version.substr(6, version.find_first_of("\n") - 6)};
  CandidateRecord fast, slow;
  fast.schedule = "i: grid.x, thread.x 128, reg 2";
  fast.medianMs = 0.01;
  slow.schedule = "i: grid.x, thread.x 256";
  slow.medianMs = 0.02;
  {
    TuningDb tuning(db.string());
    tuning.record(key, slow);
    tuning.record(key, fast);
  }
  Result emit = rtcgc("emit " + example("axpby.rtcg") + " -D n=1000 --arch sm_80 --tuned --db " + db.string());
  ASSERT_EQ(emit.code, 0) << emit.out;
  EXPECT_NE(emit.out.find("schedule from the tuning database (NVIDIA Test GPU, sm_80, driver 13000, NVRTC 13.0; "
                          "0.0100 ms): i: grid.x, thread.x 128, reg 2"),
            std::string::npos)
      << emit.out;
  EXPECT_NE(emit.out.find("__global__"), std::string::npos);  // the CUDA C followed
  // Not tuned for sm_90: an error naming what was looked up.
  Result other = rtcgc("emit " + example("axpby.rtcg") + " -D n=1000 --tuned --db " + db.string());
  EXPECT_EQ(other.code, 1) << other.out;
  fs::path out = scratch("tuned");
  Result exported = rtcgc("export " + example("axpby.rtcg") + " -D n=1000 --arch sm_80 --tuned --db " + db.string() +
                          " -o " + out.string());
  ASSERT_EQ(exported.code, 0) << exported.out;
  EXPECT_NE(readText(out / "axpby.h").find("// sm_80: axpby.sm_80.cubin, schedule: i: grid.x, thread.x 128, reg 2"),
            std::string::npos);
}

namespace {

// Runs `bound` through the exported object `launch` calls, on the inputs of seed 1, and compares
// every output with the CPU reference.
template <class Launch>
void checkAgainstReference(const Kernel& bound, HostArgs host, Launch launch) {
  std::shared_ptr<cuda::Context> ctx = cuda::Context::primary(0);
  ctx->makeCurrent();
  HostArgs ref = host;
  ReferenceResult expected = runReference(bound, ref);
  DeviceArgs dargs(ctx, bound, host);
  std::vector<CUdeviceptr> pointers(bound.numSignatureParams(), 0);
  for (size_t p = 0; p < bound.numSignatureParams(); ++p)
    if (bound.params[p].isArray()) std::memcpy(&pointers[p], dargs.args()[p]->data(), 8);
  cuda::Stream stream(ctx);
  ASSERT_EQ(launch(pointers, stream.handle()), "");
  stream.synchronize();
  dargs.download(bound, host);
  for (const ReferenceOutput& o : expected.outputs) {
    Comparison c = compareWithReference(host.array(o.param), o);  // integers exactly
    EXPECT_TRUE(c.passes(1e-5)) << o.name << ": " << c.str();
  }
}

}  // namespace


TEST(Export, ExportedKernelsMatchTheReferenceOnTheGpu) {
  if (!cuda::cudaAvailable() || cuda::Device::count() == 0) GTEST_SKIP() << "no CUDA device";
  // Held for the test: the primary context is released (and destroyed) with its last owner.
  std::shared_ptr<cuda::Context> primary = cuda::Context::primary(0);
  primary->makeCurrent();
  rtcg_export::axpby axpby;
  ASSERT_EQ(axpby.load(RTCG_EXPORT_DIR "/axpby"), "");
  Kernel a = proved("axpby.rtcg", {{"n", 1000}});
  HostArgs args(a);
  fillInputs(a, args, 1);
  args.setScalar(1, 2.0);
  args.setScalar(3, -0.5);
  checkAgainstReference(a, args, [&](const std::vector<CUdeviceptr>& p, CUstream s) {
    return axpby.launch(2.0f, p[2], -0.5f, p[4], p[5], s);
  });
  rtcg_export::matmul matmul;
  ASSERT_EQ(matmul.load(RTCG_EXPORT_DIR "/matmul"), "");
  Kernel m = proved("matmul.rtcg", {{"n", 100}});
  HostArgs margs(m);
  fillInputs(m, margs, 1);
  checkAgainstReference(m, margs, [&](const std::vector<CUdeviceptr>& p, CUstream s) {
    return matmul.launch(p[1], p[2], p[3], s);
  });
}

TEST(Export, ExportedLaunchChecksItsArrays) {
  if (!cuda::cudaAvailable() || cuda::Device::count() == 0) GTEST_SKIP() << "no CUDA device";
  std::shared_ptr<cuda::Context> ctx = cuda::Context::primary(0);
  ctx->makeCurrent();
  rtcg_export::axpby axpby;
  EXPECT_NE(axpby.launch(1.0f, 0, 1.0f, 0, 0, nullptr).find("launch before a successful load"), std::string::npos);
  ASSERT_EQ(axpby.load(RTCG_EXPORT_DIR "/axpby"), "");
  cuda::DeviceBuffer big(ctx, 1000 * 4);
  CUdeviceptr b = big.devicePtr();
  // 2048 bytes into a 4000-byte allocation (however the driver rounds it): too short for z's 4000.
  std::string shortArray = axpby.launch(1.0f, b, 1.0f, b, b + 2048, nullptr);
  EXPECT_NE(shortArray.find("array 'z' needs 4000 bytes, but its allocation has "), std::string::npos)
      << shortArray;
  EXPECT_EQ(axpby.launch(1.0f, b, 1.0f, b, b, nullptr), "");
  ctx->synchronize();
  std::string misaligned = axpby.launch(1.0f, b + 4, 1.0f, b, b, nullptr);
  EXPECT_NE(misaligned.find("array 'x' is not 16-byte aligned"), std::string::npos) << misaligned;
}
