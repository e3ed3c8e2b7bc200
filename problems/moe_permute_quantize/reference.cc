#include "problems/moe_permute_quantize/reference.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "problems/reference_util.h"

namespace ws::moe {

int64_t PaddedRowsBound(int64_t t, int64_t k, int64_t e, int64_t align) {
  const int64_t slots = t * k;
  const int64_t bound = slots + std::min(e, slots) * (align - 1);
  return (bound + align - 1) / align * align;
}

Status PermuteLayout(const int32_t* idx, int64_t t, int64_t k, int64_t e, int64_t align,
                     int64_t m_pad, int32_t* offsets, int32_t* slot_row, int32_t* row_slot) {
  std::vector<int64_t> count(static_cast<size_t>(e), 0);
  for (int64_t row = 0; row < t; ++row) {
    for (int64_t j = 0; j < k; ++j) {
      const int32_t x = idx[row * k + j];
      if (x < 0 || x >= e)
        return Status::Error("idx[{}, {}] = {} is not an expert id in [0, {})", row, j, x, e);
      for (int64_t jj = 0; jj < j; ++jj) {
        if (idx[row * k + jj] == x)
          return Status::Error("idx row {} names expert {} twice", row, x);
      }
      ++count[x];
    }
  }
  std::vector<int64_t> next(static_cast<size_t>(e));
  int64_t end = 0;
  for (int64_t x = 0; x < e; ++x) {
    next[x] = end;
    end += (count[x] + align - 1) / align * align;
    offsets[x] = static_cast<int32_t>(end);
  }
  if (end > m_pad)
    return Status::Error("{} padded rows exceed the bound {}", end, m_pad);
  for (int64_t r = 0; r < m_pad; ++r) row_slot[r] = -1;
  // Slots in ascending order fill each group from its start.
  for (int64_t s = 0; s < t * k; ++s) {
    const int64_t r = next[idx[s]]++;
    slot_row[s] = static_cast<int32_t>(r);
    row_slot[r] = static_cast<int32_t>(s);
  }
  return Status::Ok();
}

void GatherQuantize(const uint16_t* x, const int32_t* row_slot, int64_t m_pad, int64_t k, int64_t h,
                    mxfp8::Rounding rounding, uint8_t* q, uint8_t* scales) {
  const int64_t blocks = h / 32;
  for (int64_t r = 0; r < m_pad; ++r) {
    uint8_t* qr = q + r * h;
    uint8_t* sr = scales + r * blocks;
    if (row_slot[r] < 0) {
      std::fill(qr, qr + h, uint8_t{0});
      std::fill(sr, sr + blocks, uint8_t{0});
      continue;
    }
    const uint16_t* xr = x + (row_slot[r] / k) * h;
    for (int64_t b = 0; b < blocks; ++b)
      mxfp8::QuantizeBlock(xr + b * 32, rounding, qr + b * 32, sr + b);
  }
}

Status MoePermuteQuantizeReference(const ProblemSpec& spec, const SymbolTable& symbols,
                                   const std::map<std::string, std::string>& params,
                                   const TensorMap& inputs, TensorMap& outputs) {
  WS_ASSIGN_OR_RETURN(const int64_t t, SymbolValue(symbols, "T"));
  WS_ASSIGN_OR_RETURN(const int64_t h, SymbolValue(symbols, "H"));
  WS_ASSIGN_OR_RETURN(const int64_t e, SymbolValue(symbols, "E"));
  WS_ASSIGN_OR_RETURN(const int64_t k, SymbolValue(symbols, "K"));
  WS_ASSIGN_OR_RETURN(const int64_t a, SymbolValue(symbols, "A"));
  if (t < 1 || h < 32 || h % 32 != 0 || k < 1 || k > e || a < 1)
    return Status::Error("T = {}, H = {}, E = {}, K = {}, A = {}: not a valid shape", t, h, e, k,
                         a);
  const std::string mode = ParamValue(spec, params, "rounding");
  mxfp8::Rounding rounding;
  if (mode == "rceil") {
    rounding = mxfp8::Rounding::kRceil;
  } else if (mode == "floor") {
    rounding = mxfp8::Rounding::kFloor;
  } else {
    return Status::Error("unknown rounding '{}'", mode);
  }
  const int64_t m_pad = PaddedRowsBound(t, k, e, a);
  const std::vector<int32_t> idx = TensorValues<int32_t>(inputs.find("idx")->second);
  const std::vector<uint16_t> x = TensorValues<uint16_t>(inputs.find("x")->second);
  std::vector<int32_t> offsets(static_cast<size_t>(e)), slot_row(static_cast<size_t>(t * k)),
      row_slot(static_cast<size_t>(m_pad));
  WS_RETURN_IF_ERROR(PermuteLayout(idx.data(), t, k, e, a, m_pad, offsets.data(), slot_row.data(),
                                   row_slot.data()));
  HostTensor& q = outputs.find("q")->second;
  HostTensor& scales = outputs.find("scales")->second;
  if (q.bytes.size() != static_cast<size_t>(m_pad * h))
    return Status::Error("q holds {} bytes, M_pad * H = {}", q.bytes.size(), m_pad * h);
  GatherQuantize(x.data(), row_slot.data(), m_pad, k, h, rounding, q.bytes.data(),
                 scales.bytes.data());
  StoreTensorValues(offsets, outputs.find("offsets")->second);
  StoreTensorValues(slot_row, outputs.find("slot_row")->second);
  StoreTensorValues(row_slot, outputs.find("row_slot")->second);
  return Status::Ok();
}

}  // namespace ws::moe
