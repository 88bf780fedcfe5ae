#include "CommandLine.h"

#include <fmt/format.h>

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <regex>

#include "ExitCodes.h"
#include "support/Error.h"
#include "support/InputFile.h"
#include "support/OutputFile.h"

namespace rtcgc {

rtcg::SourceText readSource(const std::string& path) {
  try {
    return {path, rtcg::readInputFile(path, rtcg::kMaxSourceBytes)};
  } catch (const rtcg::Error& e) {
    fmt::print(stderr, "rtcgc: error: {}\n", e.what());
    throw Fail{kInputError};
  }
}

rtcg::SizeBindings parseDefines(const std::vector<std::string>& defines) {
  static const std::regex form(R"(\s*([A-Za-z_][A-Za-z0-9_]*)\s*=\s*(-?[0-9]+)\s*)");
  rtcg::SizeBindings sizes;
  for (const std::string& d : defines) {
    std::smatch m;
    // std::regex recurses per character: a -D of 120 000 characters crashed rtcgc (SIGSEGV). A
    // name is at most 255 characters, so a longer binding is malformed anyway.
    if (d.size() > 300 || !std::regex_match(d, m, form)) {
      fmt::print(stderr, "rtcgc: error: bad size binding '-D {}': expected NAME=INTEGER, e.g. -D n=500\n",
                 d.size() > 80 ? d.substr(0, 80) + "..." : d);
      throw Fail{kUsage};
    }
    int64_t value = 0;
    try {
      value = std::stoll(m[2].str());
    } catch (const std::out_of_range&) {
      fmt::print(stderr, "rtcgc: error: size '{}' is out of range\n", d);
      throw Fail{kInputError};
    }
    if (!sizes.emplace(m[1].str(), value).second) {
      fmt::print(stderr, "rtcgc: error: size '{}' is bound twice\n", m[1].str());
      throw Fail{kUsage};
    }
  }
  return sizes;
}

void writeFileAtomically(const std::string& path, std::string_view data) {
  try {
    rtcg::writeOutputFile(path, data);
  } catch (const rtcg::Error& e) {
    fmt::print(stderr, "rtcgc: error: {}\n", e.what());
    throw Fail{kInputError};
  }
}

std::pair<std::string, std::string> parseInputSpec(const rtcg::Kernel& k, const std::string& spec) {
  const size_t eq = spec.find('=');
  const int p = eq == std::string::npos ? -1 : k.findParam(spec.substr(0, eq));
  if (p < 0 || !k.params[size_t(p)].isArray() || k.params[size_t(p)].mode == rtcg::ArrayMode::Out ||
      k.params[size_t(p)].isLocal()) {
    fmt::print(stderr, "rtcgc: error: bad '--input {}': expected NAME=FILE for an in or inout array of kernel '{}'\n",
               spec, k.name);
    throw Fail{kUsage};
  }
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

namespace {

// A number at least `lo` (or above it, `strict`); the message names the bound, not CLI11's range.
CLI::Validator atLeast(double lo, bool strict, const std::string& words) {
  return CLI::Validator(
      [=](std::string& text) {
        char* end = nullptr;
        errno = 0;
        const double v = std::strtod(text.c_str(), &end);
        if (end == text.c_str() || *end || errno == ERANGE || std::isnan(v) || v < lo || (strict && v == lo))
          return "must be " + words + ", not '" + text + "'";
        return std::string();
      },
      words == "0 or more" ? "NUMBER >= 0" : "NUMBER > 0");
}

}  // namespace

CLI::Validator nonNegative() { return atLeast(0, false, "0 or more"); }
CLI::Validator positive() { return atLeast(0, true, "more than 0"); }

}  // namespace rtcgc
