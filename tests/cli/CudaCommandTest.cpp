// `rtcgc cuda`: a raw CUDA module through rtcg's NVRTC route from the command line: its functions
// and parameters, a cubin, PTX, NVRTC's errors at the file's line and column, and usage errors.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "Shell.h"

namespace fs = std::filesystem;

namespace {

rtcg::tests::ShellResult rtcgc(const std::string& args) {
  return rtcg::tests::shell(std::string(RTCGC_PATH) + " " + args + " 2>&1");
}

const std::string kExample = std::string(RTCG_SOURCE_DIR) + "/examples/cuda/axpy_tiled.cu";

class CudaCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("rtcgc-cuda-test-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    fs::path p = dir_ / name;
    std::ofstream(p) << text;
    return p.string();
  }
  fs::path dir_;
};

TEST_F(CudaCommand, ListsFunctionsWithTheirParameters) {
  auto r = rtcgc("cuda " + kExample + " -D TILE=4");
  EXPECT_EQ(r.code, 0) << r.out;
  EXPECT_EQ(r.out,
            "axpy_tiled(int n, float a, const float* __restrict__ x, float* __restrict__ y): 4 parameters of 4, 4, 8, 8 "
            "bytes\n"
            "axpy_reference(int n, float a, const float* x, float* y): 4 parameters of 4, 4, 8, 8 bytes\n");
}

TEST_F(CudaCommand, WritesACubinAndPtx) {
  std::string cubin = (dir_ / "m.cubin").string();
  auto r = rtcgc("cuda " + kExample + " --option=--use_fast_math --cubin -o " + cubin);
  ASSERT_EQ(r.code, 0) << r.out;
  std::ifstream in(cubin, std::ios::binary);
  std::string head(4, '\0');
  in.read(head.data(), 4);
  EXPECT_EQ(head, "\x7f" "ELF");
  auto ptx = rtcgc("cuda " + kExample + " -D TILE=2 --ptx --arch sm_80");
  ASSERT_EQ(ptx.code, 0) << ptx.out;
  EXPECT_NE(ptx.out.find(".target sm_80"), std::string::npos);
  EXPECT_NE(ptx.out.find(".entry axpy_tiled("), std::string::npos);
}

TEST_F(CudaCommand, ErrorsPointAtTheLineAndColumnAndWriteNothing) {
  std::string file = write("bad.cu", "extern \"C\" __global__ void k(float* x) {\n  x[0] = missing + 1;\n}\n");
  std::string out = (dir_ / "bad.cubin").string();
  auto r = rtcgc("cuda " + file + " --cubin -o " + out);
  EXPECT_EQ(r.code, 1) << r.out;
  EXPECT_NE(r.out.find(file + ":2:10: error: identifier \"missing\" is undefined\n    x[0] = missing + 1;\n"
                              "           ^"),
            std::string::npos)
      << r.out;
  EXPECT_FALSE(fs::exists(out));
}

TEST_F(CudaCommand, UsageErrors) {
  EXPECT_EQ(rtcgc("cuda " + kExample + " --cubin").code, 2);
  EXPECT_EQ(rtcgc("cuda " + kExample + " --cubin --ptx -o x").code, 2);
  auto arch = rtcgc("cuda " + kExample + " --option=-arch=sm_80");
  EXPECT_EQ(arch.code, 2);
  EXPECT_NE(arch.out.find("is rtcg's to choose"), std::string::npos) << arch.out;
  EXPECT_EQ(rtcgc("cuda " + kExample + " --arch compute_90").code, 2);
  EXPECT_EQ(rtcgc("cuda " + (dir_ / "missing.cu").string()).code, 1);
}

}  // namespace
