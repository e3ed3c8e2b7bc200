// CPU reference for mxfp8_grouped_gemm_dgrad: da[r,k] = bf16_rne(sum_n dc[r,n] * bt[g(r),k,n]),
// both operands MXFP8 along N (the contraction), bt the N-contiguous ("K-major" for wgmma) copy
// of the expert weights. The forward's arithmetic with N and K swapped in role.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "problems/problems.h"

namespace ws::gemm {

/// dc [M,N] + dc_scales [M,N/32]; bt [E,K,N] + bt_scales [E,K,N/32]; offs [E] -> da [M,K].
Status MxGroupedGemmDgrad(const uint8_t* dc, const uint8_t* dc_scales, const uint8_t* bt,
                          const uint8_t* bt_scales, const std::vector<int32_t>& offs, int64_t m,
                          int64_t n, int64_t k, uint16_t* da);

/// The registered reference ("mxfp8_grouped_gemm_dgrad"): dc, dc_scales, bt, bt_scales, offs ->
/// da.
Status MxGroupedGemmDgradReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                   const std::map<std::string, std::string>& params,
                                   const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm
