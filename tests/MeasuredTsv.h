// The measured candidates of bench/results/FILE (`rtcgc db export --verified-tsv`: kernel, sizes,
// schedule, median ms, registers; `#` comments): what the model tests (tests/space) calibrate
// against and what the tuner's search tests (tests/tuner) replay.
#pragma once

#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace rtcgtest {

struct MeasuredCandidate {
  std::string kernel, sizes, schedule;
  double ms = 0;
};

inline std::vector<MeasuredCandidate> readMeasured(const std::string& file) {
  std::ifstream in(std::string(RTCG_SOURCE_DIR) + "/bench/results/" + file);
  if (!in) throw std::runtime_error("cannot read bench/results/" + file);
  std::vector<MeasuredCandidate> out;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::istringstream ls(line);
    for (std::string field; std::getline(ls, field, '\t');) f.push_back(field);
    if (f.size() != 5) throw std::runtime_error(file + ": not 5 tab-separated fields: " + line);
    out.push_back({f[0], f[1], f[2], std::stod(f[3])});
  }
  return out;
}

}  // namespace rtcgtest
