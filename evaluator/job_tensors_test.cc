// The evaluator writes runner jobs; the runner parses them. For every problem of the set and every
// test, bench and hidden shape, the job's tensor list (dtypes, sizes, init fields) must be
// accepted by the runner's own parser, so no problem fails on the GPU with "bad job".
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "evaluator/internal.h"
#include "evaluator/runner/job.h"
#include "problems/problems.h"

namespace ws {
namespace {

using json = nlohmann::json;

TEST(JobTensorsTest, EveryProblemShapeParsesInTheRunner) {
  auto set = LoadProblemSet(std::string(WS_SOURCE_DIR) + "/problems");
  ASSERT_TRUE(set.ok()) << set.status().message();
  ASSERT_GE(set->size(), 20u);
  int checked = 0;
  for (const ProblemSpec& spec : *set) {
    std::map<std::string, std::string> params;
    for (const auto& p : spec.params) params[p.name] = p.default_value;
    for (const auto* shapes : {&spec.test_shapes, &spec.bench_shapes, &spec.hidden_shapes}) {
      for (const Shape& shape : *shapes) {
        const SymbolTable symbols = BindSymbols(spec, shape, params);
        auto tensors = TensorsJson(spec, symbols);
        ASSERT_TRUE(tensors.ok()) << spec.name << ": " << tensors.status().message();
        json job = {{"cubin", "/k.cubin"},
                    {"result", "/r.json"},
                    {"cases",
                     {{{"id", "c"},
                       {"launches", json::array()},
                       {"workspace", {{"bytes", 0}, {"zero", false}}},
                       {"tensors", *tensors},
                       {"input_seeds", {1}},
                       {"poison", 165},
                       {"timing", nullptr},
                       {"dump", "/d"},
                       {"dump_inputs", false}}}}};
        auto parsed = runner::ParseJob(job.dump());
        EXPECT_TRUE(parsed.ok()) << spec.name << " " << ShapeText(spec, shape) << ": "
                                 << parsed.status().message();
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 200);
}

}  // namespace
}  // namespace ws
