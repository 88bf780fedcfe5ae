// The manifest rtcg-scan writes with --manifest FILE: every embedded kernel it found, as JSON, so
// later tools (rtcgc tune --manifest) can work on an application's kernels without running it.
//
//   {"version": 1, "kernels": [{"file": "/src/app.cpp", "line": 12, "column": 20,
//     "kernels": ["matmul"], "kernel": "matmul", "variable": "mm", "source": "kernel matmul(...) {...}",
//     "sizes": {"n": 500}, "sizesConstant": true, "errors": 0}, ...]}
//
// line/column are the compile call's; "kernel" is the one compile() picks (absent when the scan
// cannot tell); "sizes" holds the constant bindings only ("sizesConstant" says whether that is all).
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "Check.h"
#include "Findings.h"

namespace rtcg {

nlohmann::json manifestEntry(const FoundKernel& found, const KernelCheck& check);
nlohmann::json manifest(const std::vector<nlohmann::json>& entries);

// Writes the JSON to `path`; throws rtcg::Error when it cannot.
void writeManifest(const std::string& path, const nlohmann::json& manifest);

}  // namespace rtcg
