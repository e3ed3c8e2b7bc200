// CPU reference for mxfp8_quantize_dual: x [M,K] bf16 -> the rowwise outputs of
// mxfp8_quantize_rowwise (q, scales) and the transposed colwise outputs of mxfp8_quantize_colwise
// (q_t, scales_t), from one read of x.
#pragma once

#include <map>
#include <string>

#include "problems/mx.h"
#include "problems/problems.h"

namespace ws::mxfp8 {

/// x [m,k] -> q [m,k], scales [m,k/32], q_t [k,m], scales_t [k,m/32]; m, k multiples of 32.
void QuantizeDual(const uint16_t* x, int64_t m, int64_t k, Rounding rounding, uint8_t* q,
                  uint8_t* scales, uint8_t* q_t, uint8_t* scales_t);

/// The registered reference: symbols M, K; input x; outputs q, scales, q_t, scales_t.
Status QuantizeDualReference(const ProblemSpec& spec, const SymbolTable& symbols,
                             const std::map<std::string, std::string>& params,
                             const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::mxfp8
