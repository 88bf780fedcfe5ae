// The build-time checks of embedded kernels: the DSL frontend (and, when every size is a
// compile-time constant, the bounds and race proofs) run on the text of each literal, and the
// calls of the compiled kernel are checked against its signature. Every problem is rendered in the
// C++ compiler's format, at the C++ position: `file.cpp:line:col: error: message`, the C++ line
// and a caret.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "Findings.h"
#include "support/Diagnostics.h"

namespace rtcg {

// Contents of the C++ files diagnostics point into, read once each (for the echoed source line).
class CppFiles {
 public:
  const std::string& contents(const std::string& path);

 private:
  std::map<std::string, std::string> cache_;
};

struct KernelCheck {
  std::vector<std::string> kernelNames;  // every kernel the DSL text defines (empty if it does not parse)
  int errors = 0;
  int warnings = 0;
  // Each diagnostic rendered in compiler format (message, C++ line, caret), in order. Callers
  // print a diagnostic once even when several compile calls share the literal it points into.
  struct Rendered {
    Severity severity;
    std::string text;
  };
  std::vector<Rendered> rendered;
};

// The C++ type rtcg uses for a DSL element type: "float", "double", "int32_t", "int64_t".
const char* cppElementName(ScalarType t);

KernelCheck checkKernel(const FoundKernel& found, CppFiles& files);

// Checks the calls `k(args...)` of a kernel with the given (unbound) signature; diagnostics go to
// `diags` with C++ positions (used by checkKernel, separate for tests).
void checkCalls(const Kernel& kernel, const std::vector<KernelCall>& calls, Diagnostics& diags);

}  // namespace rtcg
