// CPU reference for moe_permute_quantize: the rules of spec.json, exactly. x is raw bf16 bits, q
// E4M3 bytes, scales E8M0 bytes.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "base/status.h"
#include "problems/mxfp8_quantize_rowwise/reference.h"
#include "problems/problems.h"

namespace ws::moe {

/// The static row count of the permuted tensors: an upper bound of the padded total for any
/// routing, round_up(T*K + min(E, T*K) * (A - 1), A) (at most min(E, T*K) groups are non-empty,
/// each padded by at most A - 1 rows).
int64_t PaddedRowsBound(int64_t t, int64_t k, int64_t e, int64_t align);

/// The routing layout. Expert e's group is rows [offsets[e-1], offsets[e]) (offsets[-1] = 0) of
/// size round_up(count_e, align); its first count_e rows hold its slots in slot order (slot
/// s = t*K + j, ascending, so tokens ascending), the rest are padding. slot_row[s] is the row
/// holding slot s; row_slot[r] is the slot row r holds, -1 for padding and for every row from
/// offsets[E-1] to m_pad. Fails if an id is out of range or a row repeats an expert.
Status PermuteLayout(const int32_t* idx, int64_t t, int64_t k, int64_t e, int64_t align,
                     int64_t m_pad, int32_t* offsets, int32_t* slot_row, int32_t* row_slot);

/// Rows of x [T,H] gathered by row_slot and quantized rowwise to MXFP8 (mxfp8_quantize_rowwise's
/// rules); rows with row_slot -1 get q 0x00 and scale 0x00. H must be a multiple of 32.
void GatherQuantize(const uint16_t* x, const int32_t* row_slot, int64_t m_pad, int64_t k, int64_t h,
                    mxfp8::Rounding rounding, uint8_t* q, uint8_t* scales);

/// The registered CPU reference (problems/cpu_references.cc): tensors of spec.json in, out.
Status MoePermuteQuantizeReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                   const std::map<std::string, std::string>& params,
                                   const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::moe
