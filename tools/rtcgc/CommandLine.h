// What every rtcgc command reads and writes the same way: the DSL file (bounded, every read error
// reported), the -D size bindings and output files (written atomically). Each reports its failure
// on stderr and throws rtcgc::Fail with the exit code (ExitCodes.h).
#pragma once

#include <CLI/CLI.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "driver/Pipeline.h"

namespace rtcgc {

// The DSL source at `path`, at most rtcg::kMaxSourceBytes (support/InputFile.h); exit 1 otherwise.
rtcg::SourceText readSource(const std::string& path);

// -D NAME=INTEGER bindings: a malformed or repeated one is exit 2, a value past 64 bits exit 1.
rtcg::SizeBindings parseDefines(const std::vector<std::string>& defines);

// --input NAME=FILE (run, tune): NAME and FILE, NAME an `in` or `inout` array of `k`; anything
// else is exit 2, naming the spec and the kernel.
std::pair<std::string, std::string> parseInputSpec(const rtcg::Kernel& k, const std::string& spec);

// Writes `data` to `path` atomically (support/OutputFile.h: through symbolic links, never over a
// device or directory, with the umask's mode), so a failure never leaves a half-written output;
// exit 1 on failure.
void writeFileAtomically(const std::string& path, std::string_view data);

// Option checks with a short message: CLI11's NonNegativeNumber answered `--max-candidates -1`
// with its range, 0 to a 309-digit number. "must be 0 or more, not '-1'" (a usage error, exit 2).
CLI::Validator nonNegative();
CLI::Validator positive();  // "must be more than 0, not '0'"

}  // namespace rtcgc
