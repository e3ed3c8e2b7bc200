// CPU reference for mxfp8_grouped_gemm_wgrad: db[g,n,k] = f32_rne(sum_{r in group g}
// dct[n,r] * xt[k,r]), both operands MXFP8 along the tokens r (the contraction), stored
// transposed (token-contiguous, "K-major" for wgmma): dct [N,M] with scales [N,M/32], xt [K,M]
// with scales [K,M/32]. Group offsets are multiples of 32, so no scale block straddles two
// groups. An empty group's db[g] is exactly 0.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "problems/problems.h"

namespace ws::gemm {

/// dct [N,M] + dct_scales [N,M/32]; xt [K,M] + xt_scales [K,M/32]; offs [E] (multiples of 32) ->
/// db [E,N,K] f32.
Status MxGroupedGemmWgrad(const uint8_t* dct, const uint8_t* dct_scales, const uint8_t* xt,
                          const uint8_t* xt_scales, const std::vector<int32_t>& offs, int64_t m,
                          int64_t n, int64_t k, float* db);

/// The registered reference ("mxfp8_grouped_gemm_wgrad"): dct, dct_scales, xt, xt_scales, offs
/// -> db.
Status MxGroupedGemmWgradReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                   const std::map<std::string, std::string>& params,
                                   const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm
