#include "Check.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

#include "LiteralDecode.h"
#include "api/KernelArgs.h"
#include "driver/Pipeline.h"
#include "frontend/Frontend.h"
#include "ir/Printer.h"

namespace rtcg {

const std::string& CppFiles::contents(const std::string& path) {
  auto it = cache_.find(path);
  if (it != cache_.end()) return it->second;
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  if (in) ss << in.rdbuf();
  return cache_.emplace(path, ss.str()).first->second;  // empty when unreadable: no echoed line
}

const char* cppElementName(ScalarType t) { return cppTypeName(t); }  // the names the API's errors use

namespace {

const char* modePrefix(const Param& p) {
  if (!p.isArray() || p.mode == ArrayMode::In) return "";
  return p.mode == ArrayMode::Out ? "out " : "inout ";
}

std::string paramText(const Kernel& k, const Param& p) {
  if (!p.isArray()) return fmt::format("{}: {}", p.name, typeName(p.type));
  std::vector<std::string> extents;
  for (const Expr& e : p.shape) extents.push_back(printExpr(e, &k));
  return fmt::format("{}{}: {}[{}]", modePrefix(p), p.name, typeName(p.type), fmt::join(extents, ", "));
}

std::string describeArg(const CallArg& a) {
  switch (a.kind) {
    case CallArg::Kind::DeviceArray: return fmt::format("rtcg::Array<{}>", a.typeSpelling);
    case CallArg::Kind::HostVector: return fmt::format("std::vector<{}>", a.typeSpelling);
    case CallArg::Kind::ConstHostVector: return fmt::format("const std::vector<{}>", a.typeSpelling);
    case CallArg::Kind::Scalar: return a.typeSpelling;
    case CallArg::Kind::Other: return a.typeSpelling;
  }
  return a.typeSpelling;
}

// The runtime's rule (src/api/KernelArgs.cpp): exact, or widening where no value can change.
bool scalarConverts(ScalarType given, ScalarType want) {
  return given == want || (given == ScalarType::F32 && want == ScalarType::F64) ||
         (given == ScalarType::I32 && want == ScalarType::I64);
}

SourceLoc cppLoc(CppPos p, int length = 1) { return SourceLoc{p.line, p.col, std::max(length, 1)}; }

// The kernel compile() would pick, as far as the scan can tell: the one CompileOptions::kernel names
// when the options are visible, else the only one. Nullopt (with an error where compile() would
// fail too) when it cannot tell.
std::optional<Kernel> selectKernel(const Program& program, const std::optional<std::string>& name,
                                   Diagnostics& diags) {
  std::vector<std::string> names;
  for (const Kernel& k : program.kernels) names.push_back(k.name);
  if (program.kernels.empty()) {
    diags.error({}, "the DSL source defines no kernel");
    return std::nullopt;
  }
  if (name && !name->empty()) {
    if (const Kernel* k = program.find(*name)) return *k;
    diags.error({}, fmt::format("no kernel named '{}' in the DSL source (it defines: {})", *name, fmt::join(names, ", ")));
    return std::nullopt;
  }
  if (program.kernels.size() == 1) return program.kernels.front();
  if (name)  // visibly empty: compile() will refuse
    diags.error({}, fmt::format("the DSL source defines {} kernels ({}); choose one with CompileOptions::kernel",
                                names.size(), fmt::join(names, ", ")));
  return std::nullopt;
}

}  // namespace

void checkCalls(const Kernel& kernel, const std::vector<KernelCall>& calls, Diagnostics& diags) {
  std::vector<const Param*> params;
  for (size_t i = 0; i < kernel.numSignatureParams(); ++i)  // the locals take no argument
    if (kernel.params[i].kind != ParamKind::Size) params.push_back(&kernel.params[i]);
  std::vector<std::string> signature;
  for (const Param* p : params) signature.push_back(paramText(kernel, *p));

  for (const KernelCall& call : calls) {
    if (call.args.size() != params.size()) {
      diags.error(cppLoc(call.pos),
                  fmt::format("kernel '{}' expects {} argument{}, given {} (the signature is {}({}))", kernel.name,
                              params.size(), params.size() == 1 ? "" : "s", call.args.size(), kernel.name,
                              fmt::join(signature, ", ")));
      continue;
    }
    for (size_t i = 0; i < params.size(); ++i) {
      const Param& p = *params[i];
      const CallArg& a = call.args[i];
      if (a.kind == CallArg::Kind::Other) continue;  // a type the scan cannot classify: the runtime checks it
      auto fail = [&](const std::string& why) {
        diags.error(cppLoc(a.pos), fmt::format("kernel '{}' argument {} ({}): expected {}, given {}{}", kernel.name,
                                               i + 1, paramText(kernel, p),
                                               p.isArray() ? fmt::format("rtcg::Array<{0}> or std::vector<{0}>",
                                                                         cppElementName(p.type))
                                                           : std::string(cppElementName(p.type)),
                                               describeArg(a), why));
      };
      if (p.isArray()) {
        if (a.kind == CallArg::Kind::Scalar || !a.type || *a.type != p.type)
          fail("");
        else if (a.kind == CallArg::Kind::ConstHostVector && p.isWritten())
          fail(fmt::format(" (the kernel writes '{}': pass a non-const std::vector<{}> or an rtcg::Array<{}>)", p.name,
                           cppElementName(p.type), cppElementName(p.type)));
      } else {
        if (a.kind != CallArg::Kind::Scalar || !a.type)
          fail("");
        else if (!scalarConverts(*a.type, p.type))
          fail(fmt::format(" (pass a {}; rtcg converts a scalar only where no value can change)",
                           cppElementName(p.type)));
      }
    }
  }
}

KernelCheck checkKernel(const FoundKernel& found, CppFiles& files) {
  KernelCheck result;
  const MappedText& text = found.source;

  // The DSL's own diagnostics, in DSL coordinates.
  Diagnostics dsl;
  std::optional<Program> program = parseProgram(found.file, text.text, dsl);
  std::optional<Kernel> selected;
  if (program) {
    for (const Kernel& k : program->kernels) result.kernelNames.push_back(k.name);
    selected = selectKernel(*program, found.kernelName, dsl);
    if (selected && found.sizesConstant) bindAndProve(*selected, found.sizes, dsl);
  }

  // Everything in C++ coordinates: DSL positions through the literal's map; diagnostics without a
  // DSL position (sizes, kernel selection) at the compile call.
  Diagnostics atLiteral, atCall;
  for (const Diagnostic& d : dsl.all()) {
    if (!d.loc.valid()) {
      atCall.add({d.severity, cppLoc(found.callPos), d.message});
      continue;
    }
    CppPos first = mapDslPosition(text, d.loc.line, d.loc.col);
    CppPos last = mapDslPosition(text, d.loc.line, d.loc.col + std::max(d.loc.length, 1) - 1);
    int length = last.line == first.line && last.col >= first.col ? last.col - first.col + 1 : 1;
    atLiteral.add({d.severity, cppLoc(first, length), d.message});
  }
  if (selected) checkCalls(*selected, found.calls, atCall);

  for (const Diagnostics* group : {&atLiteral, &atCall}) {
    const std::string& file = group == &atLiteral ? text.file : found.file;
    for (const Diagnostic& d : group->all()) {
      result.rendered.push_back({d.severity, renderDiagnostic(d, file, files.contents(file))});
      result.errors += d.severity == Severity::Error;
      result.warnings += d.severity == Severity::Warning;
    }
  }
  return result;
}

}  // namespace rtcg
