// CPU reference for bf16_gemm: D[m,n] = bf16_rne(sum_k A[m,k] * B[n,k]), the sum exact in double.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "problems/problems.h"

namespace ws::gemm {

/// a [M,K], b [N,K], d [M,N]: row-major bf16 bit patterns.
void Bf16Gemm(const uint16_t* a, const uint16_t* b, int64_t m, int64_t n, int64_t k, uint16_t* d);

/// The registered reference ("bf16_gemm"): inputs a, b; output d.
Status Bf16GemmReference(const ProblemSpec& spec, const SymbolTable& symbols,
                         const std::map<std::string, std::string>& params,
                         const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm
