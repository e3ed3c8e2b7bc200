// CPU reference for mxfp8_scales_to_blocked: plain rowwise E8M0 scales [M, C] (C = K/32) of
// expert-grouped rows -> the 128x4 blocked layout that Blackwell's block-scaled MMA (and cuBLAS)
// reads, each group padded to a multiple of 128 rows, pad bytes 0x00.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "problems/problems.h"

namespace ws::mxfp8 {

inline constexpr int kBlockedRows = 128;   // rows per tile
inline constexpr int kBlockedCols = 4;     // scale columns per tile
inline constexpr int kBlockedTile = 512;   // bytes per tile

/// Byte offset of scale (row, col) inside its 128x4 tile: rows r, r+32, r+64, r+96 share the
/// 16-byte line r % 32, in that order, 4 columns each.
int64_t OffsetInTile(int64_t row, int64_t col);

/// Byte offset in the blocked output of padded row p (rows counted over the groups' padded
/// extents) and column c, with c4 = ceil(C / 4) column tiles per 128-row stripe.
int64_t BlockedOffset(int64_t p, int64_t c, int64_t c4);

/// Checks group_offsets: non-decreasing, each a multiple of 32, within [0, m], the last == m.
Status CheckGroupOffsets(const int32_t* offsets, int64_t groups, int64_t m);

/// scales [m, c] row-major, offsets [groups] (cumulative end rows) -> out (out_bytes bytes): every
/// group's rows relaid into 128x4 tiles starting at the group's padded stripe, the rest 0x00.
/// Needs sum of round_up(group size, 128) * round_up(c, 4) <= out_bytes.
Status ScalesToBlocked(const uint8_t* scales, int64_t m, int64_t c, const int32_t* offsets,
                       int64_t groups, uint8_t* out, int64_t out_bytes);

/// The registered reference: symbols M, K, G; inputs scales, group_offsets; output
/// scales_blocked.
Status ScalesToBlockedReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs);

}  // namespace ws::mxfp8
