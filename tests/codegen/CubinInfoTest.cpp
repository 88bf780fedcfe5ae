// The cubin reader agrees with ptxas's own report, and never misreads bad input.
#include <gtest/gtest.h>

#include <string>

#include "codegen/CubinInfo.h"
#include "codegen/Emitter.h"
#include "codegen/Nvrtc.h"
#include "SourceKernels.h"
#include "tune/CompilePool.h"

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

// Where NVRTC gives no ptxas report (13.0.88 on the GPU host, for some kernels), the resources come
// from the cubin, which records each function's stack frame but not its spills: a frame there is
// taken for spills. In emitted kernels the two go together: the tf32x3 tile that spills 156 bytes
// here has a frame, the same tile without blocks_per_sm (no spill) has none; and launchObstacle
// says the same of both whichever way their resources were read.
TEST(CubinInfo, AStackFrameStandsForSpillsWhereNoReportSaysSo) {
  Kernel k = testing::exampleKernel("matmul.rtcg", "", {{"n", 4096}});
  struct Case {
    const char* schedule;
    bool spills;
  };
  for (const Case& c : {Case{"blocks_per_sm: 2; mma: tf32x3 m16n8k8 warps 2x2 tile 4x8 k 16 stages 3", true},
                        Case{"mma: tf32x3 m16n8k8 warps 2x2 tile 2x4 k 16 stages 3", false},
                        Case{"i: grid.y, thread.y 16, reg 8; j: grid.x, reg 2, thread.x 16, reg 4; k: serial, unroll 8; "
                             "shared: a^T, b", false}}) {
    SCOPED_TRACE(c.schedule);
    ScheduleLimits limits;
    limits.maxSharedBytes = 227 * 1024;
    EmittedModule m = emitCuda(k, *parseSchedule(c.schedule).schedule, limits);
    CudaCompileResult r = compileCuda(m.source, "matmul.cu", "sm_90");
    ASSERT_TRUE(r.success) << r.log;
    std::vector<KernelResources> fromLog = parsePtxasInfo(r.log);
    std::vector<KernelResources> fromElf = resourcesFromCubin(std::string_view(r.cubin.data(), r.cubin.size()));
    ASSERT_EQ(fromLog.size(), 1u) << r.log;
    ASSERT_EQ(fromElf.size(), 1u);
    EXPECT_EQ(fromLog[0].spillStoreBytes + fromLog[0].spillLoadBytes > 0, c.spills) << r.log;
    EXPECT_EQ(fromElf[0].localBytes > 0, c.spills);
    EXPECT_FALSE(fromElf[0].spillsKnown);
    CudaCompileResult logless = r;
    logless.resources = fromElf;
    r.resources = fromLog;
    const LaunchLimits device;
    EXPECT_EQ(launchObstacle(m, r, device).empty(), !c.spills);
    EXPECT_EQ(launchObstacle(m, logless, device).empty(), !c.spills);
  }
}

}  // namespace
}  // namespace rtcg
