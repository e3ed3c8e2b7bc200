// CPU reference for router_topk_sigmoid_grouped (DeepSeek-V3 / Kimi K2 routing): the rules of
// spec.json in fp64, with the operation order fixed so that the GPU reference gives the same bits
// (see problems/router_topk_softmax/reference.h).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "problems/problems.h"

namespace ws::router {

struct GroupedConfig {
  int64_t experts = 0;         // E
  int64_t k = 0;               // K experts per row
  int64_t groups = 1;          // NG: E / NG experts per group
  int64_t keep_groups = 1;     // TG groups kept per row
  int64_t scale_milli = 1000;  // routed scaling factor * 1000
};

/// The selection score of expert i: sigmoid(logit) + bias, in fp64.
double BiasedScore(float logit, float bias);

/// The group scores of one row: for each of the NG groups, the sum of its two largest biased
/// scores (the larger plus the smaller; a group of one expert: that score).
void GroupScores(const double* biased, const GroupedConfig& c, double* group_scores);

/// One row: logits[E], bias[E] -> idx[K], w[K]. Groups are ranked by score descending, equal
/// scores to the lower group id; the TG best are kept. The K experts of the kept groups with the
/// largest biased scores are chosen in descending order, equal scores to the lower expert id.
/// w_j = (sigmoid(l_j) / sum of the K chosen sigmoid(l), summed in slot order) * scale_milli /
/// 1000.
void TopkSigmoidGroupedRow(const float* logits, const float* bias, const GroupedConfig& c,
                           int32_t* idx, float* w);

/// logits [T,E], bias [E] -> idx [T,K], w [T,K], counts [E].
void TopkSigmoidGrouped(const float* logits, const float* bias, int64_t t, const GroupedConfig& c,
                        int32_t* idx, float* w, int32_t* counts);

/// The registered CPU reference (problems/cpu_references.cc): tensors of spec.json in, out.
Status RouterTopkSigmoidGroupedReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                         const std::map<std::string, std::string>& params,
                                         const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::router
