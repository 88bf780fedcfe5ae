// rtcgc against hostile input and environments (the "every stage fuzzed" issue): each test is the
// regression test of one defect, and asserts a clear error with a location and the exit codes of
// docs/rtcgc.md (1 user error, 2 bad command line, never a crash or 70).
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace fs = std::filesystem;

namespace {

struct Result {
  int code = -1;     // exit status; -1 when killed by a signal
  std::string out;   // stderr (and stdout unless `redirect` sends it elsewhere)
};

// Runs `rtcgc ARGS` with stderr captured, then `redirect` applied (e.g. "> /dev/full").
Result rtcgc(const std::string& args, const std::string& redirect = "") {
  std::string cmd = std::string(RTCGC_PATH) + " " + args + " 2>&1 " + redirect;
  Result r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  int status = pclose(p);
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

fs::path tempDir() {
  fs::path d = fs::temp_directory_path() / ("rtcgc-hostile-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string writeTemp(const std::string& name, const std::string& text) {
  fs::path p = tempDir() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::string head(const std::string& s) { return s.substr(0, 2000); }

const char* kCopy = "kernel copy(n: int, x: f32[n], out y: f32[n]) {\n  for i in 0..n { y[i] = x[i]; }\n}\n";

}  // namespace

// 1. A 30 000-character kernel name crashed rtcgc (a recursive std::regex over ptxas's log).
TEST(Hostile, HugeIdentifierIsRefusedWithACaret) {
  std::string f = writeTemp("long.rtcg", "kernel " + std::string(30000, 'k') +
                                             "(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = x[i]; } }\n");
  fs::path cubin = tempDir() / "long.cubin";
  Result r = rtcgc("emit " + f + " -D n=8 --cubin -o " + cubin.string());
  EXPECT_EQ(r.code, 1) << head(r.out);
  EXPECT_NE(r.out.find("long.rtcg:1:8: error: identifier is 30000 characters long; the limit is 255"), std::string::npos)
      << head(r.out);
  EXPECT_FALSE(fs::exists(cubin));
}
