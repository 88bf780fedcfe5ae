// The clang side of rtcg-scan: parses C++ translation units with libTooling and collects every
// DSL kernel given to rtcg::Context::compile as a compile-time string, with its constant sizes and
// the calls of the resulting kernel object. The only file that includes clang headers.
#pragma once

#include <string>
#include <vector>

#include "Findings.h"

namespace rtcg {

struct ScanRequest {
  std::string buildDir;                // holds compile_commands.json; empty: use compileArgs
  std::vector<std::string> compileArgs;  // the flags for every file when there is no database
  std::vector<std::string> files;      // empty: every file of the compilation database
  std::vector<std::string> extraArgs;  // appended to every compile command
};

struct ScanResult {
  std::vector<FoundKernel> kernels;  // in file order; one entry per compile call, headers deduplicated
  bool cppErrors = false;            // clang could not parse a file (its errors went to stderr)
};

// Throws rtcg::Error when the compilation database cannot be loaded or no file is given.
ScanResult scanSources(const ScanRequest& request);

}  // namespace rtcg
