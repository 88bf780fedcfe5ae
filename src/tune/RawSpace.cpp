#include "tune/RawSpace.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <set>
#include <sstream>

#include "codegen/Nvrtc.h"
#include "runtime/Hash.h"
#include "support/Error.h"

namespace rtcg::raw {

namespace {

bool isIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit((unsigned char)s[0])) return false;
  for (char c : s)
    if (!std::isalnum((unsigned char)c) && c != '_') return false;
  return true;
}

bool isWord(const std::string& s) {
  if (s.empty()) return false;
  for (char c : s)
    if (std::isspace((unsigned char)c) || c == '=' || c == ';' || c == ',' || !std::isprint((unsigned char)c))
      return false;
  return true;
}

constexpr size_t kMaxVariants = 1000000;

}  // namespace

void checkSpace(const TuneSpace& space) {
  if (space.empty()) throw Error("the tuning space declares no macro (give at least one: TILE in 64, 128, 256)");
  std::set<std::string> seen;
  for (const auto& [name, values] : space) {
    if (!isIdentifier(name)) throw Error(fmt::format("tuning space: '{}' is not a macro name (a C identifier)", name));
    if (!seen.insert(name).second) throw Error(fmt::format("tuning space: macro '{}' is declared twice", name));
    if (values.empty()) throw Error(fmt::format("tuning space: macro '{}' has no values", name));
    std::set<std::string> distinct;
    for (const std::string& v : values) {
      if (!isWord(v))
        throw Error(fmt::format("tuning space: value '{}' of macro '{}' is not one word (no spaces, '=', ',' or ';')",
                                v, name));
      if (!distinct.insert(v).second)
        throw Error(fmt::format("tuning space: macro '{}' lists the value '{}' twice", name, v));
    }
  }
}

std::vector<Variant> enumerateSpace(const TuneSpace& space, const std::function<bool(const Variant&)>& keep,
                                    size_t limit) {
  checkSpace(space);
  size_t product = 1;
  for (const auto& [name, values] : space) {
    if (product > kMaxVariants / values.size())
      throw Error(fmt::format("the tuning space has more than {} variants; declare fewer values", kMaxVariants));
    product *= values.size();
  }
  std::vector<Variant> out;
  std::vector<size_t> index(space.size(), 0);
  for (size_t n = 0; n < product; ++n) {
    Variant v;
    for (size_t m = 0; m < space.size(); ++m) v.emplace_back(space[m].first, space[m].second[index[m]]);
    if (!keep || keep(v)) {
      out.push_back(std::move(v));
      if (limit && out.size() == limit) break;
    }
    for (size_t m = space.size(); m-- > 0;) {  // the last macro varies fastest
      if (++index[m] < space[m].second.size()) break;
      index[m] = 0;
    }
  }
  return out;
}

std::string variantText(const Variant& v) {
  std::string out;
  for (const auto& [name, value] : v) out += fmt::format("{}{}={}", out.empty() ? "" : " ", name, value);
  return out;
}

std::vector<std::string> variantOptions(const Variant& v) {
  std::vector<std::string> out;
  for (const auto& [name, value] : v) out.push_back(fmt::format("-D{}={}", name, value));
  return out;
}

Variant parseVariant(const std::string& text, const TuneSpace& space) {
  std::istringstream words(text);
  std::vector<std::pair<std::string, std::string>> given;
  for (std::string w; words >> w;) {
    size_t eq = w.find('=');
    if (eq == std::string::npos) throw Error(fmt::format("variant '{}': '{}' is not MACRO=VALUE", text, w));
    given.emplace_back(w.substr(0, eq), w.substr(eq + 1));
  }
  Variant v;
  for (const auto& [name, values] : space) {
    const std::pair<std::string, std::string>* hit = nullptr;
    for (const auto& g : given)
      if (g.first == name) {
        if (hit) throw Error(fmt::format("variant '{}' gives macro '{}' twice", text, name));
        hit = &g;
      }
    if (!hit) throw Error(fmt::format("variant '{}' gives no value of macro '{}'", text, name));
    if (std::find(values.begin(), values.end(), hit->second) == values.end())
      throw Error(fmt::format("variant '{}': {} is not one of the values of macro '{}' ({})", text, hit->second, name,
                              fmt::join(values, ", ")));
    v.emplace_back(name, hit->second);
  }
  if (given.size() != v.size()) throw Error(fmt::format("variant '{}' names a macro the space does not declare", text));
  return v;
}

std::string spaceText(const TuneSpace& space) {
  std::string out;
  for (const auto& [name, values] : space) out += fmt::format("{}{}={}", out.empty() ? "" : ";", name, fmt::join(values, ","));
  return out;
}

TuningKey rawTuningKey(const std::string& text, const std::string& fileName, const std::vector<std::string>& options,
                       const std::string& function, const TuneSpace& space, const std::string& problem,
                       const cuda::DeviceProperties& device) {
  TuningKey key;
  key.kernelHash = hashKey({"rtcg-raw-tuning-v1", text, fileName, fmt::format("{}", fmt::join(options, "\x1f")),
                            function, spaceText(space), problem})
                       .substr(0, 16);
  key.kernelName = "raw:" + function;  // never a DSL kernel's name: its lookups and warm starts pass raw rows by
  key.sizes = problem;
  key.device = device.name;
  key.arch = device.arch();
  key.driverVersion = device.driverVersion;
  key.nvrtcVersion = nvrtcVersionString();
  key.rtcgVersion = RTCG_VERSION;
  key.multiprocessors = device.multiprocessors;
  return key;
}

}  // namespace rtcg::raw
