// `rtcgc db`. See DbCommand.h.
#include "DbCommand.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <set>
#include <tuple>

#include "ExitCodes.h"
#include "support/Error.h"
#include "support/InputFile.h"
#include "support/OutputFile.h"
#include "driver/KernelBuild.h"
#include "rtcg/rtcg.h"
#include "runtime/CudaDriver.h"
#include "runtime/Device.h"
#include "tune/TuningDb.h"
#include "tune/TuningKeyFor.h"
#include "tune/TuningLookup.h"

namespace rtcg {

using rtcgc::Fail;
using rtcgc::kInputError;
using rtcgc::kOk;
using rtcgc::kUsage;
using rtcgc::runCommand;

namespace {

struct Io {
  std::FILE* in;
  std::FILE* out;
  std::FILE* err;
  template <typename... Args>
  [[noreturn]] void fail(int code, fmt::format_string<Args...> f, Args&&... args) const {
    fmt::print(err, "rtcgc: error: {}\n", fmt::format(f, std::forward<Args>(args)...));
    throw Fail{code};
  }
};

// Lines of a table with aligned columns; `right` marks right-aligned (numeric) columns. The last
// column is not padded (long schedules do not push trailing spaces).
std::vector<std::string> formatTable(const std::vector<std::string>& headers,
                                     const std::vector<std::vector<std::string>>& rows, const std::vector<bool>& right) {
  std::vector<size_t> width(headers.size());
  for (size_t c = 0; c < headers.size(); ++c) width[c] = headers[c].size();
  for (const auto& r : rows)
    for (size_t c = 0; c < r.size(); ++c) width[c] = std::max(width[c], r[c].size());
  auto line = [&](const std::vector<std::string>& cells) {
    std::string s;
    for (size_t c = 0; c < cells.size(); ++c) {
      bool last = c + 1 == cells.size();
      if (c) s += "  ";
      if (right[c])
        s += fmt::format("{:>{}}", cells[c], width[c]);
      else
        s += last ? cells[c] : fmt::format("{:<{}}", cells[c], width[c]);
    }
    return s;
  };
  std::vector<std::string> out{line(headers)};
  for (const auto& r : rows) out.push_back(line(r));
  return out;
}

std::string num(double v) {  // 4 significant digits, no exponent for large values
  return std::abs(v) >= 1e4 ? fmt::format("{:.0f}", v) : fmt::format("{:.4g}", v);
}

std::string driverText(int v) {  // CUDA's 1000 * major + 10 * minor
  return v > 0 ? fmt::format("{}.{}", v / 1000, (v % 1000) / 10) : "unknown";
}

std::string firstLine(const std::string& text, size_t maxChars) {
  std::string line = text.substr(0, text.find('\n'));
  if (line.size() > maxChars) line = line.substr(0, maxChars) + "...";
  return line;
}

std::string dbPathOf(const DbOptions& o) { return o.dbPath.empty() ? TuningDb::defaultPath() : o.dbPath; }

bool dbExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

// The kernel hash the user means: an exact hash or a unique prefix of one (case-insensitive).
std::string resolveHash(TuningDb& db, const std::string& given, const Io& io) {
  std::string want = given;
  std::transform(want.begin(), want.end(), want.begin(), [](unsigned char c) { return std::tolower(c); });
  std::set<std::string> matches;
  for (const TuningDb::Entry& e : db.list()) {
    std::string h = e.key.kernelHash;
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
    if (h == want) return e.key.kernelHash;
    if (h.compare(0, want.size(), want) == 0) matches.insert(e.key.kernelHash);
  }
  if (matches.empty())
    io.fail(kInputError, "no tuned kernel with hash '{}' in {} (see `rtcgc db list`)", given, db.path());
  if (matches.size() > 1) {
    std::string all;
    for (const std::string& m : matches) all += (all.empty() ? "" : ", ") + m;
    io.fail(kInputError, "hash prefix '{}' is ambiguous: {}", given, all);
  }
  return *matches.begin();
}

// `text` with control bytes shown as '?' (one column each, so tables stay aligned): names and
// reasons come from imported files, and an escape sequence in one was sent to the terminal as is.
std::string shown(std::string text) {
  for (char& c : text)
    if ((unsigned char)c < 0x20 || c == 0x7f) c = '?';
  return text;
}

int runList(const DbOptions& o, const Io& io) {
  std::string path = dbPathOf(o);
  if (!dbExists(path)) {
    fmt::print(io.out, "No tuning database at {} yet.\n", path);
    return kOk;
  }
  TuningDb db(path, TuningDb::Access::ReadOnly);  // no journal-mode switch or migration, which wait for writers
  std::vector<TuningDb::Entry> entries = db.list();
  if (entries.empty()) {
    fmt::print(io.out, "No tuned kernels in {}.\n", path);
    return kOk;
  }
  std::vector<std::vector<std::string>> rows;
  for (const TuningDb::Entry& e : entries)
    rows.push_back({e.key.kernelHash, e.key.kernelName, e.key.sizes.empty() ? "-" : e.key.sizes,
                    fmt::format("{} {}", e.key.device, e.key.arch), std::to_string(e.measured),
                    std::to_string(e.verified), e.best ? num(e.best->medianMs) : "-",
                    e.best ? e.best->schedule : "-"});
  for (const std::string& l :
       formatTable({"HASH", "KERNEL", "SIZES", "DEVICE", "CANDIDATES", "VERIFIED", "BEST MS", "BEST SCHEDULE"}, rows,
                   {false, false, false, false, true, true, true, false}))
    fmt::print(io.out, "{}\n", shown(l));
  return kOk;
}

int runShow(const DbOptions& o, const Io& io) {
  std::string path = dbPathOf(o);
  if (!dbExists(path)) io.fail(kInputError, "no tuning database at {}", path);
  TuningDb db(path, TuningDb::Access::ReadOnly);  // no journal-mode switch or migration, which wait for writers
  std::string hash = resolveHash(db, o.hash, io);
  bool firstKey = true;
  for (const TuningDb::Entry& e : db.list()) {
    if (e.key.kernelHash != hash) continue;
    const TuningKey& k = e.key;
    if (!firstKey) fmt::print(io.out, "\n");
    firstKey = false;
    fmt::print(io.out, "{}\n", shown(fmt::format("{} {} ({})", k.kernelName, k.sizes.empty() ? "-" : k.sizes, k.kernelHash)));
    fmt::print(io.out, "{}\n", shown(fmt::format("  device {} ({}), driver {}, NVRTC {}, rtcg {}", k.device, k.arch,
                                                driverText(k.driverVersion), k.nvrtcVersion, k.rtcgVersion)));
    fmt::print(io.out, "  {} candidates, {} verified\n\n", e.measured, e.verified);

    // Verified first, fastest first; then the failures, grouped by status, in record order.
    std::vector<CandidateRecord> cs = db.candidates(k);
    std::stable_sort(cs.begin(), cs.end(), [](const CandidateRecord& a, const CandidateRecord& b) {
      bool av = a.status == CandidateStatus::Verified, bv = b.status == CandidateStatus::Verified;
      if (av != bv) return av;
      if (av) return a.medianMs < b.medianMs;
      return static_cast<int>(a.status) < static_cast<int>(b.status);
    });
    std::vector<std::vector<std::string>> rows;
    for (size_t i = 0; i < cs.size(); ++i) {
      const CandidateRecord& c = cs[i];
      bool ok = c.status == CandidateStatus::Verified;
      rows.push_back({std::to_string(i + 1), statusName(c.status), ok ? num(c.medianMs) : "-",
                      ok ? num(c.gflops) : "-", ok ? num(c.gbytes) : "-", std::to_string(c.registers),
                      std::to_string(c.spillBytes), std::to_string(c.sharedBytes),
                      fmt::format("{:.0f}%", c.occupancy * 100), c.schedule});
    }
    std::vector<std::string> lines =
        formatTable({"#", "STATUS", "MS", "GF/S", "GB/S", "REGS", "SPILL", "SMEM", "OCC", "SCHEDULE"}, rows,
                    {true, false, true, true, true, true, true, true, true, false});
    fmt::print(io.out, "{}\n", lines[0]);
    size_t indent = std::to_string(cs.size()).size() + 2;
    for (size_t i = 0; i < cs.size(); ++i) {
      fmt::print(io.out, "{}\n", shown(lines[i + 1]));
      if (!cs[i].reason.empty())
        fmt::print(io.out, "{:{}}reason: {}\n", "", indent, shown(firstLine(cs[i].reason, 200)));
    }
  }
  return kOk;
}

// Every verified candidate as `kernel<TAB>sizes<TAB>schedule<TAB>median ms<TAB>registers` lines,
// sorted, with '#' comment lines first saying what they hold; a schedule measured more than once
// for a key gives the median of its times. The format of bench/results/*-candidates.tsv, which
// calibrates the static model offline (tests/space: SpaceModel.RanksMeasuredWinnersNearTheTop).
std::string verifiedTsv(TuningDb& db, const std::string& hash) {
  std::set<std::string> devices;
  std::map<std::tuple<std::string, std::string, std::string>, std::pair<std::vector<double>, int64_t>> rows;
  for (const TuningDb::Entry& e : db.list()) {
    if (!hash.empty() && e.key.kernelHash != hash) continue;
    for (const CandidateRecord& c : db.candidates(e.key)) {
      if (c.status != CandidateStatus::Verified || c.schedule.find('\t') != std::string::npos) continue;
      devices.insert(fmt::format("{} ({}, driver {})", e.key.device, e.key.arch, driverText(e.key.driverVersion)));
      auto& row = rows[{e.key.kernelName, e.key.sizes, c.schedule}];
      row.first.push_back(c.medianMs);
      row.second = c.registers;
    }
  }
  std::string out = "# Verified candidates of a tuning database: kernel, sizes, schedule, median ms, registers\n";
  for (const std::string& d : devices) out += fmt::format("# device: {}\n", d);
  for (auto& [k, row] : rows) {
    std::vector<double>& ms = row.first;
    std::sort(ms.begin(), ms.end());
    const size_t n = ms.size();
    const double median = n % 2 ? ms[n / 2] : (ms[n / 2 - 1] + ms[n / 2]) / 2;
    out += fmt::format("{}\t{}\t{}\t{:.6f}\t{}\n", std::get<0>(k), std::get<1>(k), std::get<2>(k), median, row.second);
  }
  return out;
}

int runExport(const DbOptions& o, const Io& io) {
  std::string path = dbPathOf(o);
  if (!dbExists(path)) io.fail(kInputError, "no tuning database at {}", path);
  TuningDb db(path, TuningDb::Access::ReadOnly);  // no journal-mode switch or migration, which wait for writers
  std::string hash = o.hash.empty() ? "" : resolveHash(db, o.hash, io);
  std::string json = o.verifiedTsv ? verifiedTsv(db, hash) : db.exportJson(hash) + "\n";
  if (o.output.empty() || o.output == "-") {
    fmt::print(io.out, "{}", json);
    return kOk;
  }
  // Atomically: a failed write used to leave truncated JSON behind.
  try {
    writeOutputFile(o.output, json);
  } catch (const Error& e) {
    io.fail(kInputError, "{}", e.what());
  }
  fmt::print(io.err, "Exported {} to {}.\n", hash.empty() ? "the tuning database" : "kernel " + hash, o.output);
  return kOk;
}

// The largest export `db import` reads (bench/results' databases are a few MiB).
constexpr size_t kMaxImportBytes = size_t(1) << 30;

int runImport(const DbOptions& o, const Io& io) {
  std::string text;
  if (o.file == "-") {
    char buf[65536];
    size_t n = 0;
    while ((n = std::fread(buf, 1, sizeof buf, io.in)) > 0) text.append(buf, n);
  } else {
    try {
      text = readInputFile(o.file, kMaxImportBytes);
    } catch (const Error& e) {
      io.fail(kInputError, "{}", e.what());
    }
  }
  TuningDb db(dbPathOf(o));
  int skipped = 0;
  int added = 0;
  try {
    added = db.importJson(text, &skipped);
  } catch (const Error& e) {
    io.fail(kInputError, "{}: {}", o.file == "-" ? "standard input" : o.file, e.what());
  }
  fmt::print(io.out, "Imported {} candidates into {} ({} duplicates skipped).\n", added, db.path(), skipped);
  return kOk;
}

// A snapshot for many readers (TuningDb::Access::Snapshot): one consistent file, replaced atomically.
int runSnapshot(const DbOptions& o, const Io& io) {
  std::string path = dbPathOf(o);
  if (!dbExists(path)) io.fail(kInputError, "no tuning database at {}", path);
  TuningDb db(path, TuningDb::Access::ReadOnly);
  db.snapshotTo(o.output);
  int keys = 0;
  {
    TuningDb copy(o.output, TuningDb::Access::Snapshot);
    keys = int(copy.list().size());
  }
  fmt::print(io.out,
             "Wrote a snapshot of {} ({} tuned keys) to {}: read it with RTCG_TUNING_DB={} RTCG_TUNING_DB_SNAPSHOT=1.\n",
             path, keys, o.output, o.output);
  return kOk;
}

int runClear(const DbOptions& o, const Io& io) {
  std::string path = dbPathOf(o);
  if (!dbExists(path)) {
    if (!o.hash.empty()) io.fail(kInputError, "no tuning database at {}", path);
    fmt::print(io.out, "No tuning database at {}: nothing to clear.\n", path);
    return kOk;
  }
  TuningDb db(path);
  std::string hash = o.hash.empty() ? "" : resolveHash(db, o.hash, io);
  if (!o.yes) {
    std::string what = hash.empty() ? "every tuned kernel" : "kernel " + hash;
    if (!isatty(fileno(io.in)))
      io.fail(kUsage, "`db clear` removes {} from {}: confirm with --yes", what, path);
    fmt::print(io.err, "Remove {} from {}? [y/N] ", what, path);
    std::fflush(io.err);
    char answer[16] = {0};
    if (!std::fgets(answer, sizeof answer, io.in) || (answer[0] != 'y' && answer[0] != 'Y')) {
      fmt::print(io.err, "Nothing removed.\n");
      return kInputError;
    }
  }
  int removed = db.clear(hash);
  fmt::print(io.out, "Removed {} candidates from {}.\n", removed, path);
  return kOk;
}

// `db lookup`: the device the key is for. The flags describe another device; without --arch, the
// machine's device 0 (its limits also decide which schedules plan).
struct LookupDevice {
  cuda::DeviceProperties props;
  ScheduleLimits limits;
};

LookupDevice lookupDevice(const DbOptions& o, const Io& io) {
  LookupDevice d;
  if (o.arch.empty()) {
    try {
      cuda::initialize();
      if (cuda::Device::count() == 0) throw NoDeviceError("no CUDA device found");
      d.props = cuda::Device(0).properties();
      d.limits = deviceScheduleLimits(int64_t(d.props.sharedPerBlockOptin), d.props.maxThreadsPerBlock, d.props.multiprocessors,
                                    int64_t(d.props.sharedPerMultiprocessor));
    } catch (const NoDeviceError& e) {
      io.fail(kUsage, "{}: give the device to look up with --arch (and --device, --multiprocessors, --driver)",
              e.what());
    }
  } else if (std::sscanf(o.arch.c_str(), "sm_%1d%1d", &d.props.computeMajor, &d.props.computeMinor) != 2) {
    io.fail(kUsage, "--arch '{}': expected sm_XY, e.g. sm_90", o.arch);
  }
  if (!o.device.empty()) d.props.name = o.device;
  if (o.multiprocessors > 0) d.props.multiprocessors = o.multiprocessors;
  if (o.driver > 0) d.props.driverVersion = o.driver;
  return d;
}

Sizes lookupSizes(const DbOptions& o, const Io& io) {
  Sizes sizes;
  for (const std::string& d : o.defines) {
    size_t eq = d.find('=');
    char* end = nullptr;
    long long v = eq == std::string::npos ? 0 : std::strtoll(d.c_str() + eq + 1, &end, 10);
    if (eq == std::string::npos || eq == 0 || end == d.c_str() + eq + 1 || *end != '\0')
      io.fail(kUsage, "-D '{}': expected NAME=INTEGER, e.g. -D n=500", d);
    sizes[d.substr(0, eq)] = v;
  }
  return sizes;
}

// Which rows of the database would serve compile() of FILE with these sizes on the device, in the
// order compile() tries them (tune/TuningLookup.h), and whether each one plans for the kernel.
int runLookup(const DbOptions& o, const Io& io) {
  std::ifstream in(o.file, std::ios::binary);
  if (!in) io.fail(kInputError, "cannot read {}: {}", o.file, std::strerror(errno));
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  CompileOptions options;
  options.fileName = o.file;
  options.kernel = o.kernel;
  Sizes sizes = lookupSizes(o, io);
  LookupDevice device = lookupDevice(o, io);
  ProvedKernel proved;
  try {
    proved = proveKernel(source, sizes, options);
  } catch (const Error& e) {
    fmt::print(io.err, "{}", e.what());
    throw Fail{kInputError};
  }
  TuningKey key = tuningKeyFor(proved.bound, device.props);
  fmt::print(io.out, "{} {} ({}) on {} {} ({} multiprocessors), driver {}, NVRTC {}, rtcg {}\n", key.kernelName,
             key.sizes.empty() ? "-" : key.sizes, key.kernelHash, key.device.empty() ? "-" : key.device, key.arch,
             key.multiprocessors, driverText(key.driverVersion), key.nvrtcVersion, key.rtcgVersion);
  std::string path = dbPathOf(o);
  std::vector<LookupOffer> offers;
  if (dbExists(path)) {
    TuningDb db(path, TuningDb::Access::ReadOnly);
    offers = lookupLadder(db, key);
  }
  std::vector<std::vector<std::string>> rows;
  bool served = false;
  for (const LookupOffer& offer : offers) {
    CompileOptions effective = options;
    effective.schedule = offer.best.schedule;
    bool plans = true;
    try {
      prepareProved(source, proved, effective, device.limits);
    } catch (const Error&) {
      plans = false;
    }
    const TuningKey& k = offer.key;
    rows.push_back({plans && !served ? "*" : "", rungOrigin(offer.rung), k.sizes.empty() ? "-" : k.sizes,
                    fmt::format("{} {} ({})", k.device, k.arch, k.multiprocessors), driverText(k.driverVersion),
                    k.nvrtcVersion, k.rtcgVersion, plans ? "yes" : "no", num(offer.best.medianMs), offer.best.schedule});
    served = served || plans;
  }
  rows.push_back({served ? "" : "*", "default", "", "", "", "", "", "yes", "-", "the default schedule"});
  for (const std::string& l : formatTable({"", "RUNG", "SIZES", "DEVICE (MPS)", "DRIVER", "NVRTC", "RTCG", "PLANS",
                                           "BEST MS", "SCHEDULE"},
                                          rows, {false, false, false, false, false, false, false, false, true, false}))
    fmt::print(io.out, "{}\n", l);
  return kOk;
}

}  // namespace

DbCommand addDbCommand(CLI::App& app) {
  DbCommand d;
  d.options = std::make_shared<DbOptions>();
  DbOptions& o = *d.options;
  d.cmd = app.add_subcommand("db", "look into and manage the tuning database");
  d.cmd->require_subcommand(1);
  auto addDb = [&](CLI::App* sub) {
    sub->add_option("--db", o.dbPath,
                    "tuning database file (default: $RTCG_TUNING_DB, else $RTCG_CACHE_DIR/tuning.sqlite, else "
                    "$XDG_DATA_HOME/rtcg/tuning.sqlite or ~/.local/share/rtcg/tuning.sqlite)");
  };
  d.list = d.cmd->add_subcommand("list", "list tuned kernels with their best schedule");
  addDb(d.list);
  d.show = d.cmd->add_subcommand("show", "show the candidates of a kernel, fastest first, failures with reasons");
  d.show->add_option("hash", o.hash, "kernel hash (or a unique prefix), from `rtcgc db list`")->required();
  addDb(d.show);
  d.exportCmd = d.cmd->add_subcommand("export", "write the database (or one kernel's entries) as JSON");
  d.exportCmd->add_option("hash", o.hash, "only this kernel hash (or a unique prefix)");
  d.exportCmd->add_option("-o,--output", o.output, "output file (default: standard output)");
  d.exportCmd->add_flag("--verified-tsv", o.verifiedTsv,
                        "instead of JSON, the verified candidates as tab-separated lines (kernel, sizes, schedule, "
                        "median ms, registers), the format that calibrates the static model");
  addDb(d.exportCmd);
  d.importCmd = d.cmd->add_subcommand("import", "merge a JSON export into the database, skipping duplicates");
  d.importCmd->add_option("file", o.file, "the export to read (- for standard input)")->required();
  addDb(d.importCmd);
  d.snapshot = d.cmd->add_subcommand("snapshot",
                                     "write a consistent copy in one file that many processes read at once without "
                                     "locks (RTCG_TUNING_DB_SNAPSHOT=1): the database to ship to an MPI job's ranks");
  d.snapshot->add_option("output", o.output, "the snapshot file (replaced atomically)")->required();
  addDb(d.snapshot);
  d.clear = d.cmd->add_subcommand("clear", "remove every entry (or one kernel's)");
  d.clear->add_option("hash", o.hash, "only this kernel hash (or a unique prefix)");
  d.clear->add_flag("-y,--yes", o.yes, "do not ask for confirmation");
  addDb(d.clear);
  d.lookup = d.cmd->add_subcommand("lookup", "which rows would serve compile() of a kernel, in the order it tries them");
  d.lookup->add_option("file", o.file, "the DSL source")->required();
  d.lookup->add_option("-D,--define", o.defines, "bind a size parameter: -D n=500")->allow_extra_args(false);
  d.lookup->add_option("--kernel", o.kernel, "which kernel of the file (default: the only one)");
  d.lookup->add_option("--arch", o.arch, "the device's architecture, e.g. sm_90 (default: this machine's device 0)");
  d.lookup->add_option("--device", o.device, "the device's name, e.g. \"NVIDIA H100 80GB HBM3\"");
  d.lookup->add_option("--multiprocessors", o.multiprocessors, "the device's multiprocessor count");
  d.lookup->add_option("--driver", o.driver, "the driver version as CUDA gives it, e.g. 13000");
  addDb(d.lookup);
  return d;
}

int runDbCommand(const DbCommand& db) { return runDbCommand(db, stdin, stdout, stderr); }

int runDbCommand(const DbCommand& db, std::FILE* in, std::FILE* out, std::FILE* err) {
  Io io{in, out, err};
  const DbOptions& o = *db.options;
  return runCommand(
      [&] {
        if (db.list->parsed()) return runList(o, io);
        if (db.show->parsed()) return runShow(o, io);
        if (db.exportCmd->parsed()) return runExport(o, io);
        if (db.importCmd->parsed()) return runImport(o, io);
        if (db.clear->parsed()) return runClear(o, io);
        if (db.snapshot->parsed()) return runSnapshot(o, io);
        if (db.lookup->parsed()) return runLookup(o, io);
        fmt::print(err, "rtcgc: error: `db` needs a subcommand: list, show, export, import, snapshot, clear or lookup\n");
        return int(kUsage);
      },
      err);
}

}  // namespace rtcg
