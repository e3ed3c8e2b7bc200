// CPU reference for moe_decode_fused: a small batch of tokens through their top-k experts'
// SwiGLU MLPs, weighted and summed. For token t and its j-th routed expert e = topk_ids[t,j]:
//   g = w13[e, 0:I, :] . x[t],  u = w13[e, I:2I, :] . x[t],  h = silu(g) * u,
//   silu(g) = g / (1 + e^-g)
//   y[t] += topk_weights[t,j] * (w2[e] . h)
// All in double from the bf16/f32 inputs, no intermediate rounding; y rounded once to bf16.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "problems/problems.h"

namespace ws::gemm {

struct MoeDecodeShape {
  int64_t t = 0, h = 0, i = 0, e = 0, topk = 0;
};

/// x [T,H] bf16, topk_ids [T,TOPK] i32 (in [0,E)), topk_weights [T,TOPK] f32, w13 [E,2I,H] bf16,
/// w2 [E,H,I] bf16 -> y [T,H] bf16. An id outside [0,E) is an error.
Status MoeDecodeFused(const MoeDecodeShape& s, const uint16_t* x, const int32_t* topk_ids,
                      const float* topk_weights, const uint16_t* w13, const uint16_t* w2,
                      uint16_t* y);

/// The registered reference ("moe_decode_fused").
Status MoeDecodeFusedReference(const ProblemSpec& spec, const SymbolTable& symbols,
                               const std::map<std::string, std::string>& params,
                               const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::gemm
