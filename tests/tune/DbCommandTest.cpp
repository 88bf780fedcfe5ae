// `rtcgc db` through its functions: parse a command line with CLI11, run, check exit code and output.
#include "DbCommand.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <sqlite3.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tune/TempDir.h"
#include "tune/TuningDb.h"

using namespace rtcg;
using rtcg::testing::TempDir;

namespace {

struct Result {
  int code = -1;
  std::string out, err;
};

std::string readAll(std::FILE* f) {
  std::string s;
  std::rewind(f);
  char buf[4096];
  size_t n = 0;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) s.append(buf, n);
  return s;
}

// Runs `rtcgc db ARGS...` as main.cpp would (parse errors are usage errors, exit 2). Standard
// input is `input` (not a terminal).
Result runDb(std::vector<std::string> args, const std::string& input = "") {
  CLI::App app{"test", "rtcgc"};
  app.require_subcommand(1);
  DbCommand db = addDbCommand(app);
  args.insert(args.begin(), {"rtcgc", "db"});
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  Result r;
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    r.code = 2;
    r.err = e.what();
    return r;
  }
  EXPECT_TRUE(db.cmd->parsed());
  std::FILE* in = std::tmpfile();
  std::FILE* out = std::tmpfile();
  std::FILE* err = std::tmpfile();
  std::fwrite(input.data(), 1, input.size(), in);
  std::rewind(in);
  r.code = runDbCommand(db, in, out, err);
  std::fflush(out);
  std::fflush(err);
  r.out = readAll(out);
  r.err = readAll(err);
  std::fclose(in);
  std::fclose(out);
  std::fclose(err);
  return r;
}

TuningKey key(const std::string& hash, const std::string& name, const std::string& sizes) {
  TuningKey k;
  k.kernelHash = hash;
  k.kernelName = name;
  k.sizes = sizes;
  k.device = "NVIDIA H200";
  k.arch = "sm_90";
  k.driverVersion = 13000;
  k.nvrtcVersion = "13.0";
  k.rtcgVersion = "0.1.0";
  return k;
}

CandidateRecord rec(const std::string& schedule, CandidateStatus s, double ms, const std::string& reason = "") {
  CandidateRecord c;
  c.schedule = schedule;
  c.status = s;
  c.medianMs = ms;
  c.reason = reason;
  c.registers = 30;
  c.occupancy = 1;
  c.gflops = ms > 0 ? 10 / ms : 0;
  return c;
}

// Two kernels: matmul (hash ab12...) with three candidates, axpby (hash ab34...) with one.
void populate(const std::string& path) {
  TuningDb db(path);
  TuningKey mm = key("ab12000000000001", "matmul", "n=500");
  db.record(mm, rec("i: grid.y, thread.y 8; j: grid.x, thread.x 32", CandidateStatus::Verified, 2.5));
  db.record(mm, rec("i: grid.y, thread.y 8; j: grid.x, thread.x 2048", CandidateStatus::CompileFailed, 0,
                    "too many threads per block\nsecond line"));
  db.record(mm, rec("i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 64", CandidateStatus::Verified, 0.75));
  db.record(key("ab34000000000002", "axpby", "n=4096"), rec("i: grid.x, thread.x 256", CandidateStatus::Verified, 0.01));
}

// The column where `word` starts on the line holding `anchor`.
size_t columnOf(const std::string& text, const std::string& anchor, const std::string& word) {
  size_t at = text.find(anchor);
  if (at == std::string::npos) return std::string::npos;
  size_t lineStart = text.rfind('\n', at);
  lineStart = lineStart == std::string::npos ? 0 : lineStart + 1;
  size_t lineEnd = text.find('\n', at);
  std::string line = text.substr(lineStart, lineEnd - lineStart);
  size_t p = line.find(word);
  return p;
}

}  // namespace

TEST(DbCommand, ListOnAMissingDatabaseSaysSo) {
  TempDir dir;
  Result r = runDb({"list", "--db", dir.file("none.sqlite")});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("No tuning database"), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir.file("none.sqlite")));  // listing creates nothing
}

TEST(DbCommand, ListPrintsAnAlignedTable) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  populate(path);
  Result r = runDb({"list", "--db", path});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("HASH"), std::string::npos);
  EXPECT_NE(r.out.find("ab12000000000001"), std::string::npos);
  EXPECT_NE(r.out.find("i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 64"), std::string::npos);
  EXPECT_NE(r.out.find("0.75"), std::string::npos);
  size_t header = columnOf(r.out, "HASH", "KERNEL");
  EXPECT_EQ(columnOf(r.out, "ab12000000000001", "matmul"), header);
  EXPECT_EQ(columnOf(r.out, "ab34000000000002", "axpby"), header);
  EXPECT_EQ(columnOf(r.out, "ab12000000000001", "n=500"), columnOf(r.out, "HASH", "SIZES"));
}

TEST(DbCommand, ShowSortsByTimeWithReasons) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  populate(path);
  Result r = runDb({"show", "ab12", "--db", path});  // a unique prefix
  ASSERT_EQ(r.code, 0) << r.err;
  size_t fast = r.out.find("thread.x 64"), slow = r.out.find("thread.x 32"), bad = r.out.find("thread.x 2048");
  ASSERT_NE(fast, std::string::npos);
  ASSERT_NE(slow, std::string::npos);
  ASSERT_NE(bad, std::string::npos);
  EXPECT_LT(fast, slow);
  EXPECT_LT(slow, bad);
  EXPECT_NE(r.out.find("compile-failed"), std::string::npos);
  EXPECT_NE(r.out.find("reason: too many threads per block"), std::string::npos);
  EXPECT_EQ(r.out.find("second line"), std::string::npos);  // first line of the reason only
  EXPECT_NE(r.out.find("driver 13.0"), std::string::npos);
  EXPECT_EQ(r.out.find("axpby"), std::string::npos);

  EXPECT_EQ(runDb({"show", "ffff", "--db", path}).code, 1);
  Result ambiguous = runDb({"show", "ab", "--db", path});
  EXPECT_EQ(ambiguous.code, 1);
  EXPECT_NE(ambiguous.err.find("ambiguous"), std::string::npos);
  EXPECT_EQ(runDb({"show", "--db", path}).code, 2);  // the hash is required
  EXPECT_EQ(runDb({"show", "ab12", "--db", dir.file("missing.sqlite")}).code, 1);
}

TEST(DbCommand, ExportThenImportMergesAndSkipsDuplicates) {
  TempDir dir;
  std::string src = dir.file("src.sqlite"), dst = dir.file("dst.sqlite"), json = dir.file("out.json");
  populate(src);
  Result e = runDb({"export", "-o", json, "--db", src});
  ASSERT_EQ(e.code, 0) << e.err;
  std::ifstream f(json);
  auto doc = nlohmann::json::parse(f);
  EXPECT_EQ(doc["keys"].size(), 2u);

  Result one = runDb({"export", "ab34", "--db", src});  // to standard output
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_EQ(nlohmann::json::parse(one.out)["keys"].size(), 1u);
  EXPECT_EQ(runDb({"export", "9999", "--db", src}).code, 1);

  Result i = runDb({"import", json, "--db", dst});
  ASSERT_EQ(i.code, 0) << i.err;
  EXPECT_NE(i.out.find("Imported 4 candidates"), std::string::npos) << i.out;
  Result again = runDb({"import", "-", "--db", dst}, one.out);  // from standard input
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.out.find("Imported 0 candidates"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("1 duplicates skipped"), std::string::npos) << again.out;
  EXPECT_EQ(TuningDb(dst).list().size(), 2u);

  std::ofstream(dir.file("bad.json")) << "{\"format\": 3}";
  Result bad = runDb({"import", dir.file("bad.json"), "--db", dst});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("bad.json"), std::string::npos);
  EXPECT_EQ(runDb({"import", dir.file("nope.json"), "--db", dst}).code, 1);
  EXPECT_EQ(runDb({"import", "--db", dst}).code, 2);
}

TEST(DbCommand, ExportIsAtomicAndWritesThroughLinks) {
  // It wrote with std::ofstream: a failed write left truncated JSON at the path.
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  populate(path);
  Result toDir = runDb({"export", "-o", dir.path().string(), "--db", path});
  EXPECT_EQ(toDir.code, 1);
  EXPECT_NE(toDir.err.find("it is a directory"), std::string::npos) << toDir.err;
  Result missing = runDb({"export", "-o", dir.file("no/such/dir.json"), "--db", path});
  EXPECT_EQ(missing.code, 1);
  EXPECT_NE(missing.err.find("cannot write"), std::string::npos) << missing.err;
  std::ofstream(dir.file("real.json")) << "old";
  std::filesystem::create_symlink("real.json", dir.file("link.json"));
  ASSERT_EQ(runDb({"export", "-o", dir.file("link.json"), "--db", path}).code, 0);
  EXPECT_TRUE(std::filesystem::is_symlink(dir.file("link.json")));
  std::ifstream in(dir.file("real.json"));
  EXPECT_NO_THROW(nlohmann::json::parse(in));
}

TEST(DbCommand, ImportOfANumberPastTheLargestDoubleIsAnInputError) {
  // nlohmann::json throws out_of_range, not parse_error, for 1e999: it was an internal error.
  TempDir dir;
  std::ofstream(dir.file("big.json")) << R"({"format": "rtcg-tuning-db", "schemaVersion": 1, "keys": [{"key": {
    "kernelHash": "ab12000000000001", "kernelName": "matmul", "sizes": "n=500", "device": "NVIDIA H200",
    "arch": "sm_90", "driverVersion": 13000, "nvrtcVersion": "13.0", "rtcgVersion": "0.1.0"}, "searches": [],
    "candidates": [{"schedule": "i: grid.x, thread.x 32", "status": "verified", "medianMs": 1e999, "recordedAt": 5}]}]})";
  Result r = runDb({"import", dir.file("big.json"), "--db", dir.file("t.sqlite")});
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("number overflow parsing '1e999'"), std::string::npos) << r.err;
}

TEST(DbCommand, ExportOfTextThatIsNotUtf8IsValidJson) {
  // A reason (a compiler log) holding a byte that is not UTF-8 made the JSON dump throw (exit 70).
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  {
    TuningDb db(path);
    db.record(key("ab12000000000001", "matmul", "n=500"),
              rec("i: grid.x, thread.x 32", CandidateStatus::CompileFailed, 0, "caf\xe9 \xff"));
  }
  Result r = runDb({"export", "--db", path});
  ASSERT_EQ(r.code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["keys"][0]["candidates"][0]["reason"], "caf\xef\xbf\xbd \xef\xbf\xbd");
}

TEST(DbCommand, ListAndShowPrintNoTerminalEscapes) {
  // Names and reasons from imported files were printed as they were, escape sequences included.
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  {
    TuningDb db(path);
    TuningKey k = key("ab12000000000001", "mat\x1b[2Jmul", "n=500");
    k.device = "GPU\x1b]0;owned\x07";
    db.record(k, rec("i: grid.x, thread.x 32", CandidateStatus::CompileFailed, 0, "bad\x1b[31m red"));
  }
  for (const std::vector<std::string>& args : {std::vector<std::string>{"list", "--db", path},
                                               std::vector<std::string>{"show", "ab12", "--db", path}}) {
    Result r = runDb(args);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
    EXPECT_NE(r.out.find("mat?[2Jmul"), std::string::npos) << r.out;
  }
}

TEST(DbCommand, ExportVerifiedTsvListsMedianTimesForCalibration) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  populate(path);
  {
    // The faster matmul schedule measured twice more (median of 0.75, 0.5, 1.0 is 0.75; of two
    // times, their mean); a wrong result is left out.
    TuningDb db(path);
    TuningKey mm = key("ab12000000000001", "matmul", "n=500");
    db.record(mm, rec("i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 64", CandidateStatus::Verified, 0.5));
    db.record(mm, rec("i: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 64", CandidateStatus::Verified, 1.0));
    db.record(mm, rec("i: grid.y, thread.y 2; j: grid.x, thread.x 32", CandidateStatus::WrongResult, 0.1, "mismatch"));
  }
  Result r = runDb({"export", "--verified-tsv", "--db", path});
  ASSERT_EQ(r.code, 0) << r.err;
  std::vector<std::string> data;
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) {
      EXPECT_TRUE(line.find("schedule") != std::string::npos || line.find("# device: NVIDIA H200 (sm_90, driver 13.0)") == 0)
          << line;
      continue;
    }
    data.push_back(line);
  }
  EXPECT_EQ(data, (std::vector<std::string>{
                      "axpby\tn=4096\ti: grid.x, thread.x 256\t0.010000\t30",
                      "matmul\tn=500\ti: grid.y, thread.y 4, reg 4; j: grid.x, thread.x 64\t0.750000\t30",
                      "matmul\tn=500\ti: grid.y, thread.y 8; j: grid.x, thread.x 32\t2.500000\t30",
                  }));
  // One kernel, by hash prefix, to a file.
  Result one = runDb({"export", "ab34", "--verified-tsv", "-o", dir.file("a.tsv"), "--db", path});
  ASSERT_EQ(one.code, 0) << one.err;
  std::ifstream f(dir.file("a.tsv"));
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("axpby\t"), std::string::npos);
  EXPECT_EQ(text.find("matmul\t"), std::string::npos);
}

TEST(DbCommand, ClearAsksForYes) {
  TempDir dir;
  std::string path = dir.file("t.sqlite");
  populate(path);
  Result refused = runDb({"clear", "--db", path});  // standard input is not a terminal
  EXPECT_EQ(refused.code, 2);
  EXPECT_NE(refused.err.find("--yes"), std::string::npos);
  EXPECT_EQ(TuningDb(path).list().size(), 2u);

  Result one = runDb({"clear", "ab34", "--yes", "--db", path});
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("Removed 1 candidates"), std::string::npos);
  EXPECT_EQ(TuningDb(path).list().size(), 1u);
  EXPECT_EQ(runDb({"clear", "ab34", "-y", "--db", path}).code, 1);  // no longer there

  Result all = runDb({"clear", "-y", "--db", path});
  ASSERT_EQ(all.code, 0) << all.err;
  EXPECT_NE(all.out.find("Removed 3 candidates"), std::string::npos);
  EXPECT_TRUE(TuningDb(path).list().empty());
}

TEST(DbCommand, UsageErrors) {
  EXPECT_EQ(runDb({}).code, 2);           // `db` needs a subcommand
  EXPECT_EQ(runDb({"frobnicate"}).code, 2);
  EXPECT_EQ(runDb({"list", "--bogus"}).code, 2);
}

namespace {

const char* kMatmulSource = R"(kernel matmul(n: int, a: f32[n, n], b: f32[n, n], out c: f32[n, n]) {
  for i in 0..n, j in 0..n {
    c[i, j] = sum(k in 0..n, a[i, k] * b[k, j]);
  }
}
)";

}  // namespace

// `db lookup` shows the ladder's rows for a key on a described device, marks the one compile()
// would use (the first that plans) and ends with the default schedule.
TEST(DbCommand, LookupShowsTheRowsThatWouldServeAKey) {
  TempDir dir;
  std::string file = dir.file("matmul.rtcg"), db = dir.file("t.sqlite");
  std::ofstream(file) << kMatmulSource;
  std::vector<std::string> device{"--arch", "sm_90", "--device", "NVIDIA H100 80GB HBM3", "--multiprocessors", "132",
                                  "--driver", "13000", "--db", db};
  auto lookup = [&](std::vector<std::string> extra) {
    std::vector<std::string> args{"lookup", file, "-D", "n=64"};
    args.insert(args.end(), extra.begin(), extra.end());
    return runDb(args);
  };
  Result empty = lookup(device);
  ASSERT_EQ(empty.code, 0) << empty.err;
  EXPECT_NE(empty.out.find("matmul n=64"), std::string::npos) << empty.out;
  EXPECT_NE(empty.out.find("*  default"), std::string::npos) << empty.out;

  // A row for n=60 on this architecture: the nearest sizes; one for another architecture: none.
  Result n60 = runDb({"lookup", file, "-D", "n=60", "--arch", "sm_90", "--device", "NVIDIA H100 80GB HBM3",
                      "--multiprocessors", "132", "--driver", "12080", "--db", db});
  ASSERT_EQ(n60.code, 0) << n60.err;
  {
    TuningDb t(db);
    std::string hash = n60.out.substr(n60.out.find('(') + 1, 16);
    TuningKey k;
    k.kernelHash = hash;
    k.kernelName = "matmul";
    k.sizes = "n=60";
    k.device = "NVIDIA H100 80GB HBM3";
    k.arch = "sm_90";
    k.driverVersion = 12080;
    k.nvrtcVersion = "13.0";
    k.rtcgVersion = "0.1.0";
    k.multiprocessors = 132;
    CandidateRecord c;
    c.schedule = "q: thread.x 32";  // does not plan
    c.medianMs = 0.25;
    t.record(k, c);
  }
  Result one = lookup(device);
  ASSERT_EQ(one.code, 0) << one.err;
  EXPECT_NE(one.out.find("tuning database (nearest sizes)  n=60"), std::string::npos) << one.out;
  EXPECT_NE(one.out.find("no"), std::string::npos) << one.out;  // it does not plan
  EXPECT_NE(one.out.find("*  default"), std::string::npos) << one.out;

  Result bad = runDb({"lookup", file, "-D", "n", "--arch", "sm_90", "--db", db});
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.err.find("-D 'n': expected NAME=INTEGER"), std::string::npos) << bad.err;
  Result unbound = runDb({"lookup", file, "--arch", "sm_90", "--db", db});
  EXPECT_EQ(unbound.code, 1);
  EXPECT_NE(unbound.err.find("error"), std::string::npos) << unbound.err;
  Result badArch = runDb({"lookup", file, "-D", "n=64", "--arch", "hopper", "--db", db});
  EXPECT_EQ(badArch.code, 2);
}

// Another process that holds a rollback-journal database's locks on command (SQLite's locks are
// per process: one connection of this process could not stand for another process's writer).
// Commands, one byte each, answered 'k' or 'e': 'R' reserved (a write begun), 'C' commit, 'X'
// exclusive, 'B' roll back, 'Q' quit.
class LockHolder {
 public:
  explicit LockHolder(const std::string& path) {
    if (::pipe(to_) != 0 || ::pipe(from_) != 0) ADD_FAILURE() << "pipe";
    pid_ = ::fork();
    if (pid_ == 0) serve(path);
  }
  ~LockHolder() {
    command('Q');
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  bool command(char c) {
    char answer = 0;
    return ::write(to_[1], &c, 1) == 1 && ::read(from_[0], &answer, 1) == 1 && answer == 'k';
  }

 private:
  [[noreturn]] void serve(const std::string& path) {
    sqlite3* db = nullptr;
    bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
              sqlite3_exec(db, "PRAGMA journal_mode = DELETE", nullptr, nullptr, nullptr) == SQLITE_OK;
    for (char c; ::read(to_[0], &c, 1) == 1 && c != 'Q';) {
      const char* sql = c == 'R'   ? "BEGIN IMMEDIATE; DELETE FROM candidates WHERE schedule = 'i: grid.x, thread.x 256'"
                        : c == 'C' ? "COMMIT"
                        : c == 'X' ? "BEGIN EXCLUSIVE"
                                   : "ROLLBACK";
      const char answer = ok && sqlite3_exec(db, sql, nullptr, nullptr, nullptr) == SQLITE_OK ? 'k' : 'e';
      if (::write(from_[1], &answer, 1) != 1) break;
    }
    sqlite3_close(db);
    const char bye = 'k';
    [[maybe_unused]] ssize_t n = ::write(from_[1], &bye, 1);
    ::_exit(0);
  }
  int to_[2] = {-1, -1}, from_[2] = {-1, -1};
  pid_t pid_ = -1;
};

// Issue 40, item 12: `db list` on a rollback-journal database (made by another tool) that another
// process is writing failed after ten seconds: it opened the file for writing and waited to
// switch it to WAL. The reading commands open it read-only: they read past a writer's reserved
// lock, and where the writer holds the exclusive lock they fail at once with what is going on.
TEST(DbCommand, ReadingCommandsWorkOrFailClearlyOnALockedRollbackJournalDatabase) {
  TempDir dir;
  const std::string path = dir.file("journal.sqlite");
  populate(path);
  {
    LockHolder writer(path);
    ASSERT_TRUE(writer.command('R'));  // a writer's reserved lock: readers go on
    for (const char* command : {"list", "export"}) {
      Result r = runDb({command, "--db", path});
      EXPECT_EQ(r.code, 0) << command << ": " << r.err;
      EXPECT_NE(r.out.find("ab34000000000002"), std::string::npos) << command << ": the last committed state";
    }
    Result show = runDb({"show", "ab12", "--db", path});
    EXPECT_EQ(show.code, 0) << show.err;
    ASSERT_TRUE(writer.command('C'));
    ASSERT_TRUE(writer.command('X'));  // now nobody may read the file
    for (const char* command : {"list", "export"}) {
      Result r = runDb({command, "--db", path});
      EXPECT_EQ(r.code, 1) << command << ": " << r.out << r.err;
      EXPECT_NE(r.err.find("is locked: another process holds it for writing (waited 1 s"), std::string::npos)
          << command << ": " << r.err;
    }
    ASSERT_TRUE(writer.command('B'));
  }
  Result after = runDb({"list", "--db", path});
  EXPECT_EQ(after.code, 0) << after.err;
}
