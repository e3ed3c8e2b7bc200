// CPU reference for mxfp8_quantize_expert_weights: W [E,N,K] bf16 -> per expert the along-K copy
// (q_k [E,N,K], s_k [E,N,K/32], for the forward GEMM) and the along-N copy, transposed
// (q_n [E,K,N], s_n [E,K,N/32], for the dgrad GEMM): mxfp8_quantize_dual on each expert's [N,K].
#pragma once

#include <map>
#include <string>

#include "problems/mx.h"
#include "problems/problems.h"

namespace ws::mxfp8 {

/// The registered reference: symbols E, N, K; input w; outputs q_k, s_k, q_n, s_n.
Status QuantizeExpertWeightsReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                      const std::map<std::string, std::string>& params,
                                      const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::mxfp8
