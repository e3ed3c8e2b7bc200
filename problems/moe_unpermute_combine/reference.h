// CPU reference for moe_unpermute_combine: the rules of spec.json, exactly. bf16 tensors are raw
// uint16 bit patterns.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "problems/problems.h"

namespace ws::moe {

/// One output element: acc = 0 (fp32); acc = fmaf(w[j], float(rows[j]), acc) for j = 0..K-1 in
/// order; acc = acc + float(shared) when `shared` is given; the result is acc rounded once to bf16
/// (round to nearest even; NaN -> 0x7FC0).
uint16_t CombineElement(const float* w, const uint16_t* rows, int64_t k, const uint16_t* shared);

/// y [T,H] from y_p [M_pad,H], w [T,K] and slot_row [T,K] (rows of y_p, each in [0, M_pad)), plus
/// y_shared [T,H] when not null.
void UnpermuteCombine(const uint16_t* y_p, const float* w, const int32_t* slot_row,
                      const uint16_t* y_shared, int64_t t, int64_t k, int64_t h, uint16_t* y);

/// The registered CPU reference (problems/cpu_references.cc): tensors of spec.json in, out.
Status MoeUnpermuteCombineReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                    const std::map<std::string, std::string>& params,
                                    const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::moe
