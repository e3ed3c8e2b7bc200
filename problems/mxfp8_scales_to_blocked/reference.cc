#include "problems/mxfp8_scales_to_blocked/reference.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "problems/mx.h"

namespace ws::mxfp8 {

int64_t OffsetInTile(int64_t row, int64_t col) {
  return (row % 32) * 16 + ((row % kBlockedRows) / 32) * 4 + col % kBlockedCols;
}

int64_t BlockedOffset(int64_t p, int64_t c, int64_t c4) {
  const int64_t tile = (p / kBlockedRows) * c4 + c / kBlockedCols;
  return tile * kBlockedTile + OffsetInTile(p, c);
}

Status CheckGroupOffsets(const int32_t* offsets, int64_t groups, int64_t m) {
  int64_t prev = 0;
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t end = offsets[g];
    if (end < prev || end > m || end % kMxBlock != 0) {
      return Status::Error("group_offsets[{}] = {}: offsets must be non-decreasing multiples of "
                           "32 within [0, {}]",
                           g, end, m);
    }
    prev = end;
  }
  if (groups > 0 && prev != m)
    return Status::Error("the last group offset is {}, not M = {}", prev, m);
  return Status::Ok();
}

Status ScalesToBlocked(const uint8_t* scales, int64_t m, int64_t c, const int32_t* offsets,
                       int64_t groups, uint8_t* out, int64_t out_bytes) {
  WS_RETURN_IF_ERROR(CheckGroupOffsets(offsets, groups, m));
  const int64_t c4 = (c + kBlockedCols - 1) / kBlockedCols;
  std::memset(out, 0, static_cast<size_t>(out_bytes));
  int64_t start = 0, padded = 0;  // input row, padded output row of the group
  for (int64_t g = 0; g < groups; ++g) {
    const int64_t rows = offsets[g] - start;
    const int64_t padded_rows = (rows + kBlockedRows - 1) / kBlockedRows * kBlockedRows;
    if ((padded + padded_rows) * c4 * kBlockedCols > out_bytes)
      return Status::Error("group {} ends past the output's {} bytes", g, out_bytes);
    for (int64_t r = 0; r < rows; ++r) {
      for (int64_t col = 0; col < c; ++col) {
        out[BlockedOffset(padded + r, col, c4)] = scales[(start + r) * c + col];
      }
    }
    start += rows;
    padded += padded_rows;
  }
  return Status::Ok();
}

Status ScalesToBlockedReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                const std::map<std::string, std::string>& params,
                                const TensorMap& inputs, TensorMap& outputs) {
  (void)spec;
  (void)params;
  WS_ASSIGN_OR_RETURN(const int64_t m, SymbolValue(symbols, "M"));
  WS_ASSIGN_OR_RETURN(const int64_t k, SymbolValue(symbols, "K"));
  WS_ASSIGN_OR_RETURN(const int64_t groups, SymbolValue(symbols, "G"));
  if (k % kMxBlock != 0)
    return Status::Error("K = {} is not a multiple of 32", k);
  WS_ASSIGN_OR_RETURN(const HostTensor* scales, FindTensor(inputs, "scales"));
  WS_ASSIGN_OR_RETURN(const HostTensor* offs, FindTensor(inputs, "group_offsets"));
  WS_ASSIGN_OR_RETURN(HostTensor* out, FindTensor(outputs, "scales_blocked"));
  if (offs->bytes.size() != static_cast<size_t>(groups) * 4)
    return Status::Error("group_offsets holds {} bytes, G = {} needs {}", offs->bytes.size(),
                         groups, groups * 4);
  std::vector<int32_t> offsets(static_cast<size_t>(groups));
  for (int64_t g = 0; g < groups; ++g) {
    const uint8_t* b = offs->bytes.data() + 4 * g;
    offsets[g] = static_cast<int32_t>(static_cast<uint32_t>(b[0]) | (uint32_t{b[1]} << 8) |
                                      (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24));
  }
  return ScalesToBlocked(scales->bytes.data(), m, k / kMxBlock, offsets.data(), groups,
                         out->bytes.data(), static_cast<int64_t>(out->bytes.size()));
}

}  // namespace ws::mxfp8
