// Raw CUDA modules on the host (driver/RawModule.h): NVRTC to a cubin through the one route, the
// kernel cache's hits, misses and key, NVRTC's errors at the user's file, line and column, the
// functions' parameters (lowered signature, source declaration) and the argument check against
// a parameter table. No GPU: everything but the launch (RawModuleGpuTest.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "driver/RawModule.h"
#include "rtcg/rtcg.h"

namespace rtcg::raw {
namespace {

namespace fs = std::filesystem;

const std::string kSaxpy = R"(// y = a x + y
extern "C" __global__ void saxpy(int n, float a, const float* __restrict__ x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = a * x[i] + y[i];
}
struct Pair { double d; int k; };
extern "C" __global__ void mixed(Pair p, char c, short h, float4 v, /* the output */ double* out, bool flag) {
  if (flag) out[0] = p.d + p.k + c + h + v.x;
}
)";

// A fresh cache directory per test.
class RawModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/rtcg-raw-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

TEST_F(RawModuleTest, CompilesToACubinWithTheLoweredSignatures) {
  ModuleImage image = compileModule(kSaxpy, "saxpy.cu", {}, "sm_90");
  ASSERT_GE(image.cubin.size(), 4u);
  EXPECT_EQ(image.cubin.substr(0, 4), "\x7f" "ELF");
  ASSERT_NE(image.find("saxpy"), nullptr);
  EXPECT_EQ(image.find("saxpy")->paramSizes, (std::vector<size_t>{4, 4, 8, 8}));
  ASSERT_NE(image.find("mixed"), nullptr);
  EXPECT_EQ(image.find("mixed")->paramSizes, (std::vector<size_t>{16, 1, 2, 16, 8, 1}));
  EXPECT_EQ(image.entryNames(), "saxpy, mixed");
  EXPECT_EQ(image.find("nope"), nullptr);
}

TEST_F(RawModuleTest, OptionsReachNvrtc) {
  const std::string src = "#ifndef TILE\n#error TILE is not defined\n#endif\n"
                          "extern \"C\" __global__ void k(float* x) { x[TILE] = 1; }\n";
  EXPECT_NO_THROW(compileModule(src, "tile.cu", {"-DTILE=128"}, "sm_90"));
  try {
    compileModule(src, "tile.cu", {}, "sm_90");
    FAIL() << "compiled without TILE";
  } catch (const CompileError& e) {
    ASSERT_FALSE(e.diagnostics().empty());
    EXPECT_EQ(e.diagnostics()[0].line, 2);
    EXPECT_NE(e.diagnostics()[0].message.find("TILE is not defined"), std::string::npos);
  }
}

TEST_F(RawModuleTest, RefusesOptionsThatAreRtcgsToChoose) {
  for (const char* o : {"-arch=sm_80", "--gpu-architecture=sm_80", "-arch", "-dlto", "TILE=4", ""}) {
    EXPECT_THROW(checkOptions({o}), Error) << o;
    EXPECT_THROW(compileModule(kSaxpy, "saxpy.cu", {o}, "sm_90"), Error) << o;
  }
  EXPECT_NO_THROW(checkOptions({"-DTILE=4", "--use_fast_math", "-lineinfo", "-I/tmp", "-default-device"}));
  // An option NVRTC does not know is its error, reported without a location.
  try {
    compileModule(kSaxpy, "saxpy.cu", {"--no-such-option"}, "sm_90");
    FAIL();
  } catch (const CompileError& e) {
    EXPECT_NE(std::string(e.what()).find("no-such-option"), std::string::npos) << e.what();
  }
}

TEST_F(RawModuleTest, NvrtcErrorsPointAtTheUsersFileLineAndColumn) {
  const std::string src = "#define T float\n"
                          "extern \"C\" __global__ void f(int n, T* y) {\n"
                          "  int i = threadIdx.x;\n"
                          "\tif (i < n) y[i] = undefined_thing;\n"
                          "  z = 3;\n"
                          "}\n";
  try {
    compileModule(src, "my kernels.cu", {}, "sm_90");
    FAIL() << "compiled";
  } catch (const CompileError& e) {
    const std::vector<DiagnosticRecord>& d = e.diagnostics();
    ASSERT_EQ(d.size(), 2u) << e.what();
    EXPECT_EQ(d[0].file, "my kernels.cu");
    EXPECT_EQ(d[0].line, 4);
    EXPECT_EQ(d[0].column, 20);  // the tab counts as one column
    EXPECT_EQ(d[0].severity, "error");
    EXPECT_EQ(d[0].message, "identifier \"undefined_thing\" is undefined");
    EXPECT_EQ(d[1].line, 5);
    EXPECT_EQ(d[1].column, 3);
    // Rendered as rtcg renders its own: file:line:col, the line, a caret.
    const std::string what = e.what();
    EXPECT_NE(what.find("my kernels.cu:4:20: error: identifier \"undefined_thing\" is undefined"), std::string::npos)
        << what;
    EXPECT_NE(what.find("\n    z = 3;\n    ^\n"), std::string::npos) << what;
  }
}

TEST_F(RawModuleTest, LogParsingKeepsWarningsAndOtherFiles) {
  const std::string log = "a.cu(2): warning #1105-D: #warning directive: hello\n"
                          "  #warning hello\n"
                          "   ^\n"
                          "Remark: The warnings can be suppressed with \"-diag-suppress <warning-number>\"\n"
                          "inc.h(7): error: expected a \";\"\n"
                          "a.cu(99): error: past the end\n"
                          "1 error detected in the compilation of \"a.cu\".\n";
  Diagnostics d = nvrtcDiagnostics(log, "a.cu", "int x;\n#warning hello\n");
  ASSERT_EQ(d.all().size(), 3u);
  EXPECT_EQ(d.all()[0].severity, Severity::Warning);
  EXPECT_EQ(d.all()[0].loc.line, 2);
  EXPECT_EQ(d.all()[0].loc.col, 2);
  EXPECT_EQ(d.all()[0].message, "#warning directive: hello");
  EXPECT_FALSE(d.all()[1].loc.valid());  // another file: named in the message
  EXPECT_EQ(d.all()[1].message, "inc.h(7): expected a \";\"");
  EXPECT_FALSE(d.all()[2].loc.valid());  // a line the source does not have
  EXPECT_EQ(d.errorCount(), 2);
}

TEST_F(RawModuleTest, WarningsComeBackWithTheImage) {
  ModuleImage image = compileModule("#warning careful\nextern \"C\" __global__ void k() {}\n", "w.cu", {}, "sm_90");
  EXPECT_NE(image.warnings.find("w.cu:1:2: warning: #warning directive: careful"), std::string::npos) << image.warnings;
}

TEST_F(RawModuleTest, CacheMissThenHitAndTheKey) {
  KernelCache cache(dir_);
  CacheSource source{};
  ModuleImage first = cachedModule(cache, kSaxpy, "saxpy.cu", {"-DX=1"}, "sm_90", 13000, &source);
  EXPECT_EQ(source, CacheSource::Computed);
  ModuleImage again = cachedModule(cache, kSaxpy, "saxpy.cu", {"-DX=1"}, "sm_90", 13000, &source);
  EXPECT_EQ(source, CacheSource::Memory);
  EXPECT_EQ(again.cubin, first.cubin);
  EXPECT_EQ(again.entries, first.entries);
  EXPECT_TRUE(again.warnings.empty());
  // Another process (an empty memory) reads the disk.
  KernelCache other(dir_);
  ModuleImage fromDisk = cachedModule(other, kSaxpy, "saxpy.cu", {"-DX=1"}, "sm_90", 13000, &source);
  EXPECT_EQ(source, CacheSource::Disk);
  EXPECT_EQ(fromDisk.cubin, first.cubin);
  EXPECT_EQ(fromDisk.entries, first.entries);
  EXPECT_EQ(other.stats().misses, 0);

  // Everything the cubin depends on is in the key.
  const std::string key = moduleKey(kSaxpy, "saxpy.cu", {"-DX=1"}, "sm_90", 13000);
  EXPECT_TRUE(fs::exists(cache.entryPath(key)));
  EXPECT_NE(moduleKey(kSaxpy + " ", "saxpy.cu", {"-DX=1"}, "sm_90", 13000), key);
  EXPECT_NE(moduleKey(kSaxpy, "other.cu", {"-DX=1"}, "sm_90", 13000), key);
  EXPECT_NE(moduleKey(kSaxpy, "saxpy.cu", {"-DX=2"}, "sm_90", 13000), key);
  EXPECT_NE(moduleKey(kSaxpy, "saxpy.cu", {"-DX=1", "-lineinfo"}, "sm_90", 13000), key);
  EXPECT_NE(moduleKey(kSaxpy, "saxpy.cu", {"-DX", "=1"}, "sm_90", 13000), key);  // options are not concatenated
  EXPECT_NE(moduleKey(kSaxpy, "saxpy.cu", {"-DX=1"}, "sm_80", 13000), key);
  EXPECT_NE(moduleKey(kSaxpy, "saxpy.cu", {"-DX=1"}, "sm_90", 12080), key);
  EXPECT_EQ(moduleKey(kSaxpy, "saxpy.cu", {"-DX=1"}, "sm_90", 13000), key);
  // A different option is a miss of its own.
  cachedModule(cache, kSaxpy, "saxpy.cu", {"-DX=2"}, "sm_90", 13000, &source);
  EXPECT_EQ(source, CacheSource::Computed);
}

TEST_F(RawModuleTest, ErrorsAreNotCached) {
  KernelCache cache(dir_);
  const std::string bad = "extern \"C\" __global__ void k() { nope(); }\n";
  EXPECT_THROW(cachedModule(cache, bad, "bad.cu", {}, "sm_90", 13000), CompileError);
  EXPECT_THROW(cachedModule(cache, bad, "bad.cu", {}, "sm_90", 13000), CompileError);
  EXPECT_EQ(cache.stats().diskWrites, 0);
}

TEST_F(RawModuleTest, ImagesRoundTripAndForeignBytesAreRefused) {
  ModuleImage image;
  image.cubin = std::string("\x7f" "ELF\0\n\nbytes", 12);
  image.entries = {{"a", {4, 8}}, {"_Z1bPf", {}}};
  std::optional<ModuleImage> back = decodeImage(encodeImage(image));
  ASSERT_TRUE(back);
  EXPECT_EQ(back->cubin, image.cubin);
  EXPECT_EQ(back->entries, image.entries);
  EXPECT_FALSE(decodeImage(""));
  EXPECT_FALSE(decodeImage("\x7f" "ELF"));
  std::string truncated = encodeImage(image);
  truncated.pop_back();
  EXPECT_FALSE(decodeImage(truncated));
}

TEST_F(RawModuleTest, PtxEntriesOfEveryParameterForm) {
  const std::string ptx = ".visible .entry g(\n\t.param .align 8 .b8 g_param_0[16],\n\t.param .u8 g_param_1,\n"
                          "\t.param .u64 .ptr .global .align 4 g_param_2,\n\t.param .f64 g_param_3\n)\n{ ret; }\n"
                          ".visible .entry none()\n{ ret; }\n.weak .entry _Z1tILi4EEvPf(\n"
                          "\t.param .u64 _Z1tILi4EEvPf_param_0\n)\n";
  std::vector<PtxEntry> e = parsePtxEntries(ptx);
  ASSERT_EQ(e.size(), 3u);
  EXPECT_EQ(e[0], (PtxEntry{"g", {16, 1, 8, 8}}));
  EXPECT_EQ(e[1], (PtxEntry{"none", {}}));
  EXPECT_EQ(e[2], (PtxEntry{"_Z1tILi4EEvPf", {8}}));
}

TEST_F(RawModuleTest, SourceDeclarations) {
  auto saxpy = sourceParameters(kSaxpy, "saxpy");
  ASSERT_TRUE(saxpy);
  EXPECT_EQ(*saxpy, (std::vector<SourceParam>{{"n", "int", false},
                                              {"a", "float", false},
                                              {"x", "const float* __restrict__", true},
                                              {"y", "float*", true}}));
  auto mixed = sourceParameters(kSaxpy, "mixed");  // a comment inside the list
  ASSERT_TRUE(mixed);
  ASSERT_EQ(mixed->size(), 6u);
  EXPECT_EQ((*mixed)[4], (SourceParam{"out", "double*", true}));
  EXPECT_FALSE(sourceParameters(kSaxpy, "absent"));
  EXPECT_FALSE(sourceParameters(kSaxpy, "sax"));  // whole identifiers only
  // A forward declaration without names, then the definition; an unnamed parameter; an array
  // parameter; templates; no parameters.
  auto defined = sourceParameters("__global__ void k(float*, unsigned int);\n"
                                  "template <int N> __global__ void k(float* x, unsigned int n) {}\n",
                                  "k");
  ASSERT_TRUE(defined);
  EXPECT_EQ(*defined, (std::vector<SourceParam>{{"x", "float*", true}, {"n", "unsigned int", false}}));
  auto unnamed = sourceParameters("__global__ void u(float*, size_t, float a[4]);", "u");
  ASSERT_TRUE(unnamed);
  EXPECT_EQ(*unnamed, (std::vector<SourceParam>{{"", "float*", true}, {"", "size_t", false}, {"a", "float*", true}}));
  auto none = sourceParameters("extern \"C\" __global__ void z(void) {}", "z");
  ASSERT_TRUE(none);
  EXPECT_TRUE(none->empty());
  // A host function of the name is no kernel; overloads of different arity have no single declaration.
  EXPECT_FALSE(sourceParameters("void h(int a) {}", "h"));
  EXPECT_FALSE(sourceParameters("__global__ void o(int a) {}\n__global__ void o(int a, int b) {}", "o"));
}

// The check on a fake parameter table (what the driver would report for saxpy).
std::vector<Parameter> saxpyTable() { return parameterTable({4, 4, 8, 8}, sourceParameters(kSaxpy, "saxpy")); }

Argument value(size_t size, std::string what) { return {Argument::Kind::Value, size, "", std::move(what)}; }
Argument array(std::string type) { return {Argument::Kind::Array, 8, type, "rtcg::Array<" + type + "> of 10 elements"}; }

TEST(RawArgumentCheck, AcceptsMatchingArguments) {
  EXPECT_EQ(argumentMismatch("saxpy", saxpyTable(), {value(4, "int32_t 10"), value(4, "float 2"), array("f32"), array("f32")}), "");
  Argument pointer{Argument::Kind::Pointer, 8, "", "a device pointer"};
  EXPECT_EQ(argumentMismatch("saxpy", saxpyTable(), {value(4, "int32_t 10"), value(4, "float 2"), pointer, pointer}), "");
}

TEST(RawArgumentCheck, CountMismatchListsTheDeclaration) {
  EXPECT_EQ(argumentMismatch("saxpy", saxpyTable(), {value(4, "int32_t 10"), array("f32"), array("f32")}),
            "'saxpy' takes 4 parameters (int n, float a, const float* __restrict__ x, float* y), but 3 arguments were "
            "given");
  EXPECT_EQ(argumentMismatch("k", parameterTable({8}, std::nullopt), {}),
            "'k' takes 1 parameter, but 0 arguments were given");
}

TEST(RawArgumentCheck, NamesTheParameterOfAWrongSize) {
  EXPECT_EQ(argumentMismatch("saxpy", saxpyTable(), {value(4, "int32_t 10"), value(8, "double 2"), array("f32"), array("f32")}),
            "'saxpy': argument 2 for parameter 2 'a' (float) is double 2 (8 bytes), but the parameter takes 4 bytes");
  // Without the declaration, by position.
  EXPECT_EQ(argumentMismatch("k", parameterTable({4, 8}, std::nullopt), {value(4, "int32_t 1"), value(4, "float 1")}),
            "'k': argument 2 for parameter 2 is float 1 (4 bytes), but the parameter takes 8 bytes");
}

TEST(RawArgumentCheck, PointersAndValuesAreNotInterchangeable) {
  EXPECT_EQ(argumentMismatch("saxpy", saxpyTable(), {value(4, "int32_t 10"), value(4, "float 2"), value(8, "int64_t 5"), array("f32")}),
            "'saxpy': argument 3 for parameter 3 'x' (const float* __restrict__) is int64_t 5, but the parameter is a "
            "pointer: pass a device array");
  EXPECT_EQ(argumentMismatch("k", parameterTable({8}, std::vector<SourceParam>{{"n", "size_t", false}}), {array("f32")}),
            "'k': argument 1 for parameter 1 'n' (size_t) is rtcg::Array<f32> of 10 elements, but the parameter takes a "
            "value of 8 bytes, not a pointer");
}

TEST(RawArgumentCheck, ArrayElementTypeAgainstTheDeclaredPointer) {
  EXPECT_EQ(argumentMismatch("saxpy", saxpyTable(), {value(4, "int32_t 10"), value(4, "float 2"), array("f64"), array("f32")}),
            "'saxpy': argument 3 for parameter 3 'x' (const float* __restrict__) is rtcg::Array<f64> of 10 elements, "
            "but the parameter points to f32 elements");
  // Types rtcg does not map (unsigned, vectors, structs) are not second-guessed.
  std::vector<Parameter> t = parameterTable({8, 8}, std::vector<SourceParam>{{"u", "unsigned*", true}, {"v", "float4*", true}});
  EXPECT_EQ(argumentMismatch("k", t, {array("i32"), array("f32")}), "");
}

TEST(RawArgumentCheck, DeclarationOfAnotherCountIsNotUsed) {
  // A macro that expands to parameters: the driver's count wins, the names are dropped.
  std::vector<Parameter> t = parameterTable({8, 8}, std::vector<SourceParam>{{"x", "PARAMS", false}});
  EXPECT_TRUE(t[0].type.empty());
  EXPECT_EQ(argumentMismatch("k", t, {array("f32"), array("f32")}), "");
}

// The text parsers meet whatever an application passes (its source) or NVRTC prints: seeded random
// mixtures of the tokens they look for, unbalanced brackets, unterminated comments and literals.
// None may crash or throw; a decoded image encodes and decodes to itself.
TEST(RawTextParsers, SurviveHostileText) {
  const char* const pieces[] = {"__global__", " void ", "k", "(", ")", "<", ">", "[4]", ",", "*", "/*", "*/", "//",
                                "\n", "\"", "'", "\\", "=", "{", "}", ";", "int", " x", "k.cu", "(12): ",
                                "error: ", "warning #1-D: ", "\n  ^", ".entry ", ".param .u64 ", ".b8 p[", "E k 2 4 ",
                                "C 3\n", "rtcg-raw-image-1\n", "\t", "\r", "99999999999999999999"};
  uint64_t state = 12345;
  auto next = [&] { return (state = state * 6364136223846793005ULL + 1442695040888963407ULL) >> 33; };
  for (int round = 0; round < 3000; ++round) {
    std::string text;
    for (int n = int(next() % 40); n > 0; --n) text += pieces[next() % std::size(pieces)];
    EXPECT_NO_THROW({
      nvrtcDiagnostics(text, "k.cu", text);
      std::optional<std::vector<SourceParam>> params = sourceParameters(text, "k");
      std::vector<Parameter> table = parameterTable({4, 8}, params);
      argumentMismatch("k", table, {value(4, "int32_t 1"), array("f32")});
      parsePtxEntries(text);
      if (std::optional<ModuleImage> image = decodeImage(text)) {
        std::optional<ModuleImage> again = decodeImage(encodeImage(*image));
        EXPECT_TRUE(again && again->cubin == image->cubin && again->entries == image->entries);
      }
    }) << text;
  }
}

}  // namespace
}  // namespace rtcg::raw
