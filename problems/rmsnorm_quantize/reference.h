// CPU reference for rmsnorm_quantize: x [M,H] bf16, weight [H] bf16 -> y = RMSNorm(x) * weight
// as bf16 [M,H] and its rowwise MXFP8 (q [M,H], scales [M,H/32]).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "problems/mx.h"
#include "problems/problems.h"

namespace ws::mxfp8 {

inline constexpr float kRmsNormEps = 1e-6f;

/// r = fp32(1 / sqrt(mean(x^2) + eps)), the mean and the root in double (products exact,
/// summed in index order).
float RmsNormFactor(const uint16_t* x, int64_t h);

/// y[i] = bf16(w[i] * bf16(x[i] * r)): the fp32 product x * r rounded to bf16, then times the
/// weight (exact in fp32) rounded to bf16, as the Hugging Face RMSNorm of these models does.
void RmsNormRow(const uint16_t* x, const uint16_t* w, int64_t h, uint16_t* y);

/// x [m,h], w [h] -> y [m,h] bf16, q [m,h], scales [m,h/32] (rowwise MXFP8 of y).
void RmsNormQuantize(const uint16_t* x, const uint16_t* w, int64_t m, int64_t h,
                     Rounding rounding, uint16_t* y, uint8_t* q, uint8_t* scales);

/// The registered reference: symbols M, H; inputs x, weight; outputs y, q, scales.
Status RmsNormQuantizeReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::mxfp8
