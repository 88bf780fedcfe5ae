// The cubin reader agrees with ptxas's own report, and never misreads bad input.
#include <gtest/gtest.h>

#include <string>

#include "codegen/CubinInfo.h"
#include "codegen/Nvrtc.h"

namespace rtcg {
namespace {

const char* kSource = R"(
extern "C" __global__ void plain(const float* __restrict__ a, float* __restrict__ b, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) b[i] = a[i] * 2.0f;
}
extern "C" __global__ void staged(const float* __restrict__ a, float* __restrict__ b) {
  __shared__ float tile[33 * 32];
  tile[threadIdx.y * 33 + threadIdx.x] = a[blockIdx.x * 1024 + threadIdx.y * 32 + threadIdx.x];
  __syncthreads();
  b[blockIdx.x * 1024 + threadIdx.x * 32 + threadIdx.y] = tile[threadIdx.x * 33 + threadIdx.y];
}
extern "C" __global__ void withStack(float* b, int k) {
  float local[64];
  for (int i = 0; i < 64; ++i) local[i] = b[i] * i;
  b[threadIdx.x] = local[k & 63];
}
)";

TEST(PtxasInfo, AKernelNameOfAMillionCharactersIsReadWithoutRecursion) {
  // std::regex matched the quoted name one recursion per character: 30 000 overflowed the stack.
  std::string name(1000000, 'k');
  auto parsed = parsePtxasInfo("ptxas info    : Compiling entry function '" + name + "' for 'sm_90'\n"
                               "ptxas info    : Function properties for " + name + "\n"
                               "ptxas         .     24 bytes stack frame, 8 bytes spill stores, 4 bytes spill loads\n"
                               "ptxas info    : Used 40 registers, used 0 barriers, 1024 bytes smem, 352 bytes cmem[0]\n");
  ASSERT_EQ(parsed.size(), 1u);
  EXPECT_EQ(parsed[0].name, name);
  EXPECT_EQ(parsed[0].registers, 40);
  EXPECT_EQ(parsed[0].localBytes, 24);
  EXPECT_EQ(parsed[0].spillStoreBytes, 8);
  EXPECT_EQ(parsed[0].spillLoadBytes, 4);
  EXPECT_EQ(parsed[0].sharedBytes, 1024);
  // Lines before the first entry and malformed ones are skipped.
  EXPECT_TRUE(parsePtxasInfo("ptxas info    : Used 40 registers\n").empty());
  EXPECT_TRUE(parsePtxasInfo("ptxas info    : Compiling entry function '' for 'sm_90'\n").empty());
}

TEST(CubinInfo, AgreesWithPtxas) {
  CudaCompileResult r = compileCuda(kSource, "three.cu", "sm_90");
  ASSERT_TRUE(r.success) << r.log;
  std::vector<KernelResources> fromLog = parsePtxasInfo(r.log);
  std::vector<KernelResources> fromElf = resourcesFromCubin(std::string_view(r.cubin.data(), r.cubin.size()));
  ASSERT_EQ(fromLog.size(), 3u) << r.log;
  ASSERT_EQ(fromElf.size(), 3u);
  for (const KernelResources& l : fromLog) {
    SCOPED_TRACE(l.name);
    const KernelResources* e = nullptr;
    for (const KernelResources& x : fromElf)
      if (x.name == l.name) e = &x;
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(e->registers, l.registers);
    EXPECT_EQ(e->localBytes, l.localBytes);
    EXPECT_EQ(e->sharedBytes, l.sharedBytes);
  }
}

TEST(CubinInfo, RejectsWhatIsNotACubin) {
  EXPECT_TRUE(resourcesFromCubin("").empty());
  EXPECT_TRUE(resourcesFromCubin("not an elf file at all, just some text that is long enough........").empty());
  CudaCompileResult r = compileCuda(kSource, "three.cu", "sm_90");
  ASSERT_TRUE(r.success);
  std::string image(r.cubin.begin(), r.cubin.end());
  // Every truncation and a corrupted section table must be handled without reading out of bounds.
  for (size_t n = 0; n < image.size(); n += 97) (void)resourcesFromCubin(std::string_view(image).substr(0, n));
  std::string bad = image;
  for (size_t i = 0x28; i < 0x30; ++i) bad[i] = char(0xff);
  EXPECT_TRUE(resourcesFromCubin(bad).empty());
}

}  // namespace
}  // namespace rtcg
