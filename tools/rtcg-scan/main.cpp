// rtcg-scan: checks the DSL kernels embedded in C++ sources at build time.
//
//   rtcg-scan -p build src/app.cpp src/solver.cpp [--manifest kernels.json]
//   rtcg-scan app.cpp -- -std=c++20 -I/opt/rtcg/include        (flags instead of a database)
//
// Every compile-time string given to rtcg::Context::compile is parsed and checked (with the bounds
// and race proofs when all its sizes are constants), and every visible call of the compiled kernel
// is checked against its signature. Problems are printed in the compiler's format at their C++
// position. Exit status: 0 clean, 1 when a kernel or call has an error, 2 when the scan itself
// could not run (no database, a file clang cannot parse).
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include "Check.h"
#include "Manifest.h"
#include "Scanner.h"
#include "support/Error.h"
#include "support/OutputFile.h"

namespace {

// Make syntax: spaces in paths are escaped.
std::string depfileEscape(const std::string& path) {
  std::string out;
  for (char c : path) {
    if (c == ' ' || c == '#') out += '\\';
    if (c == '$') out += '$';
    out += c;
  }
  return out;
}

// The scanned files and every file a kernel's source or call is in (a kernel defined in a header),
// so a build system reruns the scan when one of them changes.
void writeDepfile(const std::string& path, const std::string& target, const rtcg::ScanRequest& request,
                  const rtcg::ScanResult& scan) {
  if (target.empty()) throw rtcg::Error("rtcg-scan: --depfile needs --depfile-target (or --manifest)");
  std::set<std::string> deps;
  for (const std::string& f : request.files) deps.insert(std::filesystem::absolute(f).lexically_normal().string());
  for (const rtcg::FoundKernel& k : scan.kernels) {
    deps.insert(k.file);
    deps.insert(k.source.file);
  }
  std::string text = depfileEscape(target) + ':';
  for (const std::string& d : deps) text += " \\\n  " + depfileEscape(d);
  text += '\n';
  try {
    rtcg::writeOutputFile(path, text);
  } catch (const rtcg::Error& e) {
    throw rtcg::Error(fmt::format("rtcg-scan: the depfile: {}", e.what()));
  }
}

}  // namespace

int main(int argc, char** argv) {
  // Like clang's tools, everything after `--` is the compile command for every file.
  std::vector<std::string> fixedArgs;
  bool haveFixed = false;
  int ownArgc = argc;
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--") {
      ownArgc = i;
      haveFixed = true;
      fixedArgs.assign(argv + i + 1, argv + argc);
      break;
    }

  CLI::App app{"rtcg-scan: checks the rtcg DSL kernels embedded in C++ sources"};
  rtcg::ScanRequest request;
  std::string manifestPath;
  bool verbose = false;
  app.add_option("files", request.files, "C++ sources to scan (default: every file of the compilation database)");
  app.add_option("-p,--build-dir", request.buildDir, "The build directory holding compile_commands.json");
  app.add_option("--extra-arg", request.extraArgs, "An argument appended to every compile command");
  app.add_option("--manifest", manifestPath, "Write every kernel found to this JSON file");
  app.add_flag("-v,--verbose", verbose, "Print a summary of the kernels found");
  std::string depfile, depfileTarget;
  app.add_option("--depfile", depfile,
                 "After a clean scan, write a Makefile-style depfile naming the files the kernels came from");
  app.add_option("--depfile-target", depfileTarget, "The target named in the depfile (default: the manifest)");
  // Exit codes 0/1/2 (docs/rtcg-scan.md): CLI11_PARSE would return CLI11's own codes (109 for an
  // unknown flag), which a build rule cannot tell from a crash.
  try {
    app.parse(ownArgc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return 2;
  }

  if (request.buildDir.empty() && !haveFixed) {
    std::fprintf(stderr, "rtcg-scan: give the build directory (-p DIR) or the compile flags after `--`\n");
    return 2;
  }
  request.compileArgs = fixedArgs;

  try {
    rtcg::ScanResult scan = rtcg::scanSources(request);
    rtcg::CppFiles files;
    std::vector<nlohmann::json> entries;
    std::set<std::string> printed;  // a literal shared by several compile calls: its errors once
    int errors = 0;
    for (const rtcg::FoundKernel& found : scan.kernels) {
      rtcg::KernelCheck check = rtcg::checkKernel(found, files);
      for (const rtcg::KernelCheck::Rendered& d : check.rendered) {
        if (!printed.insert(d.text).second) continue;
        std::fputs(d.text.c_str(), stderr);
        errors += d.severity == rtcg::Severity::Error;
      }
      entries.push_back(rtcg::manifestEntry(found, check));
      if (verbose)
        std::fprintf(stderr, "%s\n",
                     fmt::format("{}:{}:{}: note: kernel {} ({} call{} checked, sizes {})", found.file,
                                 found.callPos.line, found.callPos.col,
                                 check.kernelNames.empty() ? "(none parsed)" : fmt::format("{}", fmt::join(check.kernelNames, ", ")),
                                 found.calls.size(), found.calls.size() == 1 ? "" : "s",
                                 found.sizesConstant ? "constant" : "known at run time only")
                         .c_str());
    }
    if (!manifestPath.empty()) rtcg::writeManifest(manifestPath, rtcg::manifest(entries));
    if (errors) {
      std::fprintf(stderr, "rtcg-scan: %d error%s in embedded kernels\n", errors, errors == 1 ? "" : "s");
      return 1;
    }
    if (scan.cppErrors) {
      std::fprintf(stderr, "rtcg-scan: clang could not process every file (see above)\n");
      return 2;
    }
    if (!depfile.empty()) writeDepfile(depfile, depfileTarget.empty() ? manifestPath : depfileTarget, request, scan);
    return 0;
  } catch (const rtcg::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 2;
  }
}
