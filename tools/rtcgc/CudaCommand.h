// `rtcgc cuda`: a raw CUDA module (CUDA C of one's own, as Context::module and rtcg.SourceModule
// take it) compiled through rtcg's NVRTC route: its errors at the file's lines and columns, its
// functions with their parameters, or its cubin or PTX written out.
#pragma once

#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

struct CudaArgs {
  std::string file;
  std::vector<std::string> defines;  // -D NAME[=VALUE]: -DNAME[=VALUE] for NVRTC
  std::vector<std::string> options;  // --option=OPT: any other NVRTC option
  std::string arch = "sm_90";
  bool cubin = false, ptx = false;
  std::string output;
};

struct CudaCommand {
  CLI::App* command = nullptr;
  std::shared_ptr<CudaArgs> args;
};

CudaCommand addCudaCommand(CLI::App& app);

// 0 ok; 1 the module does not compile (NVRTC's diagnostics, with the line and a caret) or the file
// cannot be read or written; 2 bad command line (a refused option, --cubin without -o).
int runCudaCommand(const CudaCommand& cmd);
