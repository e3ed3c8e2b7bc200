// libFuzzer target: a candidate's launch plan (evaluator/plan.cc), parsed, validated against a
// problem and resolved for each of its test shapes, as eval does before anything compiles.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "evaluator/evaluator.h"
#include "problems/problems.h"

namespace {

const ws::ProblemSpec& Spec() {
  // The problem with the most launch features in its hand-tuned plan: workspace, pdl, when.
  static const ws::ProblemSpec spec = [] {
    auto s = ws::LoadProblem(WS_SOURCE_DIR "/problems/moe_permute_quantize/spec.json");
    if (!s.ok()) std::abort();
    return *s;
  }();
  return spec;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string source(reinterpret_cast<const char*>(data), size);
  auto plan = ws::ParsePlan(source);
  if (!plan.ok()) return 0;
  const ws::ProblemSpec& spec = Spec();
  if (!ws::ValidatePlan(*plan, spec).ok()) return 0;
  std::map<std::string, int64_t> knobs;
  for (const auto& [name, values] : plan->knobs) {
    if (!values.empty()) knobs[name] = values.back();  // the last value, not the default
  }
  const std::map<std::string, std::string> params = {{"rounding", "rceil"}};
  (void)ws::ScopedKnobs(*plan, spec, params);
  ws::DeviceLimits limits;
  for (const ws::Shape& shape : spec.test_shapes) {
    (void)ws::ResolvePlan(*plan, spec, ws::BindSymbols(spec, shape, params), knobs, limits);
  }
  return 0;
}
