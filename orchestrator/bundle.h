// Bundles: one exported kernel with everything needed to reproduce its verdict and time (source,
// plan, build flags, toolchain, driver and GPU, timings and verdict from the store), and
// `warpsmith verify`, which re-evaluates a bundle on the GPU at hand (docs/export.md).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"
#include "evaluator/evaluator.h"
#include "orchestrator/export.h"
#include "orchestrator/store.h"

namespace ws {

/// Writes `item` as a bundle folder `dir` (bundle.json, kernel.cu, plan.json, problem/<name>/).
Status WriteBundle(const ExportItem& item, const std::string& dir);

/// The bundles under `path`: itself when it holds bundle.json, else its subfolders that do.
Result<std::vector<std::string>> FindBundles(const std::string& path);

struct VerifyOutcome {
  bool match = true;   // verdict (and, on the recorded GPU model, time) reproduced
  bool ran = false;    // false: no GPU here; compiled and validated only
  std::string report;  // what was compared, line by line
};

/// Re-evaluates one bundle with the evaluator: on a GPU, the full evaluation (correctness on
/// every shape, timing) compared with the recorded verdict and, on the same GPU model, the
/// recorded bench medians within their spread; without one, compilation for sm_90a and sm_100a
/// and plan validation only. `store` supplies the GPU's measured ceilings (speed of light).
Result<VerifyOutcome> VerifyBundle(const std::string& dir, Store& store,
                                   const EvaluatorOptions& opts);

/// Whether a re-measured median agrees with a recorded one: within the larger of three standard
/// deviations, the two runs' min-to-p90 spreads together, and 3% of the recorded median.
bool TimeWithinSpread(const ShapeTiming& recorded, const ShapeTiming& measured, double* tolerance);

}  // namespace ws
