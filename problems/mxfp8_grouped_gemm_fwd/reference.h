// CPU reference for mxfp8_grouped_gemm_fwd (and, with N and K swapped in role, _dgrad): MXFP8
// operands, E4M3 data with one E8M0 scale per 32 consecutive elements along the contraction
// dimension. Each element decodes exactly to e4m3(q) * 2^(S-127), so summing the decoded products
// in double is the MX product (each 32-block's partial sum times both scales) with no rounding
// until the bf16 output.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "problems/problems.h"

namespace ws::gemm {

/// q [rows, cols] E4M3 with scales [rows, cols/32] E8M0 (cols % 32 == 0) -> exact doubles.
std::vector<double> DequantizeMxRows(const uint8_t* q, const uint8_t* scales, int64_t rows,
                                     int64_t cols);

/// a [M,K] + a_scales [M,K/32]; b [E,N,K] + b_scales [E,N,K/32]; offs [E] END offsets ->
/// c [M,N] bf16 bits, c[r,n] = bf16_rne(sum_k a[r,k] * b[g(r),n,k]).
Status MxGroupedGemmFwd(const uint8_t* a, const uint8_t* a_scales, const uint8_t* b,
                        const uint8_t* b_scales, const std::vector<int32_t>& offs, int64_t m,
                        int64_t n, int64_t k, uint16_t* c);

/// The registered reference ("mxfp8_grouped_gemm_fwd"): a, a_scales, b, b_scales, offs -> c.
Status MxGroupedGemmFwdReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, std::string>& params,
                                 const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm
