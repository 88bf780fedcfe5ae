// The tuning space of a raw CUDA module (Kernel Tuner's use, inside rtcg): the user declares
// macros and their values (TILE in 64, 128, 256), each variant compiles with one value of each
// (-DTILE=128), and the measurements go into the tuning database (tune/TuningDb.h) under a key of
// the module (source, options, function, the space and the problem) and the device.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "runtime/Device.h"
#include "tune/TuningDb.h"

namespace rtcg::raw {

// Macro names with their values, in the order given (the first macro varies slowest).
using TuneSpace = std::vector<std::pair<std::string, std::vector<std::string>>>;
// One variant: each macro of the space with one of its values, in the space's order.
using Variant = std::vector<std::pair<std::string, std::string>>;

// Checks the space: at least one macro, each a C identifier given once, with at least one value,
// each value one non-empty word without '=' (a number, or a token such as float); throws
// rtcg::Error naming what is wrong.
void checkSpace(const TuneSpace& space);

// Every variant of the space, in order (the last macro varies fastest), without those `keep`
// rejects (Kernel Tuner's restrictions); at most `limit` of them (0: all). Throws rtcg::Error for
// a bad space, or for a product past 1 000 000 variants.
std::vector<Variant> enumerateSpace(const TuneSpace& space, const std::function<bool(const Variant&)>& keep = {},
                                    size_t limit = 0);

// "TILE=128 UNROLL=4": how a variant is recorded (the database's schedule column) and shown.
std::string variantText(const Variant& v);
// The variant as NVRTC options: {"-DTILE=128", "-DUNROLL=4"}.
std::vector<std::string> variantOptions(const Variant& v);
// The variant of a text variantText wrote, checked against the space (each macro once, each value
// one of its values); throws rtcg::Error saying what does not fit.
Variant parseVariant(const std::string& text, const TuneSpace& space);
// "TILE=64,128,256;UNROLL=1,2,4": the space as one line (part of the key).
std::string spaceText(const TuneSpace& space);

// The tuning-database key of a search: kernelHash is 16 hex digits of a hash of the source, its
// file name, the options, the function, the space and `problem` (what the arguments are: "n=1048576";
// the caller's words); kernelName is "raw:" and the function (no DSL kernel has such a name, so
// compile()'s lookups and the tuner's warm starts never take a raw row), sizes is `problem`, and
// the device fields are the device's, as for rtcg's own kernels.
TuningKey rawTuningKey(const std::string& text, const std::string& fileName, const std::vector<std::string>& options,
                       const std::string& function, const TuneSpace& space, const std::string& problem,
                       const cuda::DeviceProperties& device);

}  // namespace rtcg::raw
