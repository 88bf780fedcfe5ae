// The regression tests of issue 40, the defects of a hostile-input audit (overflow at the edges
// of integer ranges, names, output files): each test is one item's reproducer and its siblings,
// through rtcgc as a user meets them, and fails without its fix.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "Shell.h"
#include "codegen/CudaTypes.h"

namespace fs = std::filesystem;

namespace {

using Result = rtcg::tests::ShellResult;
using rtcg::tests::shell;

Result rtcgc(const std::string& args) { return shell(std::string(RTCGC_PATH) + " " + args + " 2>&1"); }

fs::path tempDir() {
  fs::path d = fs::temp_directory_path() / ("rtcgc-audit-" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

std::string writeTemp(const std::string& name, const std::string& text) {
  fs::path p = tempDir() / name;
  std::ofstream(p, std::ios::binary) << text;
  return p.string();
}

std::string readText(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

std::string example(const std::string& name) { return std::string(RTCG_SOURCE_DIR) + "/examples/" + name; }

bool has(const Result& r, const std::string& text) { return r.out.find(text) != std::string::npos; }

}  // namespace

// 1. Size-only bounds that overflow i32 were accepted: check said well-formed, the emitted CUDA
// computed `46341 * 46341` in int (the kernel compiled to a store of 0) and the reference in 64
// bits; at n*n*n = 2^63 the reference wrapped to 0 iterations. Refused where the sizes are bound,
// with a caret at the operator, by every command.
TEST(HostileAudit, SizeArithmeticThatOverflowsI32IsRefusedWhenSizesAreBound) {
  std::string sum = writeTemp("nm.rtcg", "kernel k(n: int, m: int, out y: f32[1]) {\n"
                                         "  y[0] = sum(i in 0..n * m, 1.0f32) / 1024.0;\n}\n");
  for (const std::string& command : {"check", "emit", "explain", "run --cpu"}) {
    Result r = rtcgc(std::string(command) + " " + sum + " -D n=46341 -D m=46341");
    EXPECT_EQ(r.code, 1) << command << ": " << r.out;
    EXPECT_TRUE(has(r, "nm.rtcg:2:22: error: '46341 * 46341' is 2147488281 with these sizes, which does not fit in "
                       "i32"))
        << command << ": " << r.out;
    EXPECT_TRUE(has(r, "^")) << r.out;
  }
  EXPECT_EQ(rtcgc("check " + sum + " -D n=46340 -D m=46340").code, 0);  // 2147395600 fits

  // A guard (4 * n - m) and a bound of three factors whose product wraps 64 bits to 0.
  std::string guard = writeTemp("guard.rtcg", "kernel k(n: int, m: int, x: f32[n, 4], out y: f32[n, 4]) {\n"
                                              "  for i in 0..4 * n - m { y[i / 4, i % 4] = 2.0 * x[i / 4, i % 4]; }\n}\n");
  Result g = rtcgc("emit " + guard + " -D n=600000000 -D m=1");
  EXPECT_EQ(g.code, 1) << g.out;
  EXPECT_TRUE(has(g, "'4 * 600000000' is 2400000000 with these sizes, which does not fit in i32")) << g.out;
  std::string cube = writeTemp("cube.rtcg", "kernel k(n: int, out y: f32[1]) { y[0] = sum(i in 0..n * n * n, 1.0f32); }\n");
  Result c = rtcgc("run --cpu " + cube + " -D n=2097152");
  EXPECT_EQ(c.code, 1) << c.out;
  EXPECT_TRUE(has(c, "'2097152 * 2097152' is 4398046511104 with these sizes")) << c.out;
  // In an index and in a value too.
  std::string index = writeTemp("index.rtcg", "kernel k(n: int, x: f32[n], out y: i32[1]) { y[0] = n * n + i32(x[0]); }\n");
  EXPECT_EQ(rtcgc("check " + index + " -D n=65536").code, 1);
  EXPECT_EQ(rtcgc("check " + index + " -D n=46340").code, 0);
}

// 1 (sibling): a bound in indices and sizes whose values leave i32 over the loops around it.
TEST(HostileAudit, LoopBoundsThatLeaveI32OverTheirLoopsAreRefused) {
  std::string f = writeTemp("tri.rtcg", "kernel k(n: int, x: f32[n], out y: f32[n]) {\n"
                                        "  for i in 0..n { y[i] = sum(j in 0..i + n, 1.0f32) + x[i]; }\n}\n");
  Result r = rtcgc("check " + f + " -D n=2147483647");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "error: the bound 'i + 2147483647' of 'j' reaches 4294967293 with these sizes, beyond i32")) << r.out;
  EXPECT_EQ(rtcgc("check " + f + " -D n=1000").code, 0);
}

// 2. The planner died of SIGFPE when a clause's factors multiplied past 64 bits (0 in 64 bits, a
// division by zero), in explain, emit and export alike; 3. a factor of 2^31 wrapped the int
// counter of its loop (no exit, stores at negative offsets), and so did a product that wraps
// negative. Each is refused with the reason; the largest product that fits is accepted.
TEST(HostileAudit, ClausesCoveringMorePointsThanTheCountersHoldAreRefused) {
  const std::string matmul = example("matmul.rtcg") + " -D n=100 -s ";
  const std::string exportTo = " -o " + (tempDir() / "export-fpe").string();
  for (const std::string& schedule :
       {"'i: grid.y, serial 65536, serial 65536, serial 65536, serial 65536; j: grid.x; k: serial'",
        "'i: grid.y, serial 2147483648, unroll 2147483648, reg 2147483648; j: grid.x; k: serial'",
        "'i: grid.y, serial 2147483648; j: grid.x; k: serial'",
        "'i: grid.y, serial 2147483648, serial 2147483648, serial 3; j: grid.x; k: serial'",
        "'i: grid.y; j: grid.x; k: serial, serial 65536, serial 65536'"}) {
    for (const std::string& command : {"explain ", "emit ", "export "}) {
      Result r = rtcgc(command + matmul + schedule + (command == "export " ? exportTo : ""));
      EXPECT_EQ(r.code, 1) << command << schedule << ": " << r.out;
      EXPECT_TRUE(has(r, "but an index and the counters of its parts are 32-bit integers in the emitted code: at "
                         "most 2^31 - 1 points"))
          << command << schedule << ": " << r.out;
    }
  }
  Result fits = rtcgc("emit " + matmul + "'i: grid.y, serial 2147483647; j: grid.x; k: serial'");
  EXPECT_EQ(fits.code, 0) << fits.out;
}

// 2. `db import` took such a row as verified (it only parsed), and every lookup of it crashed.
TEST(HostileAudit, DbImportRefusesARowWhoseFactorsCannotPlanForAnyKernel) {
  const std::string db = (tempDir() / "fpe.sqlite").string();
  fs::remove(db);
  const std::string row = R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": [{"key": {"kernelHash": "0123456789abcdef",
    "kernelName": "matmul", "sizes": "n=100", "device": "NVIDIA H200", "arch": "sm_90", "driverVersion": 13000,
    "nvrtcVersion": "13.0", "rtcgVersion": "0.1"}, "searches": [], "candidates": [{"schedule":
    "i: grid.y, serial 65536, serial 65536, serial 65536, serial 65536; j: grid.x; k: serial",
    "status": "verified", "medianMs": 0.5, "recordedAt": 1}]}]})";
  Result r = rtcgc("db import " + writeTemp("fpe.json", row) + " --db " + db);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "the schedule cannot plan for any kernel: the parts of 'i' cover more than")) << r.out;
}

// 5. C++ keywords and other reserved words as names broke NVRTC (exit 3, "a bug in rtcg"): every
// word of the emitter's list that the language accepts as a name, as an array, a scalar, a let, a
// loop index and a local of one kernel, compiles (PTX, all at once), and the kernel named after one.
TEST(HostileAudit, EveryReservedWordIsANameTheEmittedCodeSurvives) {
  std::vector<std::string> words;
  for (const std::string& w : rtcg::emit::reservedWords()) {
    // The language's own keywords and type names are refused by the frontend: not names at all.
    std::string probe = writeTemp("probe.rtcg", "kernel k(" + w + ": f32[1], out y: f32[1]) { y[0] = " + w + "[0]; }\n");
    if (rtcgc("check " + probe).code == 0) words.push_back(w);
  }
  ASSERT_GT(words.size(), 250u);
  // Roles by turn: array (read), scalar, let, reduction index, parallel index of a nest of its own.
  std::string params = "n: int", body, nests;
  std::vector<std::string> terms;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string& w = words[i];
    switch (i % 5) {
      case 0: params += ", " + w + ": f32[n]"; terms.push_back(w + "[i]"); break;
      case 1: params += ", " + w + ": f32"; terms.push_back(w); break;
      case 2: body += "    let " + w + " = f32(i) * 2.0;\n"; terms.push_back(w); break;
      case 3: terms.push_back("sum(" + w + " in 0..n, f32(" + w + "))"); break;
      case 4: nests += "  for " + w + " in 0..n { z" + std::to_string(i) + "[" + w + "] = f32(" + w + "); }\n";
              params += ", out z" + std::to_string(i) + ": f32[n]";
    }
  }
  // One let per term (a chain of hundreds of `+` is nested too deeply for the language).
  std::string value = "0.0f32";
  for (size_t t = 0; t < terms.size(); ++t) {
    body += "    let q" + std::to_string(t) + " = " + value + " + " + terms[t] + ";\n";
    value = "q" + std::to_string(t);
  }
  std::string kernel = "kernel " + words.front() + "(" + params + ", out y: f32[n]) {\n  for i in 0..n {\n" + body +
                       "    y[i] = " + value + ";\n  }\n" + nests + "}\n";
  std::string f = writeTemp("reserved.rtcg", kernel);
  Result r = rtcgc("emit " + f + " -D n=64 --ptx -o " + (tempDir() / "reserved.ptx").string());
  EXPECT_EQ(r.code, 0) << r.out.substr(0, 4000);
  // The words of the issue, each as a local array too.
  for (const std::string& w : {"NULL", "noexcept", "wchar_t", "char16_t", "char32_t", "protected", "typeid",
                               "dynamic_cast", "static_cast", "reinterpret_cast", "const_cast", "and_eq", "or_eq",
                               "not_eq", "xor_eq", "__LINE__", "_Bool", "errno", "offsetof"}) {
    std::string local = writeTemp("local.rtcg", "kernel k(n: int, x: f32[n], out y: f32[n]) {\n  local " + w +
                                                    ": f32[n];\n  for i in 0..n { " + w + "[i] = x[i]; }\n"
                                                    "  for i in 0..n { y[i] = " + w + "[i]; }\n}\n");
    Result l = rtcgc("emit " + local + " -D n=64 --ptx -o " + (tempDir() / "local.ptx").string());
    EXPECT_EQ(l.code, 0) << w << ": " << l.out.substr(0, 2000);
  }
}

// 6. `rtcgc export` wrote headers that did not compile for parameters named like the header's own
// locals (e, args), the CUDA driver's names (CUstream, cuLaunchKernel, CUDA_SUCCESS), macros of the
// C and C++ headers (errno, NULL, EOF, offsetof, stdin) and keywords, as kernel or size names too;
// 11. a newline in the DSL file's name ended the header's first comment line (`#error` injected).
TEST(HostileAudit, ExportedHeadersCompileWhateverTheNames) {
  const std::vector<std::string> names = {"e", "args", "f", "l", "r", "CUstream", "CUdeviceptr", "CUresult",
                                          "cuLaunchKernel", "CUDA_SUCCESS", "cuCtxGetDevice", "errno", "offsetof",
                                          "NULL", "EOF", "stdin", "BUFSIZ", "EINVAL", "assert", "noexcept",
                                          "wchar_t", "protected", "static_cast", "and_eq", "xor_eq", "std",
                                          "detail", "load", "launch", "sizes", "stream", "kernelName"};
  std::string params = "errno: int, NULL: int";
  std::string value = "0.0f32";
  for (const std::string& n : names) {
    if (n == "errno" || n == "NULL") continue;  // the sizes
    params += ", " + n + ": f32[errno]";
    value += " + " + n + "[i]";
  }
  params += ", EOF_s: f32, out y: f32[errno + NULL]";
  const std::string dslName = "bad\n#error injected\nname.rtcg";
  fs::path src = tempDir() / dslName;
  std::ofstream(src) << "kernel cuLaunchKernel(" + params + ") {\n  for i in 0..errno { y[i] = " + value +
                            " * EOF_s; }\n}\n";
  fs::path out = tempDir() / "risky-export";
  fs::remove_all(out);
  Result r = rtcgc("export '" + src.string() + "' -D errno=64 -D NULL=0 --arch sm_80 -o " + out.string());
  ASSERT_EQ(r.code, 0) << r.out;
  fs::path header = out / "cuLaunchKernel.h";
  ASSERT_TRUE(fs::exists(header));
  EXPECT_EQ(readText(header).find("\n#error"), std::string::npos);
  // Included after the C and C++ headers whose macros the names are, -Werror.
  fs::path tu = tempDir() / "risky.cpp";
  std::ofstream(tu) << "#include <cassert>\n#include <cerrno>\n#include <cstddef>\n#include <cstdio>\n#include \""
                    << header.string() << "\"\nint main() { rtcg_export::v_cuLaunchKernel k; (void)k; return EOF + "
                    << "errno; }\n";
  std::string cmd = std::string(RTCG_CXX) + " -std=c++17 -Wall -Wextra -Wpedantic -Werror -fsyntax-only -I" +
                    RTCG_CUDA_INCLUDE + " " + tu.string() + " 2>&1";
  Result compiled = shell(cmd);
  EXPECT_EQ(compiled.code, 0) << cmd << "\n" << compiled.out.substr(0, 4000);
}

// 7. `-o` resolved a symbolic link itself and renamed over its target: a link another user planted
// (in a shared sticky /tmp) redirected a root run's output onto any file. And a replaced file kept
// its set-user-id and set-group-id bits under its new owner.
TEST(HostileAudit, OutputDoesNotFollowAnotherUsersLinkAndClearsSetIdBits) {
  std::string f = writeTemp("copy.rtcg", "kernel copy(n: int, x: f32[n], out y: f32[n]) { for i in 0..n { y[i] = x[i]; } }\n");
  fs::path victim = tempDir() / "victim.txt", link = tempDir() / "planted.cu";
  std::ofstream(victim) << "precious";
  fs::remove(link);
  fs::create_symlink(victim, link);
  if (::geteuid() == 0) {
    ASSERT_EQ(::lchown(link.c_str(), 12345, 12345), 0);
    Result r = rtcgc("emit " + f + " -D n=8 -o " + link.string());
    EXPECT_EQ(r.code, 1) << r.out;
    EXPECT_TRUE(has(r, "is a symbolic link owned by another user (uid 12345), which rtcg does not follow")) << r.out;
    EXPECT_EQ(readText(victim), "precious");
    EXPECT_TRUE(fs::is_symlink(link));
  }
  fs::path setid = tempDir() / "setid.cu";
  std::ofstream(setid) << "old";
  ASSERT_EQ(::chmod(setid.c_str(), 06755), 0);
  Result r = rtcgc("emit " + f + " -D n=8 -o " + setid.string());
  EXPECT_EQ(r.code, 0) << r.out;
  struct stat st {};
  ASSERT_EQ(::stat(setid.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
}

// 8. The unroll limit was per part and the product unbounded: syrk's unroll parts on three indices
// (100 x 512 x 4 copies of the body) made NVRTC run for 325 CPU-seconds on 3.8 KB of CUDA.
TEST(HostileAudit, TheUnrolledBodyOfANestIsBounded) {
  Result r = rtcgc("explain " + example("syrk.rtcg") + " -D n=100 -D K=30 -s 'i: unroll; j: thread.x, unroll 8, "
                   "unroll 64, reg 2, thread.z 1; k: unroll, grid.z 8'");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "the unroll parts of the nest unroll 204800 copies of its body in all")) << r.out;
  Result fits = rtcgc("explain " + example("syrk.rtcg") + " -D n=100 -D K=30 -s 'i: grid.y, unroll 4; j: grid.x, "
                      "thread.x 32, unroll 4; k: serial, unroll 16'");
  EXPECT_EQ(fits.code, 0) << fits.out;
}

// 9. Under a file-size limit SIGXFSZ killed rtcgc and left its temporary files and export staging
// directories behind: the write now fails with EFBIG, reported, and the cleanup runs.
TEST(HostileAudit, AFileSizeLimitIsAnErrorThatLeavesNothingBehind) {
  fs::path dir = tempDir() / "xfsz";
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string limited = "ulimit -f 1 && " + std::string(RTCGC_PATH) + " ";
  Result emit = shell(limited + "emit " + example("matmul.rtcg") + " -D n=100 -o " + (dir / "m.cu").string() + " 2>&1");
  EXPECT_EQ(emit.code, 1) << emit.out;
  EXPECT_TRUE(has(emit, "File too large")) << emit.out;
  Result exported = shell(limited + "export " + example("matmul.rtcg") + " -D n=100 --arch sm_80 -o " +
                          (dir / "exp").string() + " 2>&1");
  EXPECT_EQ(exported.code, 1) << exported.out;
  for (const auto& e : fs::directory_iterator(dir)) ADD_FAILURE() << "left behind: " << e.path();
}

// 10. `-S` parsed i64 scalars through strtod: 2^53 + 1 became 2^53 silently. Integers are parsed
// exactly, and a value the type cannot hold is a bad command line.
TEST(HostileAudit, IntegerScalarsAreParsedExactly) {
  std::string f = writeTemp("scal.rtcg", "kernel k(n: int, s: i64, t: i32, out y: i64[n]) { for i in 0..n { y[i] = s + "
                                         "i64(t); } }\n");
  Result ok = rtcgc("run --cpu " + f + " -D n=4 -S s=9007199254740993 -S t=-2147483648");
  EXPECT_EQ(ok.code, 0) << ok.out;
  for (const std::string& bad : {"-S s=1.5 -S t=1", "-S s=9223372036854775808 -S t=1", "-S s=1 -S t=2147483648",
                                 "-S s=1e3 -S t=1"}) {
    Result r = rtcgc("run --cpu " + f + " -D n=4 " + bad);
    EXPECT_EQ(r.code, 2) << bad << ": " << r.out;
    EXPECT_TRUE(has(r, "needs an integer of type")) << r.out;
  }
}

// 12. Smaller items: NUL refused in `//` comments but accepted in `/* */`; FLT_MAX written to 8
// digits (3.4028235e38f32, which rounds to it) refused; `emit -o ""` wrote to standard output
// with exit 0; `--seed -1` accepted silently.
TEST(HostileAudit, SmallerItems) {
  std::string nul = writeTemp("nul.rtcg", std::string("kernel k(n: int, x: f32[n], out y: f32[n]) { /* a \0 b */ for i in "
                                                      "0..n { y[i] = x[i]; } }\n", 90));
  Result r = rtcgc("check " + nul + " -D n=4");
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_TRUE(has(r, "nul.rtcg:1:51: error: unexpected byte 0x00")) << r.out;
  std::string fmax = writeTemp("fmax.rtcg", "kernel k(n: int, out y: f32[n]) { for i in 0..n { y[i] = select(i > 0, "
                                            "3.4028235e38f32, -3.4028235e38); } }\n");
  EXPECT_EQ(rtcgc("check " + fmax + " -D n=4").code, 0);
  std::string over = writeTemp("over.rtcg", "kernel k(n: int, out y: f32[n]) { for i in 0..n { y[i] = 3.4028236e38f32; } }\n");
  EXPECT_EQ(rtcgc("check " + over + " -D n=4").code, 1);
  Result empty = rtcgc("emit " + example("axpby.rtcg") + " -D n=8 -o ''");
  EXPECT_EQ(empty.code, 2) << empty.out.substr(0, 500);
  EXPECT_TRUE(has(empty, "an empty file name")) << empty.out.substr(0, 500);
  EXPECT_EQ(rtcgc("run --cpu " + example("axpby.rtcg") + " -D n=8 --seed -1").code, 2);
  EXPECT_EQ(rtcgc("tune " + example("axpby.rtcg") + " -D n=8 --dry-run --seed -1").code, 2);
}

// 12. An `out` array that no point writes in part passed `check -D` and failed only in `run --cpu`
// (docs/language.md's own `lower` example). It is an error where the sizes are bound, naming the
// first element never written; `inout` keeps the caller's values there and is accepted.
TEST(HostileAudit, OutArraysNotWrittenInFullAreRefusedWhenSizesAreBound) {
  std::string lower = writeTemp("lower.rtcg", "kernel lower(n: int, a: f64[n, n], out b: f64[n, n]) {\n"
                                              "  for i in 0..n, j in 0..i + 1 { b[i, j] = a[i, j]; }\n}\n");
  for (const std::string& command : {"check", "emit", "run --cpu"}) {
    Result r = rtcgc(command + " " + lower + " -D n=8");
    EXPECT_EQ(r.code, 1) << command << ": " << r.out;
    EXPECT_TRUE(has(r, "lower.rtcg:1:40: error: 'b' is an 'out' array, but with these sizes no point writes b[0, 1] "
                       "(28 of its 64 elements are never written)"))
        << command << ": " << r.out;
  }
  // Too many points to enumerate: the counting argument (n (n + 1) / 2 stores for n^2 elements).
  Result big = rtcgc("check " + lower + " -D n=20000");
  EXPECT_EQ(big.code, 1) << big.out;
  EXPECT_TRUE(has(big, "its stores write at most 200010000 of its 400000000 elements")) << big.out;
  // A stride that skips every other element, and two nests that together cover the array.
  std::string strided = writeTemp("strided.rtcg", "kernel k(n: int, x: f32[n], out y: f32[2 * n]) {\n"
                                                  "  for i in 0..n { y[2 * i] = x[i]; }\n}\n");
  Result s = rtcgc("check " + strided + " -D n=10");
  EXPECT_EQ(s.code, 1) << s.out;
  EXPECT_TRUE(has(s, "no point writes y[1] (10 of its 20 elements are never written)")) << s.out;
  std::string halves = writeTemp("halves.rtcg", "kernel k(n: int, x: f32[n], out y: f32[2 * n]) {\n"
                                                "  for i in 0..n { y[2 * i] = x[i]; }\n"
                                                "  for i in 0..n { y[2 * i + 1] = -x[i]; }\n}\n");
  Result h = rtcgc("check " + halves + " -D n=10");
  EXPECT_EQ(h.code, 0) << h.out;
  EXPECT_TRUE(has(h, "every element of its out arrays is written")) << h.out;
  // The documented fix: inout keeps the caller's values above the diagonal.
  std::string kept = writeTemp("kept.rtcg", "kernel lower(n: int, a: f64[n, n], inout b: f64[n, n]) {\n"
                                            "  for i in 0..n, j in 0..i + 1 { b[i, j] = a[i, j]; }\n}\n");
  EXPECT_EQ(rtcgc("check " + kept + " -D n=8").code, 0);
  EXPECT_EQ(rtcgc("run --cpu " + kept + " -D n=8").code, 0);
}

// 12. docs/language.md's examples bind as documented: `lower` (now `inout`) passes check -D.
TEST(HostileAudit, TheLanguageDocsLowerExampleBinds) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/docs/language.md");
  std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t at = doc.find("kernel lower(");
  ASSERT_NE(at, std::string::npos);
  std::string kernel = doc.substr(at, doc.find("\n}\n", at) + 3 - at);
  Result r = rtcgc("check " + writeTemp("doc-lower.rtcg", kernel) + " -D n=16");
  EXPECT_EQ(r.code, 0) << kernel << r.out;
}

// 12. `check` warned that it could not prove distinct writes (or an index in bounds) and then said
// "no nest races": after a warning it says what is proved and what is left to run time.
TEST(HostileAudit, CheckClaimsOnlyWhatItProved) {
  std::string scatter = writeTemp("scatter.rtcg", "kernel k(n: int, idx: i32[n], x: f32[n], out y: f32[n]) {\n"
                                                  "  for i in 0..n { y[idx[i]] = x[i]; }\n}\n");
  Result r = rtcgc("check " + scatter + " -D n=16");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_TRUE(has(r, "warning: indirect store into")) << r.out;
  EXPECT_FALSE(has(r, "no nest races")) << r.out;
  EXPECT_TRUE(has(r, "but not what the 3 warnings above name: `rtcgc run --cpu` checks it")) << r.out;
  Result plain = rtcgc("check " + example("matmul.rtcg") + " -D n=16");
  EXPECT_TRUE(has(plain, "every access is in bounds, no nest races and every element of its out arrays is written"))
      << plain.out;
}

// 12. Smaller items, second part: a FIFO as input blocked forever (now refused, as any file that
// is not a regular one); `--max-candidates -1` printed a 309-digit number; `db import` took
// "schemaVersion": 99 and "keys": {}.
TEST(HostileAudit, SmallerItemsSecondPart) {
  fs::path fifo = tempDir() / "input.fifo";
  fs::remove(fifo);
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& command : {"check ", "emit ", "export "}) {
    // `timeout` ends the old behaviour (waiting for a writer) with 124.
    Result r = shell("timeout 20 " + std::string(RTCGC_PATH) + " " + command + fifo.string() + " -D n=8" +
                     (command == "export " ? " -o " + (tempDir() / "fifo-export").string() : "") + " 2>&1");
    EXPECT_EQ(r.code, 1) << command << r.out;
    EXPECT_TRUE(has(r, "cannot read '" + fifo.string() + "': it is a FIFO (named pipe), not a regular file")) << r.out;
  }
  Result piped = shell("cat " + example("axpby.rtcg") + " | " + std::string(RTCGC_PATH) + " check - 2>&1");
  EXPECT_EQ(piped.code, 0) << piped.out;

  for (const std::string& option : {"--max-candidates -1", "--time-limit -1", "--seed -1", "--min-threads 0"}) {
    Result negative = rtcgc("tune " + example("axpby.rtcg") + " -D n=8 --dry-run " + option);
    EXPECT_EQ(negative.code, 2) << option << ": " << negative.out.substr(0, 400);
    EXPECT_TRUE(has(negative, "must be ")) << option << ": " << negative.out.substr(0, 400);
    EXPECT_LT(negative.out.size(), 200u) << option << ": " << negative.out.substr(0, 400);
  }

  const std::string db = (tempDir() / "import.sqlite").string();
  const std::string key = R"({"key": {"kernelHash": "0123456789abcdef", "kernelName": "axpby", "sizes": "n=8",
    "device": "NVIDIA H200", "arch": "sm_90", "driverVersion": 13000, "nvrtcVersion": "13.0", "rtcgVersion": "0.1"},
    "searches": [], "candidates": [{"schedule": "i: grid.x, thread.x 32", "status": "verified", "medianMs": 0.5,
    "recordedAt": 1}]})";
  const std::vector<std::pair<std::string, std::string>> refused = {
      {R"({"format": "rtcg-tuning-db", "schemaVersion": 99, "keys": [)" + key + "]}",
       "'schemaVersion' must be an integer from 1 to"},
      {R"({"format": "rtcg-tuning-db", "keys": [)" + key + "]}", "'schemaVersion' is missing"},
      {R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": {}})", "\"keys\" must be an array"},
      {R"({"format": "rtcg-tuning-db", "schemaVersion": 1})", "\"keys\" must be an array"},
      {R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": []})", "holds no tuned keys"}};
  for (const auto& [text, why] : refused) {
    Result r = rtcgc("db import " + writeTemp("import.json", text) + " --db " + db);
    EXPECT_EQ(r.code, 1) << text << ": " << r.out;
    EXPECT_TRUE(has(r, why)) << text << ": " << r.out;
  }
  Result ok = rtcgc("db import " + writeTemp("import.json", R"({"format": "rtcg-tuning-db", "schemaVersion": 2, "keys": [)" +
                                                                key + "]}") +
                    " --db " + db);
  EXPECT_EQ(ok.code, 0) << ok.out;
}

// 12. `3.4028235e38f32` (FLT_MAX) was refused; f32 literals at the edge of the range are rounded
// once, from their digits, and what rounds to infinity is refused with the reason.
TEST(HostileAudit, F32LiteralsAreRoundedOnceFromTheirDigits) {
  // f32 literals at the edge of the range: rounded once from the decimal digits, so the literal just
  // below FLT_MAX + half an ulp is FLT_MAX (through a double it became that midpoint, then
  // infinity), the midpoint itself rounds to infinity and is refused with the reason, in both the
  // typed and the untyped form.
  for (const std::string& literal : {"3.4028235677973366e38f32", "3.4028235677973366e38", "-3.4028235677973366e38"}) {
    std::string f = writeTemp("edge.rtcg", "kernel k(n: int, out y: f32[n]) { for i in 0..n { y[i] = " + literal +
                                               "; } }\n");
    Result r = rtcgc("run --cpu " + f + " -D n=1");
    EXPECT_EQ(r.code, 0) << literal << ": " << r.out;
    EXPECT_TRUE(has(r, "sum=" + std::string(literal[0] == '-' ? "-" : "") + "3.4028234663852886e+38")) << literal << r.out;
  }
  // Away from the edge too: 1 + 2^-24 + 10^-29 is nearest 1 + 2^-23 in f32; through a double (1 + 2^-24,
  // a tie) it became 1.
  std::string mid = writeTemp("mid.rtcg", "kernel k(n: int, out y: f32[n]) { for i in 0..n { y[i] = "
                                          "1.00000005960464477539062500001f32; } }\n");
  Result m = rtcgc("run --cpu " + mid + " -D n=1");
  EXPECT_TRUE(has(m, "sum=1.0000001192092896")) << m.out;
  for (const std::string& literal : {"3.40282356779733661637539395458142568448e38f32", "3.4028236e38"}) {
    std::string f = writeTemp("over.rtcg", "kernel k(n: int, out y: f32[n]) { for i in 0..n { y[i] = " + literal +
                                               "; } }\n");
    Result r = rtcgc("check " + f + " -D n=1");
    EXPECT_EQ(r.code, 1) << literal << ": " << r.out;
    EXPECT_TRUE(has(r, "is out of range for f32: it rounds to infinity (the largest f32 is 3.4028235e38)")) << r.out;
  }
}
