// The reference's float arrays converted to double and back on the run's threads (ranges of a
// large array on threads of their own): a run on several threads gives one thread's outputs,
// every element of them, for f32 and f64 arrays whose ranges split unevenly.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "reference/DslKernels.h"
#include "reference/RandomFill.h"
#include "reference/Reference.h"

namespace rtcg {
namespace {

using testing::bindDsl;

// 7 ranges of at least 2^18 elements, not a multiple of 7.
constexpr int64_t kElements = 7 * (int64_t(1) << 18) + 5;

TEST(ReferenceThreads, ConvertedArraysGiveOneThreadsOutputsOnAnyCount) {
  for (const std::string type : {"f32", "f64"}) {
    const Kernel k = bindDsl("kernel axpb(n: int, x: " + type + "[n], inout y: " + type +
                                 "[n]) {\n  for i in 0..n {\n    y[i] = 2.5 * x[i] + y[i];\n  }\n}\n",
                             {{"n", kElements}});
    HostArgs inputs(k);
    fillInputs(k, inputs, 3);
    ReferenceProgram program(k);
    HostArgs one = inputs;
    ReferenceOptions o;
    o.threads = 1;
    const ReferenceResult expected = program.run(one, o);
    ASSERT_EQ(expected.outputs.size(), 1u);
    for (int threads : {2, 3, 7, 16}) {
      HostArgs many = inputs;
      o.threads = threads;
      const ReferenceResult r = program.run(many, o);
      ASSERT_EQ(r.outputs.size(), 1u);
      // The outputs' values (x and y read on threads, y's values computed from them) ...
      EXPECT_TRUE(r.outputs[0].values == expected.outputs[0].values) << type << ", " << threads << " threads";
      // ... and y's elements written back on threads.
      EXPECT_TRUE(many.array("y").toDoubles() == one.array("y").toDoubles())
          << type << ", " << threads << " threads";
      EXPECT_TRUE(many.array("x").toDoubles() == inputs.array("x").toDoubles()) << type << ": x changed";
    }
  }
}

}  // namespace
}  // namespace rtcg
