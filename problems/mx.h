// Shared host code for the MXFP8 problems' CPU references: the block quantizer of
// mxfp8_quantize_rowwise applied along either axis of a bf16 matrix, bf16 conversions, and the
// plumbing every reference adapter needs (symbols, the rounding parameter, bf16 tensors as words).
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "problems/mxfp8_dequantize/reference.h"
#include "problems/mxfp8_quantize_rowwise/reference.h"
#include "problems/problems.h"
#include "problems/reference_util.h"

namespace ws::mxfp8 {

inline constexpr int kMxBlock = 32;  // elements per E8M0 scale

/// bf16 bits -> fp32 (exact).
float Bf16Bits(uint16_t b);

/// x [rows, cols] row-major -> q_t [cols, rows], scales_t [cols, rows/32]: block b of column c is
/// x[32b .. 32b+31][c], quantized by QuantizeBlock and stored K-major (row c of q_t holds column c
/// of x). rows must be a multiple of 32.
void QuantizeColwiseTransposed(const uint16_t* x, int64_t rows, int64_t cols, Rounding rounding,
                               uint8_t* q_t, uint8_t* scales_t);

// ---- Adapter plumbing ---------------------------------------------------------------------------

/// The "rounding" parameter (rceil | floor): the chosen value, else the spec's default.
Result<Rounding> RoundingParam(const ProblemSpec& spec,
                               const std::map<std::string, std::string>& params);

/// A bf16 tensor's elements as words (the tensor's bytes are little-endian raw bytes).
std::vector<uint16_t> Bf16Words(const HostTensor& t);

/// Stores words into a bf16 tensor's bytes, little-endian.
void StoreBf16Words(const std::vector<uint16_t>& words, HostTensor& t);

/// The named tensor of `map`, or an error naming it.
Result<const HostTensor*> FindTensor(const TensorMap& map, std::string_view name);
Result<HostTensor*> FindTensor(TensorMap& map, std::string_view name);

}  // namespace ws::mxfp8
