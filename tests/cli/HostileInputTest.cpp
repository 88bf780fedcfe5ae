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
#include <regex>
#include <sstream>
#include <string>

#include "Shell.h"

namespace fs = std::filesystem;

namespace {

using Result = rtcg::tests::ShellResult;
using rtcg::tests::shell;

// Runs `rtcgc ARGS` with stderr captured, then `redirect` applied (e.g. "> /dev/full").
Result rtcgc(const std::string& args, const std::string& redirect = "") {
  return shell(std::string(RTCGC_PATH) + " " + args + " 2>&1 " + redirect);
}

mode_t modeOf(const fs::path& p) {
  struct stat st {};
  ::stat(p.c_str(), &st);
  return st.st_mode & 07777;
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

// 3. `-o` renamed a temporary over whatever the path named: a device node (as root, /dev/full
// became a regular file), a symbolic link (replaced, not written through), always mode 0644.
TEST(Hostile, OutputIsNeverRenamedOverADeviceFifoOrDirectory) {
  std::string f = writeTemp("copy.rtcg", kCopy);
  fs::path fifo = tempDir() / "fifo.cu", dir = tempDir() / "adir";
  ::unlink(fifo.c_str());
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0644), 0);
  fs::create_directories(dir);
  Result r = rtcgc("emit " + f + " -D n=8 -o " + fifo.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("cannot write '" + fifo.string() + "': it is not a regular file"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_fifo(fifo));
  r = rtcgc("emit " + f + " -D n=8 -o " + dir.string());
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("it is a directory"), std::string::npos) << r.out;
  EXPECT_TRUE(fs::is_directory(dir));
  for (const auto& e : fs::directory_iterator(tempDir()))
    EXPECT_NE(e.path().filename().string()[0], '.') << "temporary left behind: " << e.path();
}

TEST(Hostile, OutputIsWrittenThroughASymbolicLink) {
  std::string f = writeTemp("copy.rtcg", kCopy);
  fs::path real = tempDir() / "real.cu", link = tempDir() / "link.cu";
  fs::remove(link);
  std::ofstream(real) << "old";
  fs::create_symlink("real.cu", link);  // relative, as `ln -s` makes them
  Result r = rtcgc("emit " + f + " -D n=8 -o " + link.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(fs::is_symlink(link));
  std::ifstream in(real);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("__global__"), std::string::npos) << text;
}

TEST(Hostile, OutputModeFollowsTheUmaskAndAReplacedFileKeepsItsMode) {
  std::string f = writeTemp("copy.rtcg", kCopy);
  fs::path fresh = tempDir() / "fresh.cu", kept = tempDir() / "kept.cu";
  fs::remove(fresh);
  Result r = shell("umask 077 && " + std::string(RTCGC_PATH) + " emit " + f + " -D n=8 -o " + fresh.string() + " 2>&1");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(modeOf(fresh), 0600u);
  std::ofstream(kept) << "old";
  fs::permissions(kept, fs::perms(0640));
  r = rtcgc("emit " + f + " -D n=8 -o " + kept.string());
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(modeOf(kept), 0640u);
}

// 4. Every error echoed its whole line and errors were uncapped: a 289 KB program of them ran out
// of memory (exit 70), a 55 KB one printed 328 MB.
TEST(Hostile, ManyErrorsOnALongLineGiveAScreenful) {
  std::string line = "kernel k(n: int, x: f32[n], out y: f32[n]) { for i in 0..n {";
  while (line.size() < 289 * 1024) line += " y[i] = q;";
  std::string f = writeTemp("many.rtcg", line + " } }\n");
  Result r = rtcgc("check " + f);
  EXPECT_EQ(r.code, 1) << head(r.out);
  EXPECT_NE(r.out.find("many.rtcg:1:69: error: unknown name 'q'"), std::string::npos) << head(r.out);
  EXPECT_NE(r.out.find("note: too many errors; only the first 50 are shown"), std::string::npos) << head(r.out);
  EXPECT_LT(r.out.size(), 32u * 1024) << head(r.out);
}

// 7. Internal errors (exit 70) for user input or the environment.
TEST(Hostile, EmptyKernelBodyIsNothingToTune) {
  std::string f = writeTemp("empty_body.rtcg", "kernel e(n: int, x: f32[n]) { }\n");
  Result r = rtcgc("tune " + f + " -D n=8 --dry-run");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("kernel 'e' has no statements: there is nothing to tune"), std::string::npos) << r.out;
}

TEST(Hostile, HostArraysLargerThanMemoryAreRefusedBeforeAllocating) {
  // 2^40 elements of each: terabytes on any machine (n = 2^31-1 of one dimension was 32 GiB).
  std::string f = writeTemp("big.rtcg", "kernel c(n: int, x: f32[n, n], out y: f32[n, n]) {\n"
                                        "  for i in 0..n, j in 0..n { y[i, j] = x[i, j]; }\n}\n");
  Result r = rtcgc("run --cpu " + f + " -D n=1048576");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("the host arrays of kernel 'c' and their reference values need 16384.0 GiB, more than this "
                       "machine's"),
            std::string::npos)
      << r.out;
}

TEST(Hostile, InputsAreReadBoundedAndEveryReadErrorIsReported) {
  // /dev/zero is refused as a device (issue 40, item 12: a named file must be a regular one); the
  // bound holds for standard input, which may be a pipe.
  Result zero = rtcgc("check /dev/zero");
  EXPECT_EQ(zero.code, 1) << zero.out;
  EXPECT_NE(zero.out.find("cannot read '/dev/zero': it is a character device, not a regular file"), std::string::npos)
      << zero.out;
  Result piped = shell("head -c 17000000 /dev/zero | " + std::string(RTCGC_PATH) + " check - 2>&1");
  EXPECT_EQ(piped.code, 1) << piped.out;
  EXPECT_NE(piped.out.find("cannot read '-': it is larger than 16 MiB, the limit"), std::string::npos) << piped.out;
  // 9. A directory and an unreadable file passed check (std::ifstream read them as empty).
  Result dir = rtcgc("check " + tempDir().string());
  EXPECT_EQ(dir.code, 1) << dir.out;
  EXPECT_NE(dir.out.find("it is a directory"), std::string::npos) << dir.out;
  Result mem = rtcgc("check /proc/self/mem");
  EXPECT_EQ(mem.code, 1) << mem.out;
  EXPECT_NE(mem.out.find("cannot read '/proc/self/mem': Input/output error"), std::string::npos) << mem.out;
  // An empty file passed check and failed every other command.
  Result empty = rtcgc("check " + writeTemp("empty.rtcg", ""));
  EXPECT_EQ(empty.code, 1) << empty.out;
  EXPECT_NE(empty.out.find("empty.rtcg: error: the file defines no kernel"), std::string::npos) << empty.out;
  // `export` read its file with a copy of its own, unbounded: /dev/zero ran until memory was gone.
  std::string out = (tempDir() / "zero-export").string();
  Result exported = rtcgc("export /dev/zero -D n=8 -o " + out);
  EXPECT_EQ(exported.code, 1) << exported.out;
  EXPECT_NE(exported.out.find("cannot read '/dev/zero': it is a character device"), std::string::npos)
      << exported.out;
  EXPECT_FALSE(fs::exists(out));
}

TEST(Hostile, AFullStandardOutputIsAnError) {
  // 9. `emit > /dev/full` exited 0; 7. `db export > /dev/full` was an internal error.
  std::string f = writeTemp("copy.rtcg", kCopy);
  Result emit = rtcgc("emit " + f + " -D n=8", "> /dev/full");
  EXPECT_EQ(emit.code, 1) << emit.out;
  EXPECT_NE(emit.out.find("rtcgc: error: cannot write to standard output: No space left on device"), std::string::npos)
      << emit.out;
  std::string json = writeTemp("db.json", R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": [{"key": {
    "kernelHash": "ab12000000000001", "kernelName": "matmul", "sizes": "n=500", "device": "NVIDIA H200",
    "arch": "sm_90", "driverVersion": 13000, "nvrtcVersion": "13.0", "rtcgVersion": "0.1.0"}, "searches": [],
    "candidates": [{"schedule": "i: grid.x, thread.x 32", "status": "verified", "medianMs": 1.5, "recordedAt": 5}]}]})");
  fs::path db = tempDir() / "full.sqlite";
  ASSERT_EQ(rtcgc("db import " + json + " --db " + db.string()).code, 0);
  Result exp = rtcgc("db export --db " + db.string(), "> /dev/full");
  EXPECT_EQ(exp.code, 1) << exp.out;
  EXPECT_NE(exp.out.find("rtcgc: error: cannot write to standard output"), std::string::npos) << exp.out;
  EXPECT_EQ(exp.out.find("internal error"), std::string::npos) << exp.out;
}

// 8. A NUL byte in the echoed line ended rtcgc's output (fputs), hiding every later diagnostic.
TEST(Hostile, ANulByteDoesNotCutOffLaterDiagnostics) {
  std::string f = writeTemp("nul.rtcg", std::string("kernel k(n: int, x: f32[n], out y: f32[n]) {\n  for i in 0..n {") +
                                            '\0' + " y[i] = x[i]; }\n  @\n}\n");
  Result r = rtcgc("check " + f);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("nul.rtcg:2:18: error: unexpected byte 0x00"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("nul.rtcg:3:3: error: unexpected character '@'"), std::string::npos) << r.out;
}

// 9. run --cpu ignored --schedule, and passed a kernel whose indirect stores miss elements of an
// out array (the checksum said nan, the exit status 0).
TEST(Hostile, CpuRunRefusesASchedule) {
  std::string f = writeTemp("copy.rtcg", kCopy);
  Result r = rtcgc("run --cpu " + f + " -D n=100 --schedule 'i: grid.x, thread.x 32'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("--schedule applies to GPU runs"), std::string::npos) << r.out;
}

TEST(Hostile, CpuRunFailsWhenAnOutArrayIsLeftUnwritten) {
  // The index array gets 50 distinct values of 0..99 (a scatter's indices are distinct where they
  // can be), so 50 elements of y are left unwritten.
  std::string f = writeTemp("scatter.rtcg", "kernel g(n: int, m: int, idx: i32[n], x: f32[n], out y: f32[m]) {\n"
                                            "  for i in 0..n { y[idx[i]] = x[i]; }\n}\n");
  Result r = rtcgc("run --cpu " + f + " -D n=50 -D m=100");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("rtcgc: error: kernel 'g' leaves 50 of the 100 elements of out array 'y' unwritten (the "
                       "first at row-major index "),
            std::string::npos)
      << r.out;
  // An inout array keeps its old values where nothing is stored: no error.
  std::string g = writeTemp("scatter_inout.rtcg",
                            "kernel g(n: int, m: int, idx: i32[n], x: f32[n], inout y: f32[m]) {\n"
                            "  for i in 0..n { y[idx[i]] = x[i]; }\n}\n");
  EXPECT_EQ(rtcgc("run --cpu " + g + " -D n=50 -D m=100").code, 0);
}

// Found by the differential fuzzer: a scatter whose points store to the same element (n > m: two
// must collide) passed the reference, its result depending on the order the points ran in.
TEST(Hostile, CpuRunFailsWhenTwoPointsStoreToOneElement) {
  std::string f = writeTemp("collide.rtcg", "kernel g(n: int, m: int, idx: i32[n], x: f32[n], inout y: f32[m]) {\n"
                                            "  for i in 0..n { y[idx[i]] = x[i]; }\n}\n");
  Result r = rtcgc("run --cpu " + f + " -D n=100 -D m=50");
  EXPECT_EQ(r.code, 1) << r.out;
  std::regex conflict(
      "rtcgc: error: kernel 'g', line 2:\\d+: the points i=\\d+ and i=\\d+ both store to element \\[\\d+\\] of "
      "array 'y' \\(an indirect index\\): the result would depend on the order the points run in");
  EXPECT_TRUE(std::regex_search(r.out, conflict)) << r.out;
  EXPECT_EQ(r.out.find("on the CPU reference executor"), std::string::npos) << r.out;  // no checksums
  // At n <= m the indices are distinct, and the same kernel runs.
  EXPECT_EQ(rtcgc("run --cpu " + f + " -D n=50 -D m=50").code, 0);
}

// 10. Sizes whose arrays overflow 64-bit offsets were proved in bounds; an architecture NVRTC does
// not know was exit 3, "a bug in rtcg".
TEST(Hostile, ArraysOfMoreThan128TiBAreRefusedWhenSizesAreBound) {
  std::string f = writeTemp("cube.rtcg", "kernel c(n: int, x: f32[n, n, n], out y: f32[n, n, n]) {\n"
                                         "  for i in 0..n, j in 0..n, k in 0..n { y[i, j, k] = x[i, j, k]; }\n}\n");
  Result r = rtcgc("check " + f + " -D n=2147483647");
  EXPECT_EQ(r.code, 1) << head(r.out);
  EXPECT_NE(r.out.find("cube.rtcg:1:18: error: array 'x' spans 3.96e+28 bytes with these sizes; the limit is 2^47 (128 TiB)"),
            std::string::npos)
      << head(r.out);
  EXPECT_EQ(rtcgc("check " + f + " -D n=4096").code, 0);  // 256 GiB: allowed
}

TEST(Hostile, AnArchitectureNvrtcDoesNotKnowIsABadCommandLine) {
  std::string f = writeTemp("copy.rtcg", kCopy);
  Result r = rtcgc("emit " + f + " -D n=8 --ptx --arch sm_999");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_NE(r.out.find("rtcgc: error: --arch: NVRTC cannot compile for 'sm_999'; it supports sm_XX and compute_XX for XX in "),
            std::string::npos)
      << r.out;
  EXPECT_EQ(rtcgc("emit " + f + " -D n=8 --ptx --arch compute_90").code, 0);
}

// 12. A divisor that is the constant 0 only once the sizes are bound passed check -D.
TEST(Hostile, ADivisorThatSizesMakeZeroIsAnError) {
  std::string f = writeTemp("div.rtcg", "kernel k(n: int, m: int, x: f32[n], out y: f32[n]) {\n"
                                        "  for i in 0..n { y[i] = x[i] + f32(i / (n - m)); }\n}\n");
  Result r = rtcgc("check " + f + " -D n=8 -D m=8");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find("div.rtcg:2:37: error: division by zero with these sizes: the divisor of '/' is 0"),
            std::string::npos)
      << r.out;
  EXPECT_EQ(rtcgc("check " + f + " -D n=8 -D m=4").code, 0) << r.out;
}

// 1 (again): the -D parser is a std::regex too, and a 120 000-character binding overflowed the
// stack in it, in rtcgc check and tune alike (and in export, which had a copy of its own).
TEST(Hostile, HugeSizeBindingsAreBadCommandLines) {
  std::string f = writeTemp("copy.rtcg", kCopy);
  const std::string exportTo = "export -o " + (tempDir() / "huge-export").string() + " ";
  for (const std::string& binding : {"n=" + std::string(120000, '1'), std::string(120000, 'n') + "=5",
                                     "n=" + std::string(120000, ' ') + "5"}) {
    for (const std::string& command : {std::string("check "), std::string("tune --dry-run "), exportTo}) {
      Result r = rtcgc(command + f + " -D '" + binding + "'");
      EXPECT_EQ(r.code, 2) << command << head(r.out);
      EXPECT_NE(r.out.find("rtcgc: error: bad size binding '-D "), std::string::npos) << head(r.out);
      EXPECT_LT(r.out.size(), 1000u) << head(r.out);
    }
  }
}
