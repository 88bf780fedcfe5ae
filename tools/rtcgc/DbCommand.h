// `rtcgc db`: look into and manage the tuning database.
//
//   rtcgc db list                       every tuned kernel with its best
//   rtcgc db show HASH                  the candidates of a kernel, fastest first, failures with reasons
//   rtcgc db export [-o FILE] [HASH]    JSON of everything (or of one kernel)
//   rtcgc db import FILE                merge a JSON export (duplicates skipped); "-" reads stdin
//   rtcgc db clear [HASH] [--yes]       remove everything (or one kernel)
//   rtcgc db lookup FILE -D n=500 [--kernel K] [--arch sm_90 --device NAME --multiprocessors N --driver V]
//                                       which rows would serve compile() of the kernel (the lookup
//                                       ladder, tune/TuningLookup.h), and whether each still plans
// Each takes `--db PATH` (default: TuningDb::defaultPath()). HASH may be a unique prefix.
// Exit codes: 0 ok, 1 input errors (unreadable file, bad export, unknown hash), 2 usage.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

namespace rtcg {

struct DbOptions {
  std::string dbPath;  // empty: TuningDb::defaultPath()
  std::string hash;
  std::string output;  // export: empty for standard output; snapshot: the file
  bool verifiedTsv = false;  // export: verified candidates as tab-separated lines instead of JSON
  std::string file;    // import
  bool yes = false;    // clear without asking
  // lookup: the kernel (file is the DSL source), and the device when not this machine's
  std::vector<std::string> defines;
  std::string kernel, arch, device;
  int multiprocessors = 0, driver = 0;
};

struct DbCommand {
  CLI::App* cmd = nullptr;  // `db`; cmd->parsed() says whether to call runDbCommand
  CLI::App* list = nullptr;
  CLI::App* show = nullptr;
  CLI::App* exportCmd = nullptr;
  CLI::App* importCmd = nullptr;
  CLI::App* clear = nullptr;
  CLI::App* snapshot = nullptr;
  CLI::App* lookup = nullptr;
  std::shared_ptr<DbOptions> options;  // what the options parse into (shared: the struct may be copied)
};

// Adds the `db` subcommand and its subcommands to `app`.
DbCommand addDbCommand(CLI::App& app);

// Runs the parsed `db` subcommand; returns the exit code. Errors (including rtcg::Error from the
// database) are printed as `rtcgc: error: ...` on `err`, never thrown. `in` answers clear's
// question when it is a terminal.
int runDbCommand(const DbCommand& db);
int runDbCommand(const DbCommand& db, std::FILE* in, std::FILE* out, std::FILE* err);

}  // namespace rtcg
