// EvalRequest::input_seed (`warpsmith eval --input-seed`): the inputs' seeds it derives.
#include <cstdint>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "evaluator/evaluator.h"

namespace ws {
namespace {

TEST(InputSeedTest, TheSameSeedGivesTheSameInputs) {
  EXPECT_EQ(DerivedInputSeed(7, "bench-3", 0), DerivedInputSeed(7, "bench-3", 0));
  EXPECT_EQ(DerivedInputSeed(7, "test-0", -1), DerivedInputSeed(7, "test-0", -1));
}

// Every case and input set of one evaluation gets its own inputs (a rotation of equal sets would
// leave the L2 warm), and another seed other inputs.
TEST(InputSeedTest, CasesSetsAndSeedsDiffer) {
  std::set<uint64_t> seen;
  int n = 0;
  for (uint64_t seed : {0ull, 1ull, 7ull, 0xFFFFFFFFull}) {
    for (const char* id : {"test-0", "test-1", "hidden-12", "bench-12", "bench-13"}) {
      for (int set = -1; set < 8; ++set) {
        seen.insert(DerivedInputSeed(seed, id, set));
        ++n;
      }
    }
  }
  EXPECT_EQ(seen.size(), static_cast<size_t>(n));
}

}  // namespace
}  // namespace ws
