#include "ManifestTune.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <sstream>

#include "driver/KernelBuild.h"
#include "support/Error.h"
#include "support/InputFile.h"
#include "tune/TuningKeyFor.h"

namespace rtcg::manifest {

namespace {

using nlohmann::json;

// "string \"abc\"", "number -3", "array": what a value is, for messages.
std::string describe(const json& j) {
  if (j.is_string() || j.is_number() || j.is_boolean()) {
    std::string v = j.dump();
    if (v.size() > 40) v = v.substr(0, 37) + "...";
    return fmt::format("{} {}", j.type_name(), v);
  }
  return j.type_name();
}

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  [[noreturn]] void fail(const std::string& message) const {
    throw ManifestError(fmt::format("{}: error: {}", path_, message));
  }

  std::vector<Entry> read(const std::string& text) {
    json root;
    try {
      root = json::parse(text);
    } catch (const json::exception& e) {
      // "[json.exception.parse_error.101] parse error at line 1, ...", or a number JSON can hold
      // but a double cannot ("[json.exception.out_of_range.406] number overflow parsing '7e777'",
      // found by the manifest fuzzer: only parse errors were caught, and it left as an internal error)
      std::string what = e.what();
      size_t close = what.find("] ");
      fail("not valid JSON: " + (close == std::string::npos ? what : what.substr(close + 2)));
    }
    if (!root.is_object())
      fail(fmt::format("expected a JSON object {{\"version\": {}, \"kernels\": [...]}}, got {}", kVersion,
                       describe(root)));
    if (!root.contains("version")) fail(fmt::format("missing \"version\" (this rtcgc reads manifest version {})", kVersion));
    const json& version = root["version"];
    if (!version.is_number_integer()) fail(fmt::format("\"version\" must be an integer, got {}", describe(version)));
    if (version.get<int64_t>() != kVersion)
      fail(fmt::format("manifest version {} is not supported (this rtcgc reads version {})", version.dump(), kVersion));
    if (!root.contains("kernels")) fail("missing \"kernels\"");
    const json& kernels = root["kernels"];
    if (!kernels.is_array()) fail(fmt::format("\"kernels\" must be an array, got {}", describe(kernels)));
    std::vector<Entry> out;
    for (size_t i = 0; i < kernels.size(); ++i) out.push_back(entry(kernels[i], i));
    return out;
  }

 private:
  Entry entry(const json& j, size_t index) {
    std::string name = fmt::format("kernels[{}]", index);
    if (!j.is_object()) fail(fmt::format("{}: expected an object, got {}", name, describe(j)));
    // Named with its location when that much is readable, so the user finds the compile call.
    auto positive = [](const json& v) { return v.is_number_integer() && v.get<int64_t>() > 0; };
    if (j.contains("file") && j["file"].is_string() && j.contains("line") && positive(j["line"]) &&
        j.contains("column") && positive(j["column"]))
      name += fmt::format(" ({}:{}:{})", j["file"].get<std::string>(), j["line"].get<int64_t>(),
                          j["column"].get<int64_t>());
    auto field = [&](const char* key) -> const json& {
      if (!j.contains(key)) fail(fmt::format("{}: missing \"{}\"", name, key));
      return j[key];
    };
    auto wrong = [&](const char* key, const char* expected, const json& v) {
      fail(fmt::format("{}: \"{}\" must be {}, got {}", name, key, expected, describe(v)));
    };
    auto optionalField = [&](const char* key) -> const json* {
      if (!j.contains(key) || j[key].is_null()) return nullptr;
      return &j[key];
    };

    Entry e;
    e.manifestPath = path_;
    e.index = index;
    const json& file = field("file");
    if (!file.is_string()) wrong("file", "a string", file);
    e.file = file.get<std::string>();
    for (const char* key : {"line", "column"}) {
      const json& v = field(key);
      if (!positive(v)) wrong(key, "a positive integer", v);
      (std::strcmp(key, "line") == 0 ? e.line : e.column) = v.get<int64_t>();
    }
    const json& source = field("source");
    if (!source.is_string()) wrong("source", "a string", source);
    e.source = source.get<std::string>();
    const json& sizesConstant = field("sizesConstant");
    if (!sizesConstant.is_boolean()) wrong("sizesConstant", "true or false", sizesConstant);
    e.sizesConstant = sizesConstant.get<bool>();
    const json& errors = field("errors");
    if (!errors.is_number_integer() || errors.get<int64_t>() < 0) wrong("errors", "a count (an integer >= 0)", errors);
    e.errors = errors.get<int64_t>();

    if (const json* v = optionalField("variable")) {
      if (!v->is_string()) wrong("variable", "a string", *v);
      e.variable = v->get<std::string>();
    }
    if (const json* v = optionalField("kernel")) {
      if (!v->is_string() || v->get<std::string>().empty()) wrong("kernel", "a kernel name", *v);
      e.kernel = v->get<std::string>();
    }
    if (const json* v = optionalField("kernels")) {
      if (!v->is_array()) wrong("kernels", "an array of kernel names", *v);
      for (const json& k : *v) {
        if (!k.is_string()) wrong("kernels", "an array of kernel names", k);
        e.kernels.push_back(k.get<std::string>());
      }
    }
    if (const json* v = optionalField("sizes")) {
      if (!v->is_object()) wrong("sizes", "an object of sizes ({\"n\": 500})", *v);
      std::map<std::string, int64_t> sizes;
      for (const auto& [size, value] : v->items()) {
        bool fits = value.is_number_integer() &&
                    !(value.is_number_unsigned() &&
                      value.get<uint64_t>() > uint64_t(std::numeric_limits<int64_t>::max()));
        if (!fits)
          fail(fmt::format("{}: size \"{}\" must be an integer, got {}", name, size, describe(value)));
        sizes[size] = value.get<int64_t>();
      }
      e.sizes = std::move(sizes);
    }
    return e;
  }

  std::string path_;
};

std::string joined(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string sizesOf(const std::map<std::string, int64_t>& sizes) {
  std::string out;
  for (const auto& [name, value] : sizes) out += fmt::format("{}{}={}", out.empty() ? "" : ",", name, value);
  return out.empty() ? "-" : out;
}

// The first diagnostic's message: "error: unknown name 'x'" from "f:1:2: error: unknown name 'x'\n...".
std::string firstError(const std::string& rendered) {
  std::istringstream in(rendered);
  std::string line;
  while (std::getline(in, line)) {
    size_t at = line.find("error: ");
    if (at != std::string::npos) return line.substr(at + 7);
  }
  std::string first = rendered.substr(0, rendered.find('\n'));
  return first.empty() ? "the kernel could not be compiled" : first;
}

}  // namespace

std::string Entry::location() const { return fmt::format("{}:{}:{}", file, line, column); }

std::vector<Entry> parseManifest(const std::string& path, const std::string& text) {
  return Reader(path).read(text);
}

std::vector<Entry> readManifest(const std::string& path) {
  std::string text;
  try {
    text = readInputFile(path, size_t(256) << 20);  // bounded, every read error reported
  } catch (const InputFileError& e) {
    throw ManifestError(fmt::format("{}: error: cannot read the manifest: {}", path, e.reason()));
  }
  return parseManifest(path, text);
}

std::vector<Planned> plan(const std::vector<Entry>& entries) {
  std::vector<Planned> out;
  std::map<std::string, std::string> tunedAt;  // the tuning key's kernel part -> the entry tuning it
  for (const Entry& e : entries) {
    Planned p;
    p.entry = e;
    p.sizes = e.sizes ? sizesOf(*e.sizes) : "-";
    auto skip = [&](std::string reason) {
      p.outcome = Outcome::Skipped;
      p.reason = std::move(reason);
    };
    if (e.errors > 0)
      skip(fmt::format("rtcg-scan found {} error{} in it", e.errors, e.errors == 1 ? "" : "s"));
    else if (!e.kernel)
      skip(e.kernels.size() > 1
               ? fmt::format("the scan could not tell which of its kernels ({}) compile() uses", joined(e.kernels))
               : std::string("the scan could not tell which kernel compile() uses"));
    else if (!e.sizes)
      skip("no sizes in the manifest");
    else if (!e.sizesConstant)
      skip("its sizes are not all compile-time constants (known only at run time)");
    if (p.outcome == Outcome::Skipped) {
      out.push_back(std::move(p));
      continue;
    }

    CompileOptions options;
    options.kernel = *e.kernel;
    options.fileName = fmt::format("<kernel at {}>", e.location());
    try {
      p.bound = tuningTarget(e.source, *e.sizes, options);  // what Context::compile looks up
    } catch (const Error& err) {
      p.outcome = Outcome::Invalid;
      p.diagnostics = err.what();
      p.reason = "does not compile with these sizes: " + firstError(p.diagnostics);
      out.push_back(std::move(p));
      continue;
    }
    p.kernelHash = kernelHashOf(*p.bound);
    p.sizes = sizesText(*p.bound);
    // The device-independent part of the tuning key: equal parts share one database entry.
    std::string key = p.kernelHash + "\x1f" + p.bound->name + "\x1f" + p.sizes;
    auto [it, fresh] = tunedAt.emplace(key, e.location());
    if (!fresh) {
      p.outcome = Outcome::Duplicate;
      p.reason = fmt::format("the same kernel and sizes as {} (tuned once)", it->second);
      p.bound.reset();
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace rtcg::manifest
