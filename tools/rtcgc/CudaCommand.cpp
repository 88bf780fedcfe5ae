#include "CudaCommand.h"

#include <fmt/format.h>

#include "CommandLine.h"
#include "ExitCodes.h"
#include "codegen/NvrtcArchs.h"
#include "driver/RawModule.h"
#include "support/Error.h"

using namespace rtcg;
using namespace rtcgc;

CudaCommand addCudaCommand(CLI::App& app) {
  CudaCommand c;
  c.args = std::make_shared<CudaArgs>();
  CudaArgs& a = *c.args;
  c.command = app.add_subcommand("cuda", "compile a raw CUDA module (CUDA C of your own) through rtcg's NVRTC route: "
                                         "errors with their line and column, its functions and parameters, a cubin or PTX");
  c.command->add_option("file", a.file, "CUDA C source file")->required();
  c.command->add_option("-D,--define", a.defines, "define a macro for NVRTC: -D TILE=128 (or -D DEBUG)")
      ->allow_extra_args(false);
  c.command->add_option("--option", a.options,
                        "another NVRTC option, one word each: --option=--use_fast_math --option=-lineinfo")
      ->allow_extra_args(false);
  c.command->add_option("--arch", a.arch, "target architecture (default sm_90)");
  c.command->add_flag("--cubin", a.cubin, "write the cubin (needs -o)");
  c.command->add_flag("--ptx", a.ptx, "write the PTX");
  c.command->add_option("-o,--output", a.output, "output file for --cubin or --ptx (default for --ptx: standard output)");
  return c;
}

namespace {

// "saxpy(int n, float a, const float* x, float* y): 4 parameters of 4, 4, 8, 8 bytes".
std::string describeEntry(const raw::PtxEntry& e, const std::string& text) {
  std::vector<raw::Parameter> params = raw::parameterTable(e.paramSizes, raw::sourceParameters(text, e.name));
  std::string decl, sizes;
  for (const raw::Parameter& p : params) {
    decl += fmt::format("{}{}", decl.empty() ? "" : ", ",
                        p.type.empty() ? "?" : p.name.empty() ? p.type : p.type + " " + p.name);
    sizes += fmt::format("{}{}", sizes.empty() ? "" : ", ", p.size);
  }
  return fmt::format("{}({}): {} parameter{}{}", e.name, decl, params.size(), params.size() == 1 ? "" : "s",
                     params.empty() ? "" : " of " + sizes + " bytes");
}

}  // namespace

int runCudaCommand(const CudaCommand& cmd) {
  const CudaArgs& a = *cmd.args;
  if (a.cubin && a.ptx) {
    fmt::print(stderr, "rtcgc: error: --ptx and --cubin exclude each other\n");
    return kUsage;
  }
  if (a.cubin && a.output.empty()) {
    fmt::print(stderr, "rtcgc: error: --cubin writes a binary file: name it with -o FILE\n");
    return kUsage;
  }
  if (a.arch.rfind("sm_", 0) != 0) {
    fmt::print(stderr, "rtcgc: error: --arch: a raw module compiles to a cubin for a real architecture (sm_XX), not "
                       "'{}'\n",
               a.arch);
    return kUsage;
  }
  if (std::string why = checkNvrtcArch(a.arch); !why.empty()) {
    fmt::print(stderr, "rtcgc: error: --arch: {}\n", why);
    return kUsage;
  }
  std::vector<std::string> options;
  for (const std::string& d : a.defines) options.push_back("-D" + d);
  options.insert(options.end(), a.options.begin(), a.options.end());
  try {
    raw::checkOptions(options);
  } catch (const Error& e) {
    fmt::print(stderr, "rtcgc: error: {}\n", e.what());
    return kUsage;
  }
  SourceText src = readSource(a.file);
  raw::ModuleImage image;
  try {
    image = raw::compileModule(src.text, src.fileName, options, a.arch);
  } catch (const CompileError& e) {  // the module's errors, rendered as rtcgc renders a program's
    fmt::print(stderr, "{}", e.what());
    return kInputError;
  }
  if (!image.warnings.empty()) fmt::print(stderr, "{}", image.warnings);
  if (a.cubin) {
    writeFileAtomically(a.output, image.cubin);
  } else if (a.ptx) {
    if (a.output.empty() || a.output == "-")
      fwrite(image.ptx.data(), 1, image.ptx.size(), stdout);
    else
      writeFileAtomically(a.output, image.ptx);
  } else {
    for (const raw::PtxEntry& e : image.entries) fmt::print("{}\n", describeEntry(e, src.text));
  }
  return kOk;
}
