#include "ExportCommand.h"

#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>

#include "CommandLine.h"
#include "ExitCodes.h"
#include "ExportHeader.h"
#include "driver/Pipeline.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "runtime/Hash.h"
#include "support/Error.h"
#include "support/OutputFile.h"
#include "tune/TuningDb.h"
#include "tune/TuningKeyFor.h"

#ifndef RTCG_VERSION
#define RTCG_VERSION "unknown"
#endif

namespace fs = std::filesystem;
using namespace rtcg;
using namespace rtcgc;

namespace {

// The architectures an export compiles for, with the shared memory a block may opt in to there:
// a tuned schedule's tiles in dynamic shared memory must validate for the architecture they run on.
// In order of architecture, as the usage error lists them.
const std::vector<std::pair<std::string, int64_t>>& exportArchitectures() {
  static const std::vector<std::pair<std::string, int64_t>> archs{
      {"sm_75", 64 * 1024},  {"sm_80", 163 * 1024}, {"sm_86", 99 * 1024},   {"sm_87", 163 * 1024},
      {"sm_89", 99 * 1024},  {"sm_90", 227 * 1024}, {"sm_100", 227 * 1024}, {"sm_120", 99 * 1024}};
  return archs;
}

const int64_t* sharedOptin(const std::string& arch) {
  for (const auto& [name, shared] : exportArchitectures())
    if (name == arch) return &shared;
  return nullptr;
}

std::vector<std::string> parseArchs(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream ss(text);
  std::string arch;
  while (std::getline(ss, arch, ',')) {
    if (!sharedOptin(arch)) {
      std::vector<std::string> known;
      for (const auto& [name, shared] : exportArchitectures()) known.push_back(name);
      fmt::print(stderr, "rtcgc: error: cannot export for architecture '{}': supported are {}\n", arch,
                 fmt::join(known, ", "));
      throw Fail{2};
    }
    if (std::find(out.begin(), out.end(), arch) == out.end()) out.push_back(arch);
  }
  if (out.empty()) {
    fmt::print(stderr, "rtcgc: error: --arch needs at least one architecture, e.g. sm_80,sm_90\n");
    throw Fail{2};
  }
  return out;
}

// One architecture's cubin and launches under the schedule asked for (or the tuned one).
ExportedImage compileFor(const Kernel& bound, const ExportArgs& a, const std::string& arch, const SourceText& src,
                         std::string& cubin) {
  PipelineOptions options;
  options.arch = arch;
  options.schedule = a.schedule;
  options.precision = parsePrecision(a.precision).value_or(Precision::Ieee);  // checked by the option
  options.limits = exportScheduleLimits(arch);
  if (a.tuned) {
    std::string used;
    options.schedule = tunedSchedule(bound, arch, a.db, &used, options.precision);
    fmt::print(stderr, "rtcgc: {}: {}\n", arch, used);
  }
  Diagnostics diags;
  bool nvrtcFailed = false;
  std::optional<Compiled> c = compileProved(bound, options, diags, &nvrtcFailed);
  std::string text = renderDiagnostics(diags, src);
  if (!text.empty()) fputs(text.c_str(), stderr);
  if (!c) throw Fail{nvrtcFailed ? 3 : 1};
  // The exported header launches with plain pointers and scalars; TMA's tensor maps would need the
  // driver's encoding at each launch, which it does not do.
  for (const LaunchSpec& l : c->module.launches)
    if (!l.tensorMaps.empty()) {
      fmt::print(stderr, "rtcgc: export: {}: schedule '{}' copies tiles by TMA ('tma'), whose tensor maps an exported "
                 "header does not encode; export the schedule without 'tma'\n", arch, printSchedule(c->schedule));
      throw Fail{1};
    }
  cubin.assign(c->binary.cubin.begin(), c->binary.cubin.end());
  return {arch, fmt::format("{}.{}.cubin", bound.name, arch), printSchedule(c->schedule), c->module.launches};
}

// The manifest an export writes beside its files: which files it wrote and a hash of each, then
// a hash of those lines. An existing directory is replaced only when it is empty or this proves
// that rtcgc wrote everything in it and nobody changed it since: a directory of one's own cubins
// and headers (which looked like an earlier export) is never deleted.
//   rtcgc export manifest 1
//   HASH NAME            (hash128 of the file's bytes, one line per file)
//   end HASH             (hash128 of every line above it)
constexpr std::string_view kManifestName = ".rtcgc-export";
constexpr std::string_view kManifestHead = "rtcgc export manifest 1\n";

std::string exportManifest(const std::map<std::string, std::string>& files) {
  std::string text(kManifestHead);
  for (const auto& [name, data] : files) text += fmt::format("{} {}\n", hash128(data).hex(), name);
  return text + fmt::format("end {}\n", hash128(text).hex());
}

std::string readBounded(const fs::path& p, size_t limit) {
  std::ifstream in(p, std::ios::binary);
  std::string data;
  char buf[65536];
  while (in && data.size() <= limit) {
    in.read(buf, sizeof buf);
    data.append(buf, size_t(in.gcount()));
  }
  return data;
}

// The files the manifest of `dir` lists, by name, with their hashes; nullopt when there is no
// manifest or it is not one rtcgc wrote (damaged, or edited).
std::optional<std::map<std::string, std::string>> readManifest(const fs::path& dir) {
  const fs::path p = dir / kManifestName;
  std::error_code ec;
  if (fs::symlink_status(p, ec).type() != fs::file_type::regular) return std::nullopt;
  const std::string text = readBounded(p, size_t(1) << 20);
  const size_t endLine = text.rfind("end ");
  if (text.rfind(kManifestHead, 0) != 0 || endLine == std::string::npos ||
      text.substr(endLine) != fmt::format("end {}\n", hash128(text.substr(0, endLine)).hex()))
    return std::nullopt;
  std::map<std::string, std::string> files;
  std::istringstream lines(text.substr(kManifestHead.size(), endLine - kManifestHead.size()));
  std::string hash, name;
  while (lines >> hash >> name) files[name] = hash;
  return files;
}

// An existing output directory is replaced only when it is empty or an earlier export that the
// manifest proves untouched: `-o .` or `-o include` must not delete what a user keeps there.
void checkReplaceable(const fs::path& dir, const std::string& output) {
  if (fs::directory_iterator(dir) == fs::directory_iterator()) return;
  std::optional<std::map<std::string, std::string>> manifest = readManifest(dir);
  if (!manifest)
    throw Error(fmt::format("'{}' exists and is not an rtcgc export (it has no intact {} manifest of one): remove it "
                            "or export to another directory",
                            output, kManifestName));
  for (const fs::directory_entry& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name == kManifestName) continue;
    auto listed = manifest->find(name);
    if (listed == manifest->end() || e.symlink_status().type() != fs::file_type::regular)
      throw Error(fmt::format("'{}' holds '{}', which rtcgc export did not write there: remove it or export to "
                              "another directory",
                              output, name));
    if (hash128(readBounded(e.path(), size_t(256) << 20)).hex() != listed->second)
      throw Error(fmt::format("'{}' of the export '{}' changed since rtcgc wrote it: remove the export or export to "
                              "another directory",
                              name, output));
  }
}

// The directory `-o` names, refused when exporting there would replace something else.
fs::path exportDirectory(const std::string& output) {
  fs::path dir = fs::absolute(output).lexically_normal();
  if (dir.filename().empty()) dir = dir.parent_path();  // "out/" names "out"
  if (output.empty() || dir == dir.root_path() || fs::path(output).lexically_normal().filename() == "..")
    throw Error(fmt::format("cannot export to '{}': name a directory of its own, e.g. -o kernels/NAME", output));
  if (fs::exists(fs::symlink_status(dir))) {
    if (!fs::is_directory(fs::symlink_status(dir)))
      throw Error(fmt::format("cannot write '{}': it exists and is not a directory", output));
    checkReplaceable(dir, output);
  }
  return dir;
}

// Replaces `dir` with the complete directory `staged`: the old one is moved aside first and removed
// last, so the path names either the old export, nothing, or the new one, never a part of one.
void replaceDirectory(const fs::path& staged, const fs::path& dir) {
  fs::path old;
  if (fs::exists(fs::symlink_status(dir))) {
    old = staged.string() + ".old";
    fs::rename(dir, old);
  }
  std::error_code ec;
  fs::rename(staged, dir, ec);
  if (ec) {
    if (!old.empty()) fs::rename(old, dir);
    throw Error(fmt::format("cannot write '{}': {}", dir.string(), ec.message()));
  }
  if (!old.empty()) fs::remove_all(old);
}

// Writes every file into a fresh directory beside the output and moves it into place.
void writeExport(const std::string& output, const std::map<std::string, std::string>& files) {
  fs::path dir = exportDirectory(output);  // again: it may have changed while compiling
  std::string pattern = (dir.parent_path() / ("." + dir.filename().string() + ".tmp-XXXXXX")).string();
  if (!mkdtemp(pattern.data()))
    throw Error(fmt::format("cannot write '{}' (in '{}'): {}", output, dir.parent_path().string(),
                            std::strerror(errno)));
  fs::path staged = pattern;
  try {
    // mkdtemp makes it 0700; an export is as readable as any other output (0777 less the umask).
    mode_t mask = umask(0);
    umask(mask);
    chmod(staged.c_str(), 0777 & ~mask);
    for (const auto& [name, data] : files) writeOutputFile((staged / name).string(), data);
    writeOutputFile((staged / kManifestName).string(), exportManifest(files));
    replaceDirectory(staged, dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(staged, ec);
    throw;
  }
}

int run(const ExportArgs& a) {
  if (a.tuned && !a.schedule.empty()) {
    fmt::print(stderr, "rtcgc: error: --tuned and --schedule exclude each other\n");
    return 2;
  }
  std::vector<std::string> archs = parseArchs(a.archs);
  exportDirectory(a.output);  // before compiling: a refused directory costs nothing
  SourceText src = readSource(a.file);
  Diagnostics diags;
  std::optional<Kernel> bound = proveKernel(src, parseDefines(a.defines), a.kernel, diags);
  std::string text = renderDiagnostics(diags, src);
  if (!text.empty()) fputs(text.c_str(), stderr);
  if (!bound) return 1;
  std::map<std::string, std::string> files;
  std::vector<ExportedImage> images;
  for (const std::string& arch : archs) {
    std::string cubin;
    images.push_back(compileFor(*bound, a, arch, src, cubin));
    files[images.back().cubinFile] = cubin;
  }
  std::string origin = fmt::format("from {} by rtcg {}", fs::path(a.file).filename().string(), RTCG_VERSION);
  files[exportHeaderName(*bound)] = exportHeader(*bound, images, origin);
  writeExport(a.output, files);
  fmt::print("{}: {} with cubins for {}\n", a.output, exportHeaderName(*bound), a.archs);
  return 0;
}

std::string describe(const TuningKey& key, const CandidateRecord& best) {
  return fmt::format("schedule from the tuning database ({}, {}, driver {}, NVRTC {}; {:.4f} ms): {}", key.device,
                     key.arch, key.driverVersion, key.nvrtcVersion, best.medianMs, best.schedule);
}

}  // namespace

std::string tunedSchedule(const Kernel& bound, const std::string& arch, const std::string& dbPath, std::string* used,
                          Precision precision) {
  std::string path = dbPath.empty() ? TuningDb::defaultPath() : dbPath;
  std::string what = fmt::format("kernel '{}' ({}) for {}", bound.name, sizesText(bound), arch);
  if (!fs::exists(path)) throw Error(fmt::format("no tuning database at '{}' to take the tuned schedule of {} from", path, what));
  TuningDb db(path);
  if (cuda::cudaAvailable() && cuda::Device::count() > 0) {
    const cuda::DeviceProperties& device = cuda::Device(0).properties();
    if (device.arch() == arch) {
      TuningKey key = tuningKeyFor(bound, device, precision);
      std::optional<CandidateRecord> best = db.best(key);
      if (!best)
        throw Error(fmt::format("{} has no verified schedule for {} in '{}': run `rtcgc tune` with these sizes first",
                                device.name, what, path));
      if (used) *used = describe(key, *best);
      return best->schedule;
    }
  }
  std::vector<TuningDb::Entry> matches;
  for (TuningDb::Entry& e : db.list())
    if (e.best && e.key.kernelHash == kernelHashOf(bound, precision) && e.key.arch == arch && e.key.rtcgVersion == RTCG_VERSION)
      matches.push_back(std::move(e));
  if (matches.empty())
    throw Error(fmt::format("'{}' has no verified schedule for {} (rtcg {}): run `rtcgc tune` with these sizes on "
                            "such a device first",
                            path, what, RTCG_VERSION));
  if (matches.size() > 1) {
    std::vector<std::string> keys;
    for (const TuningDb::Entry& e : matches)
      keys.push_back(fmt::format("{} (driver {}, NVRTC {})", e.key.device, e.key.driverVersion, e.key.nvrtcVersion));
    throw Error(fmt::format("'{}' holds {} keys for {}: {}; run on the device whose schedule you want, or keep one "
                            "(rtcgc db export/import)",
                            path, matches.size(), what, fmt::join(keys, "; ")));
  }
  if (used) *used = describe(matches[0].key, *matches[0].best);
  return matches[0].best->schedule;
}

ScheduleLimits exportScheduleLimits(const std::string& arch) {
  const int64_t* shared = sharedOptin(arch);
  return shared ? deviceScheduleLimits(*shared, 1024) : ScheduleLimits{};
}

ExportCommand addExportCommand(CLI::App& app) {
  ExportCommand e;
  e.args = std::make_shared<ExportArgs>();
  ExportArgs& a = *e.args;
  CLI::App* cmd = app.add_subcommand("export", "compile a kernel ahead of time: cubins for several architectures and "
                                               "a C++ header that launches them through the CUDA driver API");
  e.command = cmd;
  cmd->add_option("file", a.file, "DSL source file")->required();
  cmd->add_option("-D,--define", a.defines, "bind a size parameter: -D n=500")->allow_extra_args(false);
  cmd->add_option("-k,--kernel", a.kernel, "the kernel to export when the file defines several");
  cmd->add_option("-s,--schedule", a.schedule, "schedule text (default: the default schedule)");
  cmd->add_flag("--tuned", a.tuned, "use the tuning database's best schedule for each architecture");
  cmd->add_option("--db", a.db, "tuning database for --tuned (default: in the cache directory)");
  cmd->add_option("--arch", a.archs, "architectures, separated by commas (default sm_90), e.g. sm_80,sm_90");
  cmd->add_option("--precision", a.precision,
                  "tensor-core arithmetic f32 contractions may use (ieee, tf32x3, tf32, fp64x, fp32x; as for emit); with --tuned, "
                  "the schedule tuned under it")
      ->check(CLI::IsMember({"ieee", "tf32x3", "tf32", "fp64x", "fp32x"}));
  cmd->add_option("-o,--output", a.output, "the directory to write (replaced as a whole)")->required();
  return e;
}

int runExportCommand(const ExportCommand& cmd) {
  return runCommand([&] { return run(*cmd.args); });
}
