// rtcg-scan end to end on the C++ fixtures in tests/scan/fixtures: each bad_*.cpp must give exactly
// the diagnostics in its .expected file (exit status 1); good.cpp none, and its manifest.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

namespace {

const std::string kFixtures = RTCG_SOURCE_DIR "/tests/scan/fixtures/";

struct ScanRun {
  int status = -1;
  std::string output;  // stdout and stderr, with the fixture directory removed from paths
};

ScanRun scan(const std::string& file, const std::string& options = "") {
  std::string command = std::string(RTCG_SCAN_EXE) + " " + options + " " + kFixtures + file +
                        " -- -std=c++20 -I" RTCG_SOURCE_DIR "/include 2>&1";
  ScanRun run;
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return run;
  std::array<char, 4096> buffer;
  size_t n;
  while ((n = fread(buffer.data(), 1, buffer.size(), pipe)) > 0) run.output.append(buffer.data(), n);
  int status = pclose(pipe);
  run.status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  for (size_t at; (at = run.output.find(kFixtures)) != std::string::npos;) run.output.erase(at, kFixtures.size());
  return run;
}

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class BadFixture : public testing::TestWithParam<const char*> {};

TEST_P(BadFixture, GivesExactlyTheExpectedDiagnostics) {
  std::string name = GetParam();
  ScanRun run = scan(name + ".cpp");
  EXPECT_EQ(run.status, 1);
  EXPECT_EQ(run.output, readFile(kFixtures + name + ".expected"));
}

INSTANTIATE_TEST_SUITE_P(Fixtures, BadFixture,
                         testing::Values("bad_raw", "bad_escapes", "bad_concat", "bad_bounds", "bad_calls", "bad_half"));

TEST(ScanTool, AcceptsGoodKernelsAndWritesTheManifest) {
  std::string manifestPath = testing::TempDir() + "rtcg_scan_manifest.json";
  std::filesystem::remove(manifestPath);
  ScanRun run = scan("good.cpp", "--manifest " + manifestPath);
  EXPECT_EQ(run.status, 0) << run.output;
  EXPECT_EQ(run.output, "");

  nlohmann::json m = nlohmann::json::parse(readFile(manifestPath));
  EXPECT_EQ(m["version"], 1);
  const nlohmann::json& kernels = m["kernels"];
  ASSERT_EQ(kernels.size(), 4u);
  EXPECT_EQ(kernels[0]["file"], kFixtures + "good.cpp");
  EXPECT_EQ(kernels[0]["line"], 23);
  EXPECT_EQ(kernels[0]["column"], 20);
  EXPECT_EQ(kernels[0]["kernels"], nlohmann::json::array({"scale"}));
  EXPECT_EQ(kernels[0]["variable"], "scale");
  EXPECT_EQ(kernels[0]["sizes"], nlohmann::json({{"n", 1000}}));
  EXPECT_EQ(kernels[0]["sizesConstant"], true);

  // A constexpr char array built from concatenated literals with escapes, sizes from an expression.
  EXPECT_EQ(kernels[1]["kernel"], "copy");
  EXPECT_EQ(kernels[1]["source"], "kernel copy(n: int, x: f64[n], out y: f64[n]) {\n  for i in 0..n { y[i] = x[i]; }\n}\n");
  EXPECT_EQ(kernels[1]["sizes"], nlohmann::json({{"n", 2000}}));

  EXPECT_EQ(kernels[2]["kernel"], "dot");
  EXPECT_EQ(kernels[2]["line"], 31);

  // Sizes from a run-time value: recorded as not constant.
  EXPECT_EQ(kernels[3]["variable"], "late");
  EXPECT_EQ(kernels[3]["sizesConstant"], false);
  EXPECT_EQ(kernels[3]["sizes"], nlohmann::json::object());
  EXPECT_EQ(kernels[3]["errors"], 0);
}

TEST(ScanTool, ANonUtf8ByteInADslCommentKeepsTheManifestValid) {
  // nlohmann::json refused to dump it (SIGABRT), after the manifest had been truncated to 0 bytes.
  std::string manifestPath = testing::TempDir() + "rtcg_scan_latin1.json";
  std::ofstream(manifestPath) << "{\"version\": 1, \"kernels\": []}\n";
  ScanRun run = scan("latin1_comment.cpp", "--manifest " + manifestPath);
  EXPECT_EQ(run.status, 0) << run.output;
  nlohmann::json m = nlohmann::json::parse(readFile(manifestPath));
  ASSERT_EQ(m["kernels"].size(), 1u);
  EXPECT_EQ(m["kernels"][0]["kernel"], "copy");
  // The byte becomes U+FFFD; comments do not change the kernel (its hash is structural).
  EXPECT_EQ(m["kernels"][0]["source"].get<std::string>().rfind("// copie (caf\xef\xbf\xbd)\n", 0), 0u);
}

TEST(ScanTool, WithoutADatabaseOrFlagsItSaysWhatToGive) {
  std::string command = std::string(RTCG_SCAN_EXE) + " " + kFixtures + "good.cpp 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  ASSERT_NE(pipe, nullptr);
  std::array<char, 512> buffer{};
  size_t n = fread(buffer.data(), 1, buffer.size() - 1, pipe);
  int status = pclose(pipe);
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_NE(std::string(buffer.data(), n).find("-p DIR"), std::string::npos);
}

TEST(ScanTool, CommandLineErrorsExitTwoAndHelpZero) {
  EXPECT_EQ(scan("good.cpp", "--no-such-flag").status, 2);  // CLI11 alone would exit 109
  EXPECT_EQ(scan("good.cpp", "--help").status, 0);
}

}  // namespace
