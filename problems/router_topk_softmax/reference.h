// CPU reference for router_topk_softmax, and the fp64 routing math shared with
// router_topk_sigmoid_grouped and the router_topk checker (evaluator/checkers/router_topk.cc).
//
// Every floating-point step is one IEEE double operation in a fixed order (init.h's ws_d* helpers),
// so the GPU references, which issue the same operations as __dadd_rn / __dmul_rn / __ddiv_rn,
// produce the same bits: the references agree bit for bit, while candidates are checked within
// the problems' tolerances.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "problems/problems.h"

namespace ws::router {

/// e^x in fp64 from + - * / only (Cody-Waite reduction by ln 2, degree-13 Taylor polynomial),
/// within a few ulps of the true value for |x| < 708; 0 below -746, +Inf above 709.8, NaN kept.
double Exp(double x);

/// 1 / (1 + e^-x) for x >= 0, e^x / (1 + e^x) for x < 0 (no overflow on either side).
double Sigmoid(double x);

enum class SoftmaxWeights { kRenormalize = 0, kSoftmax = 1 };  // the spec's "weights" values

/// One row: logits[E] -> idx[K] (logit descending, equal logits: lower expert id first) and w[K].
/// kRenormalize: w_j = e^(l_j - m) / sum over the K chosen of e^(l - m) (m the row max, the sum in
/// slot order); kSoftmax: the full softmax probability, the sum over all E in expert order.
void TopkSoftmaxRow(const float* logits, int64_t e, int64_t k, SoftmaxWeights weights, int32_t* idx,
                    float* w);

/// logits [T,E] -> idx [T,K], w [T,K], counts [E] (how many rows chose each expert).
void TopkSoftmax(const float* logits, int64_t t, int64_t e, int64_t k, SoftmaxWeights weights,
                 int32_t* idx, float* w, int32_t* counts);

/// The registered CPU reference (problems/cpu_references.cc): tensors of spec.json in, out.
Status RouterTopkSoftmaxReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::router
