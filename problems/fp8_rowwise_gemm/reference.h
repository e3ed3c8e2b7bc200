// CPU reference for fp8_rowwise_gemm: D[m,n] = bf16_rne(a_scale[m] * b_scale[n] *
// sum_k e4m3(A[m,k]) * e4m3(B[n,k])), everything exact in double until the one rounding.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "problems/problems.h"

namespace ws::gemm {

/// a [M,K], b [N,K] E4M3 bytes; a_scale [M], b_scale [N] f32; d [M,N] bf16 bits.
void Fp8RowwiseGemm(const uint8_t* a, const uint8_t* b, const float* a_scale,
                    const float* b_scale, int64_t m, int64_t n, int64_t k, uint16_t* d);

/// The registered reference ("fp8_rowwise_gemm"): inputs a, b, a_scale, b_scale; output d.
Status Fp8RowwiseGemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
                               const std::map<std::string, std::string>& params,
                               const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm
