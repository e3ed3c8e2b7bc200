// CPU reference for swiglu_quantize_bwd: hpre [M, 2I] (gate || up) and dA [M, I] bf16 -> dhpre =
// [dgate || dup] [M, 2I] as bf16 (SwigluBackward of swiglu_quantize_fwd's reference), quantized
// to MXFP8 rowwise (q [M, 2I], scales [M, 2I/32]) and columnwise transposed (q_t [2I, M],
// scales_t [2I, M/32]).
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "problems/swiglu_quantize_fwd/reference.h"

namespace ws::mxfp8 {

/// hpre [m, 2i], da [m, i] -> dh [m, 2i] bf16: dh[r][c] = dgate, dh[r][i + c] = dup.
void SwigluBackwardRows(const uint16_t* hpre, const uint16_t* da, int64_t m, int64_t i,
                        SwigluVariant variant, uint16_t* dh);

/// The registered reference: symbols M, I; inputs hpre, da; outputs q, scales, q_t, scales_t.
Status SwigluQuantizeBwdReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                  const std::map<std::string, std::string>& params,
                                  const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::mxfp8
