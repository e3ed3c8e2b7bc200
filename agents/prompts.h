// What the LLM roles are told: the rules of the candidate format, a problem (without its hidden
// shapes), the parent and inspirations, and the worker's tools.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "agents/agents.h"
#include "problems/problems.h"

namespace ws {

/// A kernel shown to a worker beside its parent.
struct KernelExample {
  std::string label;  // "parent", "inspiration 1"
  std::string source;
  std::string summary;  // "12.3 us geomean, 0.81 of speed-of-light, knobs CHUNKS=2"
  /// The device-library headers it includes, path -> content (LibraryClosure, today's version).
  std::map<std::string, std::string> library_headers;
};

/// The worker's standing rules: the candidate format, what is judged, the tools, how to answer.
std::string WorkerSystemPrompt();

/// One attempt's task: the problem (description, tensors, test and bench shapes; the number of
/// hidden shapes only), the parameters, the parent and inspirations, and the leaderboard.
std::string WorkerTaskPrompt(const ProblemSpec& spec,
                             const std::map<std::string, std::string>& params,
                             const std::vector<KernelExample>& kernels,
                             const std::string& leaderboard);

/// compile, check, time, resource_report, sass_summary, submit; each takes {source, knobs?}.
std::vector<ToolSpec> WorkerToolSpecs();

/// The reviewer's rules and its answer format ("VERDICT: ok" or "VERDICT: flag: <reason>").
std::string ReviewerSystemPrompt();
std::string ReviewerTaskPrompt(const ProblemSpec& spec, const std::string& parent_source,
                               const std::string& candidate_source);

}  // namespace ws
