// `rtcgc tune --manifest FILE`: the kernels an application embeds, as rtcg-scan's manifest lists them
// (docs/rtcg-scan.md), read, validated and planned for ahead-of-time tuning. Running the plan (on
// the GPU) is TuneCommand.cpp's; everything here runs on the CPU.
//
// Each kernel to tune is the one Context::compile would look up in the tuning database for the
// manifest entry's source, sizes and kernel name (rtcg::tuningTarget, shared with the API), so an
// application compiled with the default policy (Tuning::UseCached) starts with the tuned schedule.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "ir/IR.h"

namespace rtcg::manifest {

// The manifest format version this rtcgc reads.
constexpr int kVersion = 1;

// One entry of "kernels": a Context::compile call rtcg-scan found.
struct Entry {
  std::string manifestPath;  // the manifest it was read from
  size_t index = 0;          // its position in "kernels"
  std::string file;          // the C++ file of the compile call (as on the machine that scanned it)
  int64_t line = 0, column = 0;
  std::string variable;      // the kernel object's variable; may be empty
  std::vector<std::string> kernels;   // every kernel the source defines
  std::optional<std::string> kernel;  // the one compile() uses; absent when the scan could not tell
  std::string source;                 // the DSL text
  std::optional<std::map<std::string, int64_t>> sizes;  // the constant size bindings
  bool sizesConstant = false;         // whether `sizes` are all of them
  int64_t errors = 0;                 // errors the scan found in it

  std::string location() const;  // "file:line:col"
};

// A manifest that cannot be used. what() is the whole message: "kernels.json: error: ...".
class ManifestError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Parses and validates a manifest's text; `path` names it in messages. Throws ManifestError for text
// that is not JSON, a version other than kVersion, a missing "version" or "kernels", an entry that is
// not an object or lacks a required field (file, line, column, source, sizesConstant, errors), and a
// field of the wrong type (every field, optional ones included); the message names the entry as
// kernels[I] with its file:line:col when those are readable.
std::vector<Entry> parseManifest(const std::string& path, const std::string& text);

// Reads and parses the manifest at `path` (ManifestError also when it cannot be read).
std::vector<Entry> readManifest(const std::string& path);

enum class Outcome {
  Tune,       // to be tuned: `bound` is set
  Skipped,    // the manifest says it cannot be tuned ahead of time: `reason`
  Duplicate,  // the same kernel and sizes as an earlier entry (tuned once): `reason` names it
  Invalid,    // it does not bind or prove with its sizes: `reason` (the first error), `diagnostics`
};

struct Planned {
  Entry entry;
  Outcome outcome = Outcome::Tune;
  std::string reason;            // one line, for Skipped, Duplicate and Invalid
  std::string diagnostics;       // Invalid: the rendered diagnostics
  std::optional<Kernel> bound;   // Tune: what Context::compile looks up (rtcg::tuningTarget)
  std::string kernelHash;        // Tune and Duplicate: the tuning key's kernel hash
  std::string sizes;             // "n=500,m=3" for display; "-" when there are none
};

// Decides, entry by entry and in order, what `rtcgc tune --manifest` does:
//   skipped: errors > 0; no "kernel"; no "sizes"; sizesConstant false (checked in this order);
//   invalid: the kernel does not bind and prove with these sizes (rtcg::tuningTarget throws);
//   duplicate: the same tuning-key kernel hash (structure and bound sizes) as an earlier entry;
//   otherwise tune.
std::vector<Planned> plan(const std::vector<Entry>& entries);

}  // namespace rtcg::manifest
