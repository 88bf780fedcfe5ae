// `rtcgc tune --manifest`: reading and validating rtcg-scan's manifest (exact messages), the plan
// (skipped entries with their reasons, invalid ones, duplicates tuned once), the command line
// (exclusive options, exit codes with and without a GPU, nothing written for a bad manifest), and on
// a GPU the whole path: tune a manifest ahead of time, then Context::compile with the default
// policy starts with the tuned schedule.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <string>

#include "ManifestTune.h"
#include "driver/KernelBuild.h"
#include "rtcg/rtcg.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "tune/TempDir.h"
#include "tune/TuningDb.h"
#include "tune/TuningKeyFor.h"

namespace fs = std::filesystem;
using rtcg::testing::TempDir;
using namespace rtcg::manifest;
using nlohmann::json;

namespace {

const char* kScale = "kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) {\n"
                     "  for i in 0..n { y[i] = alpha * x[i]; }\n"
                     "}\n";

// Two kernels in one source: the manifest names the one compile() uses.
const char* kTwo = "kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {\n"
                   "  for i in 0..n, j in 0..n { c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]); }\n"
                   "}\n"
                   "kernel scale(n: int, alpha: f32, x: f32[n], out y: f32[n]) {\n"
                   "  for i in 0..n { y[i] = alpha * x[i]; }\n"
                   "}\n";

// A manifest entry as rtcg-scan writes it.
json entry(const std::string& file, int line, int column, const std::string& source, json sizes,
           std::optional<std::string> kernel, bool sizesConstant = true, int errors = 0) {
  json j = {{"file", file},     {"line", line},   {"column", column}, {"source", source},
            {"sizes", sizes},   {"sizesConstant", sizesConstant},     {"errors", errors},
            {"kernels", json::array()}};
  if (kernel) {
    j["kernel"] = *kernel;
    j["kernels"].push_back(*kernel);
  }
  return j;
}

json manifestOf(std::vector<json> entries) { return {{"version", 1}, {"kernels", entries}}; }

// The ManifestError message parseManifest gives for `text`, or "<parsed>".
std::string errorOf(const std::string& text) {
  try {
    parseManifest("m.json", text);
  } catch (const ManifestError& e) {
    return e.what();
  }
  return "<parsed>";
}

struct Result {
  int code = -1;
  std::string out, err;
};

std::string readFile(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Runs rtcgc with `args` (shell words) and `env` (VAR=value words) in front.
Result rtcgc(const std::string& args, const std::string& env = "") {
  static int counter = 0;
  fs::path dir = fs::temp_directory_path() / ("rtcgc-manifest-io-" + std::to_string(getpid()));
  fs::create_directories(dir);
  fs::path out = dir / ("out" + std::to_string(counter)), err = dir / ("err" + std::to_string(counter++));
  std::string cmd = "env " + env + " " + RTCGC_PATH + " " + args + " >" + out.string() + " 2>" + err.string();
  int status = std::system(cmd.c_str());
  Result r;
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = readFile(out);
  r.err = readFile(err);
  fs::remove_all(dir);
  return r;
}

std::string write(const TempDir& dir, const std::string& name, const std::string& text) {
  std::string path = dir.file(name);
  std::ofstream(path) << text;
  return path;
}

bool gpuPresent() { return rtcg::cuda::cudaAvailable(); }

}  // namespace

// ---- parsing and validation ----------------------------------------------------------------------

TEST(ManifestParse, ReadsEveryField) {
  json m = manifestOf({entry("/src/app.cpp", 13, 35, kTwo, {{"n", 64}}, "matmul")});
  m["kernels"][0]["variable"] = "mm";
  m["kernels"][0]["kernels"] = {"matmul", "scale"};
  std::vector<Entry> entries = parseManifest("m.json", m.dump());
  ASSERT_EQ(entries.size(), 1u);
  const Entry& e = entries[0];
  EXPECT_EQ(e.manifestPath, "m.json");
  EXPECT_EQ(e.index, 0u);
  EXPECT_EQ(e.file, "/src/app.cpp");
  EXPECT_EQ(e.line, 13);
  EXPECT_EQ(e.column, 35);
  EXPECT_EQ(e.location(), "/src/app.cpp:13:35");
  EXPECT_EQ(e.variable, "mm");
  EXPECT_EQ(e.kernels, (std::vector<std::string>{"matmul", "scale"}));
  EXPECT_EQ(e.kernel, "matmul");
  EXPECT_EQ(e.source, kTwo);
  ASSERT_TRUE(e.sizes);
  EXPECT_EQ(e.sizes->at("n"), 64);
  EXPECT_TRUE(e.sizesConstant);
  EXPECT_EQ(e.errors, 0);
}

TEST(ManifestParse, OptionalFieldsMayBeAbsentOrNull) {
  json e = entry("app.cpp", 1, 2, kScale, nullptr, std::nullopt, false);
  e.erase("kernels");
  std::vector<Entry> entries = parseManifest("m.json", manifestOf({e}).dump());
  ASSERT_EQ(entries.size(), 1u);
  EXPECT_FALSE(entries[0].kernel);
  EXPECT_FALSE(entries[0].sizes);
  EXPECT_TRUE(entries[0].kernels.empty());
  EXPECT_TRUE(parseManifest("m.json", R"({"version": 1, "kernels": []})").empty());
}

TEST(ManifestParse, TopLevelErrors) {
  EXPECT_EQ(errorOf("[]"), R"(m.json: error: expected a JSON object {"version": 1, "kernels": [...]}, got array)");
  EXPECT_EQ(errorOf("{}"), R"(m.json: error: missing "version" (this rtcgc reads manifest version 1))");
  EXPECT_EQ(errorOf(R"({"version": "1", "kernels": []})"), R"(m.json: error: "version" must be an integer, got string "1")");
  EXPECT_EQ(errorOf(R"({"version": 2, "kernels": []})"),
            "m.json: error: manifest version 2 is not supported (this rtcgc reads version 1)");
  EXPECT_EQ(errorOf(R"({"version": 1})"), R"(m.json: error: missing "kernels")");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": {}})"), R"(m.json: error: "kernels" must be an array, got object)");
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": [3]})"), "m.json: error: kernels[0]: expected an object, got number 3");
}

TEST(ManifestParse, NotJson) {
  std::string e = errorOf("{\"version\": 1,");
  EXPECT_EQ(e.rfind("m.json: error: not valid JSON: parse error at line 1, column 15", 0), 0u) << e;
  e = errorOf("");
  EXPECT_EQ(e.rfind("m.json: error: not valid JSON: ", 0), 0u) << e;
  // Found by the manifest fuzzer: a number past the largest double threw json's out_of_range,
  // which was not caught (tune --manifest: exit 70, "internal error").
  EXPECT_EQ(errorOf(R"({"version": 1, "kernels": [7e777]})"),
            "m.json: error: not valid JSON: number overflow parsing '7e777'");
}

TEST(ManifestParse, EntryErrorsNameTheEntryAndItsLocation) {
  json e = entry("app.cpp", 9, 3, kScale, {{"n", 100}}, "scale");
  auto without = [&](const char* key) {
    json copy = e;
    copy.erase(key);
    return errorOf(manifestOf({copy}).dump());
  };
  EXPECT_EQ(without("source"), R"(m.json: error: kernels[0] (app.cpp:9:3): missing "source")");
  EXPECT_EQ(without("sizesConstant"), R"(m.json: error: kernels[0] (app.cpp:9:3): missing "sizesConstant")");
  EXPECT_EQ(without("errors"), R"(m.json: error: kernels[0] (app.cpp:9:3): missing "errors")");
  EXPECT_EQ(without("file"), R"(m.json: error: kernels[0]: missing "file")");  // no location without a file
  EXPECT_EQ(without("line"), R"(m.json: error: kernels[0]: missing "line")");

  auto with = [&](const char* key, json value, size_t at = 0) {
    json copy = e;
    copy[key] = value;
    std::vector<json> entries{e, e};
    entries[at] = copy;
    return errorOf(manifestOf(entries).dump());
  };
  EXPECT_EQ(with("line", "9"), R"(m.json: error: kernels[0]: "line" must be a positive integer, got string "9")");
  EXPECT_EQ(with("column", 0), R"(m.json: error: kernels[0]: "column" must be a positive integer, got number 0)");
  EXPECT_EQ(with("file", 7), R"(m.json: error: kernels[0]: "file" must be a string, got number 7)");
  EXPECT_EQ(with("source", json::array(), 1),
            R"(m.json: error: kernels[1] (app.cpp:9:3): "source" must be a string, got array)");
  EXPECT_EQ(with("sizesConstant", "yes"),
            R"(m.json: error: kernels[0] (app.cpp:9:3): "sizesConstant" must be true or false, got string "yes")");
  EXPECT_EQ(with("errors", -1),
            R"(m.json: error: kernels[0] (app.cpp:9:3): "errors" must be a count (an integer >= 0), got number -1)");
  EXPECT_EQ(with("sizes", json::array({1})),
            R"(m.json: error: kernels[0] (app.cpp:9:3): "sizes" must be an object of sizes ({"n": 500}), got array)");
  EXPECT_EQ(with("sizes", {{"n", 1.5}}),
            R"(m.json: error: kernels[0] (app.cpp:9:3): size "n" must be an integer, got number 1.5)");
  EXPECT_EQ(with("kernel", ""), R"(m.json: error: kernels[0] (app.cpp:9:3): "kernel" must be a kernel name, got string "")");
  EXPECT_EQ(with("kernels", json::array({"a", 1})),
            R"(m.json: error: kernels[0] (app.cpp:9:3): "kernels" must be an array of kernel names, got number 1)");
  EXPECT_EQ(with("variable", false),
            R"(m.json: error: kernels[0] (app.cpp:9:3): "variable" must be a string, got boolean false)");
}

TEST(ManifestParse, UnreadableFile) {
  try {
    readManifest("/nonexistent/kernels.json");
    FAIL() << "no error";
  } catch (const ManifestError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/kernels.json: error: cannot read the manifest: No such file or directory");
  }
}

// ---- the plan ------------------------------------------------------------------------------------

std::vector<Planned> planOf(std::vector<json> entries) {
  return plan(parseManifest("m.json", manifestOf(std::move(entries)).dump()));
}

TEST(ManifestPlan, SkipsWithAReasonEach) {
  json multi = entry("b.cpp", 2, 5, kTwo, {{"n", 8}}, std::nullopt);
  multi["kernels"] = {"matmul", "scale"};
  std::vector<Planned> p = planOf({
      entry("a.cpp", 1, 1, kScale, {{"n", 100}}, "scale", true, 2),           // errors
      multi,                                                                   // which kernel?
      entry("c.cpp", 3, 7, kScale, nullptr, "scale", false),                   // no sizes
      entry("d.cpp", 4, 9, kScale, json::object(), "scale", false),            // sizes at run time
      entry("e.cpp", 5, 11, kScale, {{"n", 100}}, "scale", true, 1),           // one error
  });
  ASSERT_EQ(p.size(), 5u);
  for (const Planned& x : p) EXPECT_EQ(x.outcome, Outcome::Skipped) << x.entry.location();
  EXPECT_EQ(p[0].reason, "rtcg-scan found 2 errors in it");
  EXPECT_EQ(p[1].reason, "the scan could not tell which of its kernels (matmul, scale) compile() uses");
  EXPECT_EQ(p[2].reason, "no sizes in the manifest");
  EXPECT_EQ(p[3].reason, "its sizes are not all compile-time constants (known only at run time)");
  EXPECT_EQ(p[4].reason, "rtcg-scan found 1 error in it");
  EXPECT_EQ(p[0].sizes, "n=100");
  EXPECT_EQ(p[2].sizes, "-");
  EXPECT_FALSE(p[0].bound);
}

TEST(ManifestPlan, InvalidKernelsFailWithTheFirstError) {
  std::vector<Planned> p = planOf({entry("a.cpp", 1, 1, kScale, {{"m", 100}}, "scale"),
                                   entry("b.cpp", 2, 2, kScale, {{"n", 100}}, "nosuch")});
  ASSERT_EQ(p.size(), 2u);
  EXPECT_EQ(p[0].outcome, Outcome::Invalid);
  EXPECT_EQ(p[0].reason.rfind("does not compile with these sizes: ", 0), 0u) << p[0].reason;
  EXPECT_NE(p[0].diagnostics.find("<kernel at a.cpp:1:1>"), std::string::npos) << p[0].diagnostics;
  EXPECT_EQ(p[1].outcome, Outcome::Invalid);
  EXPECT_NE(p[1].reason.find("nosuch"), std::string::npos) << p[1].reason;
}

TEST(ManifestPlan, DuplicatesAreTunedOnce) {
  std::string respaced = std::string("// the same kernel, spelled differently\n") + kScale;
  std::vector<Planned> p = planOf({
      entry("a.cpp", 1, 1, kScale, {{"n", 100}}, "scale"),
      entry("b.cpp", 2, 2, kScale, {{"n", 100}}, "scale"),    // the same source and sizes
      entry("c.cpp", 3, 3, kScale, {{"n", 200}}, "scale"),    // other sizes: another key
      entry("d.cpp", 4, 4, respaced, {{"n", 100}}, "scale"),  // the same structure: the same key
      entry("e.cpp", 5, 5, kTwo, {{"n", 100}}, "scale"),      // picked from a multi-kernel source
  });
  ASSERT_EQ(p.size(), 5u);
  EXPECT_EQ(p[0].outcome, Outcome::Tune);
  EXPECT_EQ(p[1].outcome, Outcome::Duplicate);
  EXPECT_EQ(p[1].reason, "the same kernel and sizes as a.cpp:1:1 (tuned once)");
  EXPECT_EQ(p[2].outcome, Outcome::Tune);
  EXPECT_EQ(p[3].outcome, Outcome::Duplicate);
  EXPECT_EQ(p[4].outcome, Outcome::Duplicate);
  EXPECT_EQ(p[4].reason, "the same kernel and sizes as a.cpp:1:1 (tuned once)");
  EXPECT_EQ(p[0].kernelHash, p[1].kernelHash);
  EXPECT_NE(p[0].kernelHash, p[2].kernelHash);
  ASSERT_TRUE(p[0].bound);
  EXPECT_EQ(p[0].bound->name, "scale");
  EXPECT_EQ(p[0].sizes, "n=100");
}

TEST(ManifestPlan, TunesTheKernelContextCompileLooksUp) {
  // The plan's kernel is what Context::compile(source, sizes, {.kernel = ...}) binds: equal hashes
  // (the tuning key's kernel part), whatever the file name in diagnostics.
  std::vector<Planned> p = planOf({entry("/elsewhere/app.cpp", 40, 12, kTwo, {{"n", 64}}, "matmul")});
  ASSERT_EQ(p.size(), 1u);
  ASSERT_EQ(p[0].outcome, Outcome::Tune) << p[0].reason;
  rtcg::CompileOptions options;
  options.kernel = "matmul";
  rtcg::Kernel target = rtcg::tuningTarget(kTwo, {{"n", 64}}, options);
  EXPECT_EQ(p[0].kernelHash, rtcg::kernelHashOf(target));
  EXPECT_EQ(p[0].bound->name, target.name);
  EXPECT_EQ(p[0].sizes, rtcg::sizesText(target));
  EXPECT_EQ(rtcg::kernelHashOf(*p[0].bound), rtcg::kernelHashOf(target));
}

// ---- the command line ----------------------------------------------------------------------------

TEST(ManifestCli, UsageErrorsExitTwo) {
  TempDir dir;
  std::string m = write(dir, "kernels.json", manifestOf({}).dump());
  std::string rtcg = write(dir, "k.rtcg", kScale);
  Result both = rtcgc("tune " + rtcg + " --manifest " + m);
  EXPECT_EQ(both.code, 2) << both.err;
  EXPECT_EQ(both.err, "rtcgc: error: tune takes either a DSL FILE or --manifest, not both\n");
  Result after = rtcgc("tune --manifest " + m + " " + rtcg);
  EXPECT_EQ(after.code, 2) << after.err;
  Result defines = rtcgc("tune --manifest " + m + " -D n=3");
  EXPECT_EQ(defines.code, 2) << defines.err;
  EXPECT_EQ(defines.err, "rtcgc: error: -D and --kernel do not apply to --manifest: the manifest gives each kernel "
                         "and its sizes\n");
  EXPECT_EQ(rtcgc("tune --manifest " + m + " --kernel scale").code, 2);
  Result neither = rtcgc("tune");
  EXPECT_EQ(neither.code, 2);
  EXPECT_EQ(neither.err, "rtcgc: error: tune needs a DSL FILE with -D sizes, or --manifest FILE\n");
}

TEST(ManifestCli, MalformedManifestExitsOneAndWritesNothing) {
  TempDir dir;
  std::string cache = dir.file("cache");
  std::string env = "RTCG_CACHE_DIR=" + cache;
  json bad = entry("app.cpp", 9, 3, kScale, {{"n", 100}}, "scale");
  bad["errors"] = "none";
  std::string m = write(dir, "kernels.json", manifestOf({entry("app.cpp", 1, 1, kScale, {{"n", 10}}, "scale"), bad}).dump());
  Result r = rtcgc("tune --manifest " + m, env);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_EQ(r.err, m + ": error: kernels[1] (app.cpp:9:3): \"errors\" must be a count (an integer >= 0), got string "
                       "\"none\"\n");
  EXPECT_FALSE(fs::exists(cache)) << "a malformed manifest must leave the cache directory alone";

  // A good manifest and a bad one: nothing runs (the bad one is read before any tuning).
  std::string good = write(dir, "good.json", manifestOf({entry("app.cpp", 1, 1, kScale, {{"n", 10}}, "scale")}).dump());
  std::string notJson = write(dir, "bad.json", "{\"version\": 1, \"kernels\": [");
  Result two = rtcgc("tune --manifest " + good + " --manifest " + notJson + " --db " + dir.file("t.sqlite"), env);
  EXPECT_EQ(two.code, 1) << two.err;
  EXPECT_EQ(two.err.rfind(notJson + ": error: not valid JSON: ", 0), 0u) << two.err;
  EXPECT_FALSE(fs::exists(dir.file("t.sqlite")));
  EXPECT_FALSE(fs::exists(cache));

  Result missing = rtcgc("tune --manifest " + dir.file("none.json"), env);
  EXPECT_EQ(missing.code, 1);
  EXPECT_EQ(missing.err, dir.file("none.json") + ": error: cannot read the manifest: No such file or directory\n");
}

TEST(ManifestCli, WithoutAGpuValidatesThenExitsFour) {
  if (gpuPresent()) GTEST_SKIP() << "a CUDA device is present";
  TempDir dir;
  std::string db = dir.file("t.sqlite");
  std::string m = write(dir, "kernels.json",
                        manifestOf({entry("/src/app.cpp", 13, 35, kScale, {{"n", 100}}, "scale"),
                                    entry("/src/app.cpp", 20, 7, kScale, json::object(), "scale", false),
                                    entry("/src/other.cpp", 5, 1, kScale, {{"n", 100}}, "scale")})
                            .dump());
  Result r = rtcgc("tune --manifest " + m + " --db " + db + " --max-candidates 4 --time-limit 5");
  EXPECT_EQ(r.code, 4) << r.err;
  EXPECT_NE(r.err.find("rtcgc tune: /src/app.cpp:20:7: skipped: its sizes are not all compile-time constants (known "
                       "only at run time)\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rtcgc tune: /src/other.cpp:5:1: duplicate: the same kernel and sizes as /src/app.cpp:13:35 "
                       "(tuned once)\n"),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("rtcgc tune: 3 kernels in the manifest, 1 to tune\n"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("rtcgc: error: no CUDA"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(db));
}

TEST(ManifestCli, NothingToTuneNeedsNoGpuAndPrintsTheTable) {
  TempDir dir;
  std::string m = write(dir, "kernels.json",
                        manifestOf({entry("/src/app.cpp", 13, 35, kScale, {{"n", 100}}, "scale", true, 1),
                                    entry("/src/b.cpp", 2, 4, kScale, nullptr, "scale", false)})
                            .dump());
  Result r = rtcgc("tune --manifest " + m + " --db " + dir.file("t.sqlite"));
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("manifest: 2 kernels: 0 tuned, 2 skipped, 0 duplicate, 0 failed; database: " +
                       dir.file("t.sqlite")),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  kernel  location            sizes  outcome\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("  scale   /src/app.cpp:13:35  n=100  skipped: rtcg-scan found 1 error in it\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("  scale   /src/b.cpp:2:4      -      skipped: no sizes in the manifest\n"), std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(dir.file("t.sqlite")));

  Result j = rtcgc("tune --json --manifest " + m + " --db -");
  ASSERT_EQ(j.code, 0) << j.err;
  json out = json::parse(j.out);
  EXPECT_EQ(out["database"], "none");
  ASSERT_EQ(out["kernels"].size(), 2u);
  EXPECT_EQ(out["kernels"][0]["outcome"], "skipped");
  EXPECT_EQ(out["kernels"][0]["reason"], "rtcg-scan found 1 error in it");
  EXPECT_EQ(out["kernels"][0]["file"], "/src/app.cpp");
  EXPECT_EQ(out["kernels"][0]["line"], 13);
  EXPECT_EQ(out["kernels"][1]["sizes"], "-");
}

TEST(ManifestCli, AnInvalidKernelFailsWithExitOne) {
  TempDir dir;
  std::string m = write(dir, "kernels.json",
                        manifestOf({entry("/src/app.cpp", 13, 35, kScale, {{"m", 100}}, "scale")}).dump());
  Result r = rtcgc("tune --manifest " + m + " --db -");
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("rtcgc tune: /src/app.cpp:13:35: failed: does not compile with these sizes: "),
            std::string::npos)
      << r.err;
  EXPECT_NE(r.out.find("0 tuned, 0 skipped, 0 duplicate, 1 failed"), std::string::npos) << r.out;
}

// ---- on a GPU: tuned ahead of time, used by Context::compile ------------------------------------

TEST(ManifestGpu, ContextCompileStartsWithTheTunedSchedule) {
  if (!gpuPresent()) GTEST_SKIP() << "no CUDA: " << rtcg::cuda::unavailableReason();
  TempDir dir;
  std::string cache = dir.file("cache");
  // Both rtcgc (its default database) and this process's Context read the cache directory's.
  const char* old = std::getenv("RTCG_CACHE_DIR");
  std::optional<std::string> saved = old ? std::optional<std::string>(old) : std::nullopt;
  setenv("RTCG_CACHE_DIR", cache.c_str(), 1);
  struct Restore {
    std::optional<std::string> v;
    ~Restore() { v ? (void)setenv("RTCG_CACHE_DIR", v->c_str(), 1) : (void)unsetenv("RTCG_CACHE_DIR"); }
  } restore{saved};

  // The file paths are another machine's: they do not matter for tuning.
  std::string m = write(dir, "kernels.json",
                        manifestOf({entry("/build-machine/app.cpp", 21, 30, kTwo, {{"n", 64}}, "matmul"),
                                    entry("/build-machine/app.cpp", 40, 9, kTwo, {{"n", 64}}, "matmul")})
                            .dump());
  Result r = rtcgc("tune --manifest " + m + " --max-candidates 6 --time-limit 20 --worker " RTCG_WORKER_EXE);
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("1 tuned, 0 skipped, 1 duplicate, 0 failed"), std::string::npos) << r.out;

  rtcg::CompileOptions options;  // the default policy: UseCached
  options.kernel = "matmul";
  rtcg::Context ctx;
  rtcg::CompiledKernel k = ctx.compile(kTwo, {{"n", 64}}, options);
  EXPECT_EQ(k.scheduleOrigin(), "tuning database");

  rtcg::cuda::Device device(0);
  rtcg::TuningKey key = rtcg::tuningKeyFor(rtcg::tuningTarget(kTwo, {{"n", 64}}, options), device.properties());
  rtcg::TuningDb db(cache + "/tuning.sqlite");
  std::optional<rtcg::CandidateRecord> best = db.best(key);
  ASSERT_TRUE(best);
  EXPECT_EQ(k.scheduleText(), best->schedule);
  EXPECT_NE(r.out.find(best->schedule), std::string::npos) << r.out;

  // It computes the right thing with that schedule.
  const int n = 64;
  std::vector<float> a(n * n), b(n * n), c(n * n);
  for (int i = 0; i < n * n; ++i) a[i] = float(i % 7) - 3, b[i] = float(i % 5) - 2;
  k(a, b, c);
  for (int i = 0; i < n; i += 9)
    for (int j = 0; j < n; j += 7) {
      double ref = 0;
      for (int q = 0; q < n; ++q) ref += double(a[i * n + q]) * b[q * n + j];
      EXPECT_NEAR(c[i * n + j], ref, 1e-3) << i << "," << j;
    }
}
