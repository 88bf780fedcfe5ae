// External memory without a device: which kernel variant serves a launch (the arrays' address
// alignment), and what the variants for arrays off a 16-byte boundary emit: the same kernel and
// schedule, alignment assumed only as far as the pointers have it, no 16-byte vector accesses;
// whole allocations keep the default emission (test_golden holds it byte for byte).
#include <gtest/gtest.h>

#include "api/KernelArgs.h"
#include "driver/KernelBuild.h"

namespace rtcg {
namespace {

const char* kMatmul32 = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

const char* kMatmul64 = R"(kernel matmul(n: int, a: f64[n, n], b: f64[n, n], out c: f64[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

const std::string kStaged =
    "i: grid.y, thread.y 8, reg 2; j: grid.x, thread.x 8, reg 2; k: serial, unroll 4; shared: a, b";

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

PreparedKernel prepared(const char* source, const std::string& schedule, int alignment) {
  CompileOptions o;
  o.schedule = schedule;
  return prepareProved(source, proveKernel(source, {{"n", 32}}, o), o, {}, alignment);
}

TEST(ExternalMemory, TheArraysAlignmentPicksTheVariant) {
  EXPECT_EQ(addressAlignment({}), 16);
  EXPECT_EQ(addressAlignment({0x7f0000000000}), 16);
  EXPECT_EQ(addressAlignment({0, 0x7f0000000100}), 16);  // an empty array has no address
  EXPECT_EQ(addressAlignment({0x7f0000000000, 0x7f0000000004}), 4);
  EXPECT_EQ(addressAlignment({0x7f0000000008}), 8);
  EXPECT_EQ(addressAlignment({0x7f000000000c, 0x7f0000000010}), 4);
  EXPECT_EQ(addressAlignment({0x7f0000000002}), 2);
}

TEST(ExternalMemory, TheVariantAssumesOnlyThePointersAlignment) {
  PreparedKernel whole = prepared(kMatmul32, kStaged, 16);
  PreparedKernel at4 = prepared(kMatmul32, kStaged, 4);
  EXPECT_EQ(whole.module.source, prepareKernel(kMatmul32, {{"n", 32}}, [] {
              CompileOptions o;
              o.schedule = kStaged;
              return o;
            }()).module.source);  // 16 is the default emission
  EXPECT_TRUE(contains(whole.module.source, "__ldg((const float4*)&a[")) << whole.module.source;
  EXPECT_EQ(at4.module.arrayAlignment, 4);
  EXPECT_TRUE(contains(at4.module.source, "(const float*)__builtin_assume_aligned(a_arg, 4);")) << at4.module.source;
  EXPECT_TRUE(contains(at4.module.source, "Arrays may start inside an allocation: 4-byte aligned")) << at4.module.source;
  EXPECT_FALSE(contains(at4.module.source, "float4")) << at4.module.source;
  EXPECT_EQ(at4.scheduleText, whole.scheduleText);
  // A different source, so a different cubin in the kernel cache.
  EXPECT_NE(cubinKey(at4.module.source, "sm_90"), cubinKey(whole.module.source, "sm_90"));
}

TEST(ExternalMemory, AsyncCopiesOfTheVariantAreElementSized) {
  const std::string async = kStaged + "; buffers: 2; copy: async";
  EXPECT_TRUE(contains(prepared(kMatmul32, async, 16).module.source, "rtcg_cp_async16(&"));
  std::string at8 = prepared(kMatmul32, async, 8).module.source;
  EXPECT_FALSE(contains(at8, "rtcg_cp_async16(&")) << at8;
  EXPECT_TRUE(contains(at8, "rtcg_cp_async4(&")) << at8;
}

TEST(ExternalMemory, F64VariantHasNoDouble2) {
  EXPECT_TRUE(contains(prepared(kMatmul64, kStaged, 16).module.source, "double2"));
  std::string at8 = prepared(kMatmul64, kStaged, 8).module.source;
  EXPECT_FALSE(contains(at8, "double2")) << at8;
  EXPECT_TRUE(contains(at8, "__builtin_assume_aligned(b_arg, 8)")) << at8;
}

// The variants are CUDA that NVRTC compiles (the GPU tests run them at offsets 4, 8 and 12).
TEST(ExternalMemory, VariantsCompileWithNvrtc) {
  for (int alignment : {4, 8}) {
    PreparedKernel k = prepared(kMatmul32, kStaged + "; buffers: 2; copy: async", alignment);
    EXPECT_FALSE(compileCubin(k, "sm_90").empty()) << alignment;
  }
}

}  // namespace
}  // namespace rtcg
