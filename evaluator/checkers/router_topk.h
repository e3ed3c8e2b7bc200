// The router_topk custom checker, for router_topk_softmax and router_topk_sigmoid_grouped
// (tolerance {"kind": "custom", "checker": "router_topk"} on idx, w and counts; the rules are in
// those specs' descriptions). It recomputes every score in fp64 from the inputs (logits, bias), so
// it judges the candidate's own choice rather than comparing with the reference's: a choice
// between near-tied experts (or groups) may go either way, and the weights and counts must then
// follow the choice actually made.
#pragma once

#include <map>
#include <string>

#include "problems/problems.h"

namespace ws {

/// Checks idx, w and counts in `got` against the inputs. Options (tolerance "options"):
/// tie_rtol (1e-6), w_rtol (1e-5), w_atol (1e-12). Returns "" on a pass, else what failed (the
/// first rows, with their coordinates).
std::string CheckRouterTopk(const ProblemSpec& spec, const SymbolTable& symbols,
                            const std::map<std::string, std::string>& params,
                            const std::map<std::string, double>& options, const TensorMap& inputs,
                            const TensorMap& got);

}  // namespace ws
