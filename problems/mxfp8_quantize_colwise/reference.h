// CPU reference for mxfp8_quantize_colwise: x [M,K] bf16 -> q_t [K,M] E4M3, scales_t [K,M/32]
// E8M0, blocks of 32 consecutive rows of one column, by mxfp8_quantize_rowwise's block rules.
#pragma once

#include <map>
#include <string>

#include "problems/mx.h"
#include "problems/problems.h"

namespace ws::mxfp8 {

/// The registered reference: symbols M, K; input x; outputs q_t, scales_t; param rounding.
Status QuantizeColwiseReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::mxfp8
