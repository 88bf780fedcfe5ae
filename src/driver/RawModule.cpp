#include "driver/RawModule.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cctype>
#include <charconv>
#include <cstring>
#include <sstream>

#include "codegen/HalfHeaders.h"
#include "codegen/Nvrtc.h"
#include "driver/KernelBuild.h"
#include "driver/Pipeline.h"
#include "runtime/Hash.h"
#include "support/Error.h"

namespace rtcg::raw {

const PtxEntry* ModuleImage::find(std::string_view name) const {
  for (const PtxEntry& e : entries)
    if (e.name == name) return &e;
  return nullptr;
}

std::string ModuleImage::entryNames() const {
  std::string out;
  for (const PtxEntry& e : entries) out += (out.empty() ? "" : ", ") + e.name;
  return out.empty() ? "none" : out;
}

// ---- options, key, compile, cache ----------------------------------------------------------------

void checkOptions(const std::vector<std::string>& options) {
  // rtcg picks the architecture (the device's) and the output (a cubin, with PTX for the lowered
  // signatures); these would contradict it.
  static const char* const kRefused[] = {"-arch", "--gpu-architecture", "-dlto", "--dlink-time-opt", "-dlink",
                                         "--device-link", "--gen-opt-lto"};
  for (const std::string& o : options) {
    if (o.empty() || o[0] != '-')
      throw Error(fmt::format("NVRTC option '{}' does not begin with '-' (give each option as one word: -DTILE=128, "
                              "-I/path, --use_fast_math)",
                              o));
    for (const char* refused : kRefused) {
      std::string_view r(refused);
      if (o.rfind(r, 0) == 0 && (o.size() == r.size() || o[r.size()] == '=' || r == "-arch"))
        throw Error(fmt::format("NVRTC option '{}' is rtcg's to choose: a module compiles to a cubin for the "
                                "architecture of the device it loads on (a line '// rtcg-arch: sm_90a' in the source "
                                "selects sm_90a on sm_90 devices)",
                                o));
    }
  }
}

std::string moduleKey(const std::string& text, const std::string& fileName, const std::vector<std::string>& options,
                      const std::string& arch, int driverVersion) {
  std::vector<std::string> parts{"rtcg-raw-module-v1", text, fileName, fmt::format("{}", fmt::join(options, "\x1f")),
                                 arch, nvrtcVersionString(), fmt::format("driver {}", driverVersion), RTCG_VERSION,
                                 fmt::format("{}", fmt::join(nvrtcOptions(), "\x1f"))};
  // rtcg's NVRTC headers compile with a source that names them (HalfHeaders.h), as for generated code.
  for (const auto& [name, header] : nvrtcHalfHeaders())
    if (text.find(name) != std::string::npos) parts.push_back(header);
  return hashKey(parts);
}

ModuleImage compileModule(const std::string& text, const std::string& fileName, const std::vector<std::string>& options,
                          const std::string& arch) {
  checkOptions(options);
  CudaCompileResult r = compileThroughNvrtc(fileName, text, arch, options, /*wantPtx=*/true);
  Diagnostics diags = nvrtcDiagnostics(r.log, fileName, text);
  if (!r.success || r.cubin.empty()) {
    if (!diags.hasErrors())  // an option NVRTC refused, or no cubin: its whole log, with the options
      diags.error({}, fmt::format("{} (options: {})", r.log.empty() ? "NVRTC produced no cubin" : r.log,
                                  options.empty() ? "none" : fmt::format("{}", fmt::join(options, " "))));
    throwDiagnostics(diags, SourceText{fileName, text});
  }
  ModuleImage image;
  image.cubin.assign(r.cubin.begin(), r.cubin.end());
  image.entries = parsePtxEntries(r.ptx);
  image.ptx = std::move(r.ptx);
  image.warnings = diags.render(fileName, text);
  return image;
}

namespace {
constexpr std::string_view kImageMagic = "rtcg-raw-image-1\n";
}

std::string encodeImage(const ModuleImage& image) {
  std::string out(kImageMagic);
  for (const PtxEntry& e : image.entries) {
    out += fmt::format("E {} {}", e.name, e.paramSizes.size());
    for (size_t s : e.paramSizes) out += fmt::format(" {}", s);
    out += '\n';
  }
  out += fmt::format("C {}\n", image.cubin.size());
  out += image.cubin;
  return out;
}

std::optional<ModuleImage> decodeImage(std::string_view bytes) {
  if (bytes.substr(0, kImageMagic.size()) != kImageMagic) return std::nullopt;
  size_t pos = kImageMagic.size();
  ModuleImage image;
  while (pos < bytes.size()) {
    size_t end = bytes.find('\n', pos);
    if (end == std::string_view::npos) return std::nullopt;
    std::istringstream line{std::string(bytes.substr(pos, end - pos))};
    pos = end + 1;
    std::string tag;
    line >> tag;
    if (tag == "C") {
      size_t size = 0;
      if (!(line >> size) || size != bytes.size() - pos) return std::nullopt;
      image.cubin.assign(bytes.substr(pos));
      return image;
    }
    PtxEntry e;
    size_t count = 0;
    if (tag != "E" || !(line >> e.name >> count) || count > 4096) return std::nullopt;
    e.paramSizes.resize(count);
    for (size_t& s : e.paramSizes)
      if (!(line >> s)) return std::nullopt;
    image.entries.push_back(std::move(e));
  }
  return std::nullopt;  // no cubin
}

ModuleImage cachedModule(KernelCache& cache, const std::string& text, const std::string& fileName,
                         const std::vector<std::string>& options, const std::string& arch, int driverVersion,
                         CacheSource* source) {
  checkOptions(options);
  const std::string key = moduleKey(text, fileName, options, arch, driverVersion);
  std::optional<ModuleImage> compiled;
  std::string bytes = cache.getOrCompute(
      key,
      [&] {
        compiled = compileModule(text, fileName, options, arch);
        return encodeImage(*compiled);
      },
      source);
  if (compiled) return *compiled;  // with NVRTC's warnings
  if (std::optional<ModuleImage> image = decodeImage(bytes)) return *image;
  // An entry of another layout under this key (the checksum held, the format did not): rebuild it.
  ModuleImage image = compileModule(text, fileName, options, arch);
  cache.put(key, encodeImage(image));
  if (source) *source = CacheSource::Computed;
  return image;
}

// ---- PTX entries ---------------------------------------------------------------------------------

namespace {

// The size of one `.param` declaration: ".param .u64 .ptr .global .align 1 f_param_0" is 8,
// ".param .align 8 .b8 f_param_1[24]" is 24.
std::optional<size_t> paramBytes(std::string_view decl) {
  std::istringstream words{std::string(decl)};
  std::optional<size_t> bits;
  std::string w, last;
  while (words >> w) {
    last = w;
    if (bits || w.size() < 3 || w[0] != '.' || !std::strchr("usbf", w[1])) continue;
    size_t b = 0;
    if (std::from_chars(w.data() + 2, w.data() + w.size(), b).ec == std::errc() && (b == 8 || b == 16 || b == 32 || b == 64))
      bits = b;
  }
  if (!bits) return std::nullopt;
  size_t count = 1;
  if (size_t open = last.find('['); open != std::string::npos) {
    size_t close = last.find(']', open);
    if (close == std::string::npos ||
        std::from_chars(last.data() + open + 1, last.data() + close, count).ec != std::errc())
      return std::nullopt;
  }
  return *bits / 8 * count;
}

}  // namespace

std::vector<PtxEntry> parsePtxEntries(const std::string& ptx) {
  std::vector<PtxEntry> out;
  constexpr std::string_view kEntry = ".entry ";
  for (size_t pos = ptx.find(kEntry); pos != std::string::npos; pos = ptx.find(kEntry, pos + 1)) {
    size_t nameBegin = pos + kEntry.size();
    size_t open = ptx.find('(', nameBegin);
    size_t close = open == std::string::npos ? open : ptx.find(')', open);
    if (close == std::string::npos) break;
    PtxEntry e;
    e.name = ptx.substr(nameBegin, open - nameBegin);
    while (!e.name.empty() && std::isspace((unsigned char)e.name.back())) e.name.pop_back();
    std::string_view params(ptx.data() + open + 1, close - open - 1);
    size_t start = 0;
    while (start < params.size()) {
      size_t comma = params.find(',', start);
      std::string_view decl = params.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
      if (decl.find(".param") != std::string_view::npos) {
        std::optional<size_t> bytes = paramBytes(decl);
        if (!bytes) break;  // a form not understood: the driver's sizes are needed then
        e.paramSizes.push_back(*bytes);
      }
      if (comma == std::string_view::npos) break;
      start = comma + 1;
    }
    out.push_back(std::move(e));
  }
  return out;
}

// ---- NVRTC's log ---------------------------------------------------------------------------------

namespace {

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && std::isspace((unsigned char)s.front())) s.remove_prefix(1);
  while (!s.empty() && std::isspace((unsigned char)s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> splitLines(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start <= text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    if (end == text.size()) break;
    start = end + 1;
  }
  return lines;
}

struct LogHeader {
  std::string file;
  int line = 0;
  Severity severity = Severity::Error;
  std::string message;
};

// "FILE(LINE): error: MESSAGE", "FILE(LINE): warning #1105-D: MESSAGE", "FILE(LINE): catastrophic
// error: MESSAGE"; nullopt for any other line.
std::optional<LogHeader> parseHeader(std::string_view line) {
  for (size_t close = line.find("): "); close != std::string_view::npos; close = line.find("): ", close + 1)) {
    size_t open = line.rfind('(', close);
    if (open == std::string_view::npos || open == 0 || open + 1 == close) continue;
    int number = 0;
    if (std::from_chars(line.data() + open + 1, line.data() + close, number).ec != std::errc() || number <= 0) continue;
    std::string_view rest = line.substr(close + 3);
    LogHeader h;
    if (rest.rfind("error", 0) == 0 || rest.rfind("catastrophic error", 0) == 0)
      h.severity = Severity::Error;
    else if (rest.rfind("warning", 0) == 0)
      h.severity = Severity::Warning;
    else
      continue;
    size_t colon = rest.find(": ");
    if (colon == std::string_view::npos) continue;
    h.file = std::string(line.substr(0, open));
    h.line = number;
    h.message = std::string(rest.substr(colon + 2));
    return h;
  }
  return std::nullopt;
}

// The 1-based column of `source`'s line that NVRTC's caret points at: NVRTC echoes the line
// (indented by two spaces) and puts '^' under the place; 0 when the echo is not that line.
int caretColumn(std::string_view echo, std::string_view caret, std::string_view sourceLine) {
  size_t at = caret.find('^');
  if (at == std::string_view::npos || trimmed(caret) != "^") return 0;
  std::string_view content = trimmed(echo);
  if (content.empty()) return 0;
  size_t echoStart = echo.find(content);
  size_t sourceStart = sourceLine.find(content);
  if (sourceStart == std::string_view::npos || at < echoStart) return 0;
  return int(sourceStart + (at - echoStart)) + 1;
}

}  // namespace

Diagnostics nvrtcDiagnostics(const std::string& log, const std::string& fileName, const std::string& source) {
  const std::vector<std::string_view> logLines = splitLines(log);
  const std::vector<std::string_view> sourceLines = splitLines(source);
  Diagnostics diags;
  for (size_t i = 0; i < logLines.size(); ++i) {
    std::optional<LogHeader> h = parseHeader(logLines[i]);
    if (!h) continue;
    Diagnostic d;
    d.severity = h->severity;
    if (h->file == fileName && h->line <= int(sourceLines.size())) {
      d.loc.line = h->line;
      d.loc.col = 1;
      if (i + 2 < logLines.size())
        if (int col = caretColumn(logLines[i + 1], logLines[i + 2], sourceLines[h->line - 1]); col > 0) d.loc.col = col;
      d.message = h->message;
    } else {
      d.message = fmt::format("{}({}): {}", h->file, h->line, h->message);  // a header's line: no echo here
    }
    diags.add(std::move(d));
  }
  return diags;
}

// ---- the source's declaration ----------------------------------------------------------------------

namespace {

bool identChar(char c) { return std::isalnum((unsigned char)c) || c == '_'; }

// The text with comments replaced by spaces (newlines kept), string and character literals left alone.
std::string withoutComments(const std::string& text) {
  std::string out = text;
  for (size_t i = 0; i < out.size(); ++i) {
    char c = out[i];
    if (c == '"' || c == '\'') {
      for (++i; i < out.size() && out[i] != c && out[i] != '\n'; ++i)
        if (out[i] == '\\') ++i;
    } else if (c == '/' && i + 1 < out.size() && out[i + 1] == '/') {
      for (; i < out.size() && out[i] != '\n'; ++i) out[i] = ' ';
    } else if (c == '/' && i + 1 < out.size() && out[i + 1] == '*') {
      size_t end = out.find("*/", i + 2);
      end = end == std::string::npos ? out.size() : end + 2;
      for (; i < end; ++i)
        if (out[i] != '\n') out[i] = ' ';
      --i;
    }
  }
  return out;
}

// The index of the bracket closing the one at `open`, counting (), [], {} and <>; npos if none.
size_t closing(const std::string& s, size_t open) {
  int depth = 0;
  for (size_t i = open; i < s.size(); ++i) {
    char c = s[i];
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    if (c == ')' || c == ']' || c == '}' || c == '>') --depth;
    if (depth == 0) return i;
  }
  return std::string::npos;
}

// Splits a parameter list at its top-level commas.
std::vector<std::string> splitParams(std::string_view list) {
  std::vector<std::string> out;
  int depth = 0;
  std::string cur;
  for (char c : list) {
    if (c == '(' || c == '[' || c == '{' || c == '<') ++depth;
    if (c == ')' || c == ']' || c == '}' || c == '>') --depth;
    if (c == ',' && depth == 0) {
      out.push_back(std::move(cur));
      cur.clear();
    } else {
      cur += c;
    }
  }
  out.push_back(std::move(cur));
  return out;
}

std::string collapseSpaces(std::string_view s) {
  std::string out;
  for (char c : trimmed(s)) {
    if (std::isspace((unsigned char)c)) {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  return out;
}

SourceParam sourceParam(std::string_view text) {
  std::string decl = collapseSpaces(text);
  if (size_t eq = decl.find('='); eq != std::string::npos) decl = collapseSpaces(decl.substr(0, eq));  // a default
  SourceParam p;
  bool array = false;
  if (!decl.empty() && decl.back() == ']') {  // `float a[4]` is a pointer parameter
    array = true;
    decl = collapseSpaces(decl.substr(0, decl.find('[')));
  }
  size_t nameBegin = decl.size();
  while (nameBegin > 0 && identChar(decl[nameBegin - 1])) --nameBegin;
  std::string name = decl.substr(nameBegin);
  std::string type = collapseSpaces(decl.substr(0, nameBegin));
  static const char* const kTypeWords[] = {"int", "float", "double", "char", "short", "long", "unsigned", "signed",
                                           "bool", "void", "const", "volatile", "__restrict__", "restrict"};
  bool typeWord = false;
  for (const char* w : kTypeWords) typeWord = typeWord || name == w;
  // `float*`, `unsigned int`, `size_t`: no name, only a type.
  if (name.empty() || typeWord || type.empty() || type == "const" || type == "volatile") {
    p.type = decl;
  } else {
    p.name = name;
    p.type = type;
  }
  if (array) p.type += "*";
  p.pointer = p.type.find('*') != std::string::npos;
  return p;
}

}  // namespace

std::optional<std::vector<SourceParam>> sourceParameters(const std::string& text, const std::string& function) {
  if (function.empty()) return std::nullopt;
  const std::string s = withoutComments(text);
  std::optional<std::vector<SourceParam>> found;
  bool foundDefinition = false;
  for (size_t pos = s.find(function); pos != std::string::npos; pos = s.find(function, pos + 1)) {
    size_t end = pos + function.size();
    if ((pos > 0 && identChar(s[pos - 1])) || (end < s.size() && identChar(s[end]))) continue;
    size_t open = s.find_first_not_of(" \t\r\n", end);
    if (open == std::string::npos || s[open] != '(') continue;
    // The declaration this name belongs to starts after the previous ';', '{' or '}'.
    size_t stmt = s.find_last_of(";{}", pos);
    std::string_view head(s.data() + (stmt == std::string::npos ? 0 : stmt + 1), pos - (stmt == std::string::npos ? 0 : stmt + 1));
    if (head.find("__global__") == std::string_view::npos) continue;
    size_t close = closing(s, open);
    if (close == std::string::npos) return std::nullopt;
    std::vector<SourceParam> params;
    std::string_view list(s.data() + open + 1, close - open - 1);
    if (!trimmed(list).empty() && trimmed(list) != "void")
      for (const std::string& piece : splitParams(list)) params.push_back(sourceParam(piece));
    size_t after = s.find_first_not_of(" \t\r\n", close + 1);
    bool definition = after != std::string::npos && s[after] == '{';
    if (found && found->size() != params.size()) return std::nullopt;  // overloads: no single declaration
    if (!found || (definition && !foundDefinition)) found = std::move(params), foundDefinition = definition;
  }
  return found;
}

// ---- the argument check --------------------------------------------------------------------------

std::vector<Parameter> parameterTable(const std::vector<size_t>& sizes,
                                      const std::optional<std::vector<SourceParam>>& declared) {
  std::vector<Parameter> out(sizes.size());
  for (size_t i = 0; i < sizes.size(); ++i) {
    out[i].size = sizes[i];
    if (declared && declared->size() == sizes.size()) {
      out[i].name = (*declared)[i].name;
      out[i].type = (*declared)[i].type;
      out[i].pointer = (*declared)[i].pointer;
    }
  }
  return out;
}

namespace {

// The element type a declared pointer names, as rtcg names array types ("" when not one of them).
std::string pointee(const std::string& type) {
  std::string base;
  std::istringstream words(type);
  for (std::string w; words >> w;) {
    while (!w.empty() && (w.back() == '*' || w.back() == '&')) w.pop_back();
    while (!w.empty() && w.front() == '*') w.erase(0, 1);
    if (w.empty() || w == "const" || w == "volatile" || w == "__restrict__" || w == "restrict") continue;
    base += (base.empty() ? "" : " ") + w;
  }
  static const std::pair<const char*, const char*> kTypes[] = {
      {"float", "f32"},      {"double", "f64"},          {"int", "i32"},           {"signed", "i32"},
      {"signed int", "i32"}, {"int32_t", "i32"},         {"long long", "i64"},     {"long long int", "i64"},
      {"long", "i64"},       {"long int", "i64"},        {"int64_t", "i64"},       {"__half", "f16"},
      {"half", "f16"},       {"__nv_bfloat16", "bf16"},  {"nv_bfloat16", "bf16"}};
  for (const auto& [name, rtcgType] : kTypes)
    if (base == name) return rtcgType;
  return "";
}

std::string describeParam(const Parameter& p, size_t index) {
  if (p.type.empty()) return fmt::format("parameter {}", index + 1);
  if (p.name.empty()) return fmt::format("parameter {} ({})", index + 1, p.type);
  return fmt::format("parameter {} '{}' ({})", index + 1, p.name, p.type);
}

}  // namespace

std::string argumentMismatch(const std::string& function, const std::vector<Parameter>& params,
                             const std::vector<Argument>& args) {
  if (args.size() != params.size()) {
    std::string declared;
    for (const Parameter& p : params) {
      if (p.type.empty()) {
        declared.clear();
        break;
      }
      declared += fmt::format("{}{}{}{}", declared.empty() ? "" : ", ", p.type, p.name.empty() ? "" : " ", p.name);
    }
    return fmt::format("'{}' takes {} parameter{}{}, but {} argument{} given", function, params.size(),
                       params.size() == 1 ? "" : "s", declared.empty() ? "" : " (" + declared + ")", args.size(),
                       args.size() == 1 ? " was" : "s were");
  }
  for (size_t i = 0; i < args.size(); ++i) {
    const Parameter& p = params[i];
    const Argument& a = args[i];
    const bool known = !p.type.empty();
    std::string where = fmt::format("'{}': argument {} for {}", function, i + 1, describeParam(p, i));
    if (known && p.pointer && a.kind == Argument::Kind::Value)
      return fmt::format("{} is {}, but the parameter is a pointer: pass a device array", where, a.description);
    if (known && !p.pointer && a.kind != Argument::Kind::Value)
      return fmt::format("{} is {}, but the parameter takes a value of {} bytes, not a pointer", where, a.description,
                         p.size);
    if (a.size != p.size)
      return fmt::format("{} is {} ({} bytes), but the parameter takes {} bytes", where, a.description, a.size, p.size);
    if (known && p.pointer && a.kind == Argument::Kind::Array && !a.elementType.empty()) {
      std::string want = pointee(p.type);
      if (!want.empty() && want != a.elementType)
        return fmt::format("{} is {}, but the parameter points to {} elements", where, a.description, want);
    }
  }
  return "";
}

}  // namespace rtcg::raw
