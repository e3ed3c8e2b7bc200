// The rows a sampled write-back keeps (docs/runner-protocol.md, "sample"): one function the
// runner (which writes the rows) and the checker (which reads them back) share.
#pragma once

#include <cstdint>
#include <vector>

#include "problems/init.h"

namespace ws::runner {

/// The rows `SampleJob` keeps of an output of `rows` rows, ascending: row r where a keyed mix of
/// r is 0 mod `every`; at least one row (a keyed pick) when the output has any. Shared by the
/// runner, which writes those rows back, and the orchestrator, which checks them.
inline std::vector<int64_t> SampledRows(uint64_t key, int64_t rows, int every) {
  std::vector<int64_t> out;
  const uint64_t k = ws_mix64(key ^ 0x5DEECE66DA3B9F21ull);
  for (int64_t r = 0; r < rows; ++r) {
    if (ws_mix64(k ^ ws_mix64(static_cast<uint64_t>(r))) % static_cast<uint64_t>(every) == 0)
      out.push_back(r);
  }
  if (out.empty() && rows > 0)
    out.push_back(static_cast<int64_t>(k % static_cast<uint64_t>(rows)));
  return out;
}

}  // namespace ws::runner
