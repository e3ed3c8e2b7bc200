// `warpsmith export`: the best verified kernel per problem (and parameter setting) for one GPU
// model, written out as a CMake package, a PyTorch extension or a reproducible bundle
// (docs/export.md). Every export writes MANIFEST.json and README.md naming what it holds.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/status.h"
#include "evaluator/evaluator.h"
#include "orchestrator/store.h"
#include "problems/problems.h"

namespace ws {

struct ExportOptions {
  std::vector<std::string> problem_globs;  // over problem names; empty with `all`
  bool all = false;
  std::string gpu;                  // GPU model; empty: the only one the store ranks on
  std::string out;                  // folder to write (created; must be empty or absent)
  std::string format;               // "cmake", "torch", "bundle"
  bool include_unverified = false;  // also the newest compiled kernel of unranked problems
  /// The warpsmith source tree whose base/, problems/ and evaluator/ hold the CPU references and
  /// the checker shipped with cmake packages (the package's test); empty: no test is shipped.
  std::string source_root;
};

/// One exported kernel: a problem, its parameter setting, the kernel and the evaluation that
/// ranked it (or, unverified, the newest one that compiled).
struct ExportItem {
  ProblemSpec spec;
  std::map<std::string, std::string> params;
  std::map<std::string, int64_t> knobs;  // every knob of the plan, fixed
  KernelRecord kernel;
  EvaluationRecord evaluation;
  bool verified = false;  // ranked: ok on the test, hidden and bench shapes
  Plan plan;
  std::string function;  // C++ function / torch op name
};

/// Picks what to export from the store. Errors: unknown problems, nothing to export, a GPU model
/// the store does not know, several GPU models without --gpu.
Result<std::vector<ExportItem>> SelectExport(Store& store, const std::vector<ProblemSpec>& problems,
                                             const ExportOptions& opts);

/// Writes the selected kernels in opts.format under opts.out.
Status WriteExport(const std::vector<ExportItem>& items, const ExportOptions& opts);

// ---- Shared by the generators and bundles -------------------------------------------------------

/// The -D defines the evaluator compiles a kernel with: WS_<PARAM>=<index>, WS_<PARAM>_<VALUE>=i
/// for every value, and every knob NAME=value.
std::map<std::string, std::string> KernelDefines(const ProblemSpec& spec,
                                                 const std::map<std::string, std::string>& params,
                                                 const std::map<std::string, int64_t>& knobs);

/// Translates an expression of the plan language (problems.h) to a C++ expression over variables
/// `v_<name>` and warpsmith::detail's checked helpers with an `Eval& e` in scope, keeping the
/// language's semantics: overflow and division by zero set e.error, && and || short-circuit.
Result<std::string> ExprToCpp(std::string_view expr);

/// The plan as JSON (the shape of the plan comment).
std::string PlanJson(const Plan& plan);

}  // namespace ws
