// libFuzzer target for `rtcgc db import`: TuningDb::importJson of any text adds rows or throws
// rtcg::Error adding nothing; what it added exports and imports again as duplicates only (an export
// without keys is refused, as import refuses to import nothing). Never a
// crash, sanitizer report, another exception or an InternalError.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "rtcg/Error.h"
#include "tune/TuningDb.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // One database per process, emptied before each input, so every input starts alike.
  static rtcg::TuningDb db((std::filesystem::temp_directory_path() /
                            ("rtcg-dbimport-fuzz-" + std::to_string(getpid()) + ".sqlite")).string());
  db.clear();
  std::string text(reinterpret_cast<const char*>(data), size);
  int added = 0;
  try {
    added = db.importJson(text);
  } catch (const rtcg::Error&) {
    if (!db.list().empty()) __builtin_trap();  // a refused import adds nothing
    return 0;
  }
  if (added < 0) __builtin_trap();
  std::string exported = db.exportJson();
  // An export without keys is refused by import ("nothing to import"); an import that added rows
  // made keys, so this is an input that imported nothing.
  if (db.list().empty() && exported.find("\"keys\": []") != std::string::npos) {
    if (added != 0) __builtin_trap();
    return 0;
  }
  int duplicates = 0;
  int again = db.importJson(exported, &duplicates);  // an export is always importable
  if (again != 0) __builtin_trap();                  // and adds nothing new
  return 0;
}
