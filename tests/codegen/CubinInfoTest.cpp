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
