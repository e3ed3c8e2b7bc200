// warpsmith device library: the launch order of the transposing quantizers' tiles
// (kernels/mxfp8_quantize_colwise, _dual, _expert_weights, swiglu_quantize_fwd and _bwd): which
// (m, k) tile a CTA takes. Plain integer code, so tests/tile_order_test.cc runs it on the host.
#pragma once

namespace ws {
namespace mx {

/// The (m, k) tile of launch index bid over an m_tiles x k_tiles grid. kGroupK > 0: groups of
/// kGroupK k tiles, k fastest inside a group, then m, so launch neighbours are k neighbours
/// (long runs of each row) and m neighbours kGroupK apart; the last group may be narrower.
/// kGroupK 0: m fastest (kKFastest false) or k fastest.
template <int kGroupK, bool kKFastest, typename Int>
__device__ __forceinline__ void grouped_tile(Int bid, Int m_tiles, Int k_tiles, Int& tm, Int& tk) {
  static_assert(kGroupK >= 0, "kGroupK: 0 (kKFastest decides) or k tiles per group");
  if constexpr (kGroupK > 0) {
    const Int per_group = m_tiles * kGroupK;
    const Int group = bid / per_group, in_group = bid % per_group;
    const Int width = min(static_cast<Int>(kGroupK), k_tiles - group * kGroupK);
    tm = in_group / width;
    tk = group * kGroupK + in_group % width;
  } else if constexpr (kKFastest) {
    tk = bid % k_tiles;
    tm = bid / k_tiles;
  } else {
    tm = bid % m_tiles;
    tk = bid / m_tiles;
  }
}

/// grouped_tile in kNarrow ? 32-bit : 64-bit arithmetic (CTA indices and tile counts fit 32 bits;
/// the 64-bit form adds a width test and wider divisions ahead of the first load).
template <int kGroupK, bool kKFastest, bool kNarrow>
__device__ __forceinline__ void tile_of(long long bid, long long m_tiles, long long k_tiles,
                                        long long& tm, long long& tk) {
  if constexpr (kNarrow) {
    unsigned m, k;
    grouped_tile<kGroupK, kKFastest>(static_cast<unsigned>(bid), static_cast<unsigned>(m_tiles),
                                     static_cast<unsigned>(k_tiles), m, k);
    tm = m;
    tk = k;
  } else {
    grouped_tile<kGroupK, kKFastest>(bid, m_tiles, k_tiles, tm, tk);
  }
}

}  // namespace mx
}  // namespace ws
