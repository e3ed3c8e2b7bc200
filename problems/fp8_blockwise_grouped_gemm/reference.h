// CPU reference for fp8_blockwise_grouped_gemm (the DeepSeek-V3 / DeepGEMM recipe): E4M3 operands
// with fp32 scales, activations per 1x128 (one scale per row and 128-column block of K, stored
// MN-major as a_scales [K/128, M]), weights per 128x128 block (b_scales [E, N/128, K/128]).
// c[r,n] = bf16_rne(sum_j a_scales[j,r] * b_scales[g,n/128,j] * sum_{k in block j}
// e4m3(a[r,k]) * e4m3(b[g,n,k])): every product exact in double, one rounding at the output.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "problems/problems.h"

namespace ws::gemm {

/// a [M,K] + a_scales [K/128, M]; b [E,N,K] + b_scales [E,N/128,K/128]; offs [E] -> c [M,N].
/// N and K multiples of 128.
Status Fp8BlockwiseGroupedGemm(const uint8_t* a, const float* a_scales, const uint8_t* b,
                               const float* b_scales, const std::vector<int32_t>& offs,
                               int64_t m, int64_t n, int64_t k, uint16_t* c);

/// The registered reference ("fp8_blockwise_grouped_gemm"): a, a_scales, b, b_scales, offs -> c.
Status Fp8BlockwiseGroupedGemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                        const std::map<std::string, std::string>& params,
                                        const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm
