// warpsmith device library: persistent tile orders of the GEMMs. A persistent CTA takes linear
// tiles blockIdx.x, +gridDim.x, ...; every role of the CTA (producer, MMA, epilogue) walks the same
// sequence with its own copy of the state, so no role waits for another to learn its next tile.
#pragma once

namespace ws {

/// Band order: linear tile r of a tiles_m x tiles_n grid, taken in bands of kGroupM row-tiles
/// that sweep the columns together (concurrent CTAs share the band's A rows and each column's B),
/// column-major inside a band; the last band may be shorter. kGroupM = 1 is row-major order.
template <int kGroupM>
__device__ __forceinline__ void band_tile(int r, int tiles_m, int tiles_n, int& tm, int& tn) {
  const int per_band = kGroupM * tiles_n;
  const int first_m = (r / per_band) * kGroupM;
  const int rows = min(kGroupM, tiles_m - first_m);
  const int q = r % per_band;
  tm = first_m + q % rows;
  tn = q / rows;
}

/// The three grouped-GEMM forms of an MoE layer (offs = cumulative END offsets of E groups of
/// token rows; group g owns rows [offs[g-1], offs[g]) and uses expert g):
///  kFwd:   out[r, n] = sum_k a[r, k] b[g, n, k]   rows: the group's tokens, cols N, depth K
///  kDgrad: out[r, k] = sum_n a[r, n] b[g, n, k]   rows: the group's tokens, cols K, depth N
///  kWgrad: out[g, n, k] = sum_{r in g} a[r, n] b[r, k]   rows N, cols K, depth: the group's tokens
///  kFwdT:  kFwd computed transposed, out[r, n]^T tile by tile: rows N (expert g's b rows), cols
///          the group's tokens, depth K (the MXFP8 GEMM's weights-in-registers strategy)
enum GroupedForm { kFwd = 0, kDgrad = 1, kWgrad = 2, kFwdT = 3 };

/// The group ends a cursor reads: offs copied once into offs_smem by the CTA's kThreads threads
/// when E <= kMaxE, else offs itself (global reads, L2-resident, walked forward). The copy is
/// published by the CTA barrier that follows the barrier inits.
template <int kMaxE, int kThreads>
__device__ __forceinline__ const int* stage_offs(int* offs_smem, const int* offs, int E) {
  for (int i = threadIdx.x; i < E && i < kMaxE; i += kThreads) offs_smem[i] = offs[i];
  return E <= kMaxE ? offs_smem : offs;
}

/// One output tile of a grouped GEMM: group g owns token rows [s, e); tile (tm, tn) of its output.
template <int kForm>
struct GroupTile {
  int g, s, e, tm, tn;
  /// Contraction length: K (fwd), N (dgrad), the group's rows (wgrad).
  __device__ int depth(int N, int K) const {
    return kForm == kFwd || kForm == kFwdT ? K : kForm == kDgrad ? N : e - s;
  }
};

/// Output tile origin and bounds: rows [row0, row0 + rows_left) of out, columns < ncols, ld ncols.
struct OutTile {
  long long row0;
  int rows_left, col0, ncols;
};

/// Walks the groups forward as the linear tile index grows (each role keeps its own cursor), so
/// mapping a tile costs O(1) amortized; inside a group, tiles go in band order (band_tile).
/// Only the walk's position lives in registers; the problem sizes are re-read from the params.
/// Empty groups own no tiles in fwd/dgrad/fwdT; in wgrad every group owns ceil(N/kBM) x
/// ceil(K/kBN) tiles (an empty group's are zeros of depth 0). kFwdT: ceil(N/kBM) x ceil(len/kBN).
template <int kForm, int kBM, int kBN, int kGroupM>
struct GroupCursor {
  int g = -1, base = 0, count = 0, s = 0, e = 0;

  __device__ static int tiles_n(int N, int K) { return ((kForm == kFwd ? N : K) + kBN - 1) / kBN; }
  /// Tile t (t never decreases between calls); false once t is past the last group, and at
  /// every later call (a walk that looks ahead may ask again: the ping-pong consumers). A group's
  /// tiles: `fixed` along the side N or K sets (kFwdT: its b rows; else its column tiles) times
  /// those along the side its length sets (kWgrad: N's row tiles, fixed too).
  __device__ bool seek(int t, const int* offs, int E, int N, int K, GroupTile<kForm>& tile) {
    constexpr bool kTokenCols = kForm == kFwdT;  // the group's tokens are the tile columns
    // Past the end, base + count no longer bounds the tiles (base has taken the last group's
    // count): without this a later t below it would map into a group that does not exist.
    if (g >= E) return false;
    const int fixed = kTokenCols ? (N + kBM - 1) / kBM : tiles_n(N, K);
    while (t >= base + count) {
      base += count;
      if (++g >= E) return false;
      s = g == 0 ? 0 : offs[g - 1];
      e = offs[g];
      count = (kTokenCols ? (e - s + kBN - 1) / kBN
                          : ((kForm == kWgrad ? N : e - s) + kBM - 1) / kBM) *
              fixed;
    }
    const int other = count / fixed;
    int tm, tn;
    band_tile<kGroupM>(t - base, kTokenCols ? fixed : other, kTokenCols ? other : fixed, tm, tn);
    tile = GroupTile<kForm>{g, s, e, tm, tn};
    return true;
  }
  /// Where tile's output lies in out (row-major, ld = the output's width). kFwdT: the tile's
  /// transpose, tokens [row0, row0 + rows_left) and columns col0 + (the tile's rows) < ncols.
  __device__ static OutTile out_tile(const GroupTile<kForm>& tl, int N, int K) {
    OutTile o;
    if (kForm == kFwdT) {
      o.row0 = tl.s + tl.tn * kBN;
      o.rows_left = tl.e - tl.s - tl.tn * kBN;
      o.col0 = tl.tm * kBM;
      o.ncols = N;
      return o;
    }
    if (kForm == kWgrad) {
      o.row0 = static_cast<long long>(tl.g) * N + tl.tm * kBM;
      o.rows_left = N - tl.tm * kBM;
    } else {
      o.row0 = tl.s + tl.tm * kBM;
      o.rows_left = tl.e - tl.s - tl.tm * kBM;
    }
    o.col0 = tl.tn * kBN;
    o.ncols = kForm == kFwd ? N : K;
    return o;
  }
};

}  // namespace ws
