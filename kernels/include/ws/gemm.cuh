// warpsmith device library: pieces the TMA + mbarrier GEMMs share (bf16_gemm, fp8_rowwise_gemm,
// bf16_grouped_gemm, fp8_blockwise_grouped_gemm): bf16 output packing, and for the dense GEMMs
// the producer of the band-ordered ring and the sm_100a MMA loop over it. A kernel's Config
// supplies the tile sizes and the ring layout (kBM, kBN, kBK, kStages, kABytes, kBBytes, ...).
#pragma once

#include <cuda_bf16.h>

#include "ws/cluster.cuh"
#include "ws/ptx_sm90.cuh"
#include "ws/tcgen05.cuh"
#include "ws/tile_scheduler.cuh"

namespace ws {

/// Two fp32 -> packed bf16 (RNE), lo in the low half.
__device__ __forceinline__ uint32_t pack_bf16(float lo, float hi) {
  const __nv_bfloat162 v = __floats2bfloat162_rn(lo, hi);
  return *reinterpret_cast<const uint32_t*>(&v);
}

/// Eight fp32 -> eight bf16 (RNE) in one 16-byte piece, f[0] lowest.
__device__ __forceinline__ uint4 pack_bf16x8(const float* f) {
  uint4 v;
  v.x = pack_bf16(f[0], f[1]);
  v.y = pack_bf16(f[2], f[3]);
  v.z = pack_bf16(f[4], f[5]);
  v.w = pack_bf16(f[6], f[7]);
  return v;
}

/// Stores a warpgroup's (64, kBN) wgmma fragment, two columns at a time as pack(lo, hi) (a
/// bf16 pair, a float2): register 4j+e of this thread is row r + 8*(e/2), column colb + 8j + e%2
/// (colb: the tile's first column + 2*(lane%4)), at out[(row0 + row) * ncols + column]; rows from
/// rows_left on and columns from ncols on are skipped (ncols % 16 == 0: a pair is wholly in or
/// out).
template <int kBN, class T, class Pack>
__device__ __forceinline__ void store_fragment(T* out, const float (&acc)[kBN / 2], long long row0,
                                               int r, int rows_left, int colb, int ncols,
                                               Pack pack) {
  using Pair = decltype(pack(0.0f, 0.0f));
#pragma unroll
  for (int j = 0; j < kBN / 8; ++j) {
    const int col = colb + 8 * j;
    if (col < ncols) {
      if (r < rows_left)
        *reinterpret_cast<Pair*>(out + (row0 + r) * ncols + col) = pack(acc[4 * j], acc[4 * j + 1]);
      if (r + 8 < rows_left)
        *reinterpret_cast<Pair*>(out + (row0 + r + 8) * ncols + col) =
            pack(acc[4 * j + 2], acc[4 * j + 3]);
    }
  }
}

/// The fragment as bf16 pairs (the GEMMs' output).
template <int kBN>
__device__ __forceinline__ void store_fragment_bf16(__nv_bfloat16* out, const float (&acc)[kBN / 2],
                                                    long long row0, int r, int rows_left, int colb,
                                                    int ncols) {
  store_fragment<kBN>(out, acc, row0, r, rows_left, colb, ncols,
                      [](float lo, float hi) { return pack_bf16(lo, hi); });
}

/// sm_90a staged epilogue of one consumer warpgroup (128 threads; named barrier 1 + cw): its
/// (64, kBN) fragment is written into shared memory as 64 rows of T, then 64 of its threads store
/// one row each with cp.async.bulk, so the tensor cores wait for the staging writes only, not for
/// global stores (bf16_gemm, 2026-12-02: 1.06x register stores geomean, 1.12-1.17x at K <= 2880).
/// Fragment row r (16w + l/4, + 8) goes to out row row0 + rbase + r if rbase + r < rows_left,
/// columns col0 .. min(col0 + kBN, ncols) (col0 and ncols multiples of 16: the copies' 16-byte
/// rule for T of 2 or 4 bytes). kCols < kBN stages the fragment in kBN / kCols passes of kCols
/// columns through a smaller buffer (fp32 tiles), each pass waiting until the previous one's
/// copies have read it. The pitch's 8-element pad puts a warp's pair writes on distinct banks.
/// Before the staging is rewritten each issuing thread waits until its last copy has read it;
/// drain() before the kernel exits (shared memory must outlive the copies).
template <int kBN, class T, int kCols = kBN>
struct StagedStore {
  static_assert(kBN % kCols == 0 && kCols % 16 == 0, "whole passes of 16-column multiples");
  static constexpr int kPitch = (kCols + 8) * static_cast<int>(sizeof(T));
  static constexpr int kBytes = 64 * kPitch;  // per consumer warpgroup
  uint32_t base;  // this warpgroup's staging (shared address, 16-byte aligned)

  template <class Pack>
  __device__ __forceinline__ void store(T* out, const float (&acc)[kBN / 2], long long row0,
                                        int rbase, int rows_left, int col0, int ncols, int cw,
                                        Pack pack) const {
    using Pair = decltype(pack(0.0f, 0.0f));
    static_assert(sizeof(Pair) == 2 * sizeof(T), "pack makes two adjacent outputs");
    const int t128 = threadIdx.x % 128, w = t128 / 32, lane = threadIdx.x % 32;
#pragma unroll
    for (int pass = 0; pass < kBN / kCols; ++pass) {
      if (t128 < 64) bulk_wait_group_read<0>();  // the previous copies left the staging
      named_bar_sync(1 + cw, 128);
      unsigned char* rows = static_cast<unsigned char*>(__cvta_shared_to_generic(base));
      unsigned char* r0 = rows + (16 * w + lane / 4) * kPitch + 2 * sizeof(T) * (lane % 4);
#pragma unroll
      for (int j = 0; j < kCols / 8; ++j) {
        const int f = pass * (kCols / 8) + j;  // fragment column group
        *reinterpret_cast<Pair*>(r0 + 8 * sizeof(T) * j) = pack(acc[4 * f], acc[4 * f + 1]);
        *reinterpret_cast<Pair*>(r0 + 8 * kPitch + 8 * sizeof(T) * j) =
            pack(acc[4 * f + 2], acc[4 * f + 3]);
      }
      fence_proxy_async_shared();  // the staged rows, before the async proxy reads them
      named_bar_sync(1 + cw, 128);
      const int c0 = col0 + pass * kCols;
      if (t128 < 64 && rbase + t128 < rows_left && c0 < ncols) {
        const int cols = ncols - c0 < kCols ? ncols - c0 : kCols;
        bulk_store_1d(out + (row0 + rbase + t128) * ncols + c0, base + t128 * kPitch,
                      cols * static_cast<int>(sizeof(T)));
        bulk_commit_group();
      }
    }
  }

  __device__ __forceinline__ void drain() const {
    if (threadIdx.x % 128 < 64) bulk_wait_group<0>();
  }
};

/// Shared memory of a dense GEMM: the ring (1024-byte aligned for the swizzle atoms) at smem, then
/// extra bytes (a staged epilogue), then the barriers: full / empty (kStages each), acc_full /
/// acc_empty (two each, sm_100a), the TMEM slot.
struct RingSmem {
  uint32_t smem, full, empty, acc_full, acc_empty, tmem_slot;
};
template <class Cfg>
__device__ __forceinline__ RingSmem ring_smem(unsigned char* smem_raw, int extra) {
  RingSmem r;
  r.smem = (smem_u32(smem_raw) + 1023) & ~1023u;
  const uint32_t bars = r.smem + Cfg::kStages * Cfg::kStageBytes + extra;
  r.full = bars;
  r.empty = bars + 8 * Cfg::kStages;
  r.acc_full = bars + 16 * Cfg::kStages;
  r.acc_empty = r.acc_full + 16;
  r.tmem_slot = r.acc_empty + 16;
  return r;
}

/// Thread 0: prefetches both tensor maps' descriptors and initialises the ring (full: one
/// expect_tx arrive; empty: empty_count arrives) and kAccBufs accumulator barrier pairs
/// (acc_full: one commit; acc_empty: one arrive per epilogue warp; none on sm_90a).
template <int kStages, int kAccBufs>
__device__ __forceinline__ void init_ring(const TensorMap* tma_a, const TensorMap* tma_b,
                                          const RingSmem& r, uint32_t empty_count) {
  if (threadIdx.x == 0) {
    tma_prefetch(tma_a);
    tma_prefetch(tma_b);
    mbar_init_ring<kStages>(r.full, 1, r.empty, empty_count);
    if constexpr (kAccBufs > 0) mbar_init_ring<kAccBufs>(r.acc_full, 1, r.acc_empty, 8);
    fence_mbarrier_init();
  }
}

/// Producer loop of a dense GEMM (one thread): tiles blockIdx.x, +gridDim.x, ... in band order,
/// each k-block's A (kBM rows) and B (kBN rows) boxes into stage it % kStages of the ring (A tiles
/// at smem, then B tiles), on the full / empty barriers 8 bytes apart; the MMA side walks the same
/// tiles and stage counter.
template <class Cfg>
__device__ __forceinline__ void produce_band(const TensorMap* tma_a, const TensorMap* tma_b,
                                             uint32_t smem, uint32_t full, uint32_t empty,
                                             int tiles_m, int tiles_n, int kblocks) {
  uint32_t it = 0;
  for (int t = blockIdx.x; t < tiles_m * tiles_n; t += gridDim.x) {
    int tm, tn;
    band_tile<Cfg::kGroupM>(t, tiles_m, tiles_n, tm, tn);
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      mbar_wait(empty + 8 * s, ph ^ 1);
      mbar_expect_tx(full + 8 * s, Cfg::kStageBytes);
      const uint32_t a_dst = smem + s * Cfg::kABytes;
      const uint32_t b_dst = smem + Cfg::kStages * Cfg::kABytes + s * Cfg::kBBytes;
      tma_load_2d(a_dst, tma_a, full + 8 * s, kb * Cfg::kBK, tm * Cfg::kBM);
      tma_load_2d(b_dst, tma_b, full + 8 * s, kb * Cfg::kBK, tn * Cfg::kBN);
    }
  }
}

// ---- TMA multicast over a cluster of kMc CTAs along M (sm_90a; kMc = 1: the plain ring) ----
// The cluster's two CTAs take the row tiles 2p and 2p + 1 of pair tile (p, tn), the pairs in band
// order over the cluster index. Each CTA loads its own A box and half of the B box (kBN / 2
// rows, a map with that box), multicast into the same stage offset of both CTAs, so each B byte
// leaves L2 once per pair. A stage is rewritten only when both CTAs' consumers have freed it
// (empty counts 2 x 2: release_stage arrives in both CTAs); each full barrier still expects the
// whole stage. A CTA whose row tile is past M (odd tile rows) loads zeros and stores nothing.

/// Frees a stage for the producers of all kMc CTAs of the cluster (a power of two), whose
/// multicasts write it; kMc = 1: this CTA's only.
template <int kMc>
__device__ __forceinline__ void release_stage(uint32_t bar) {
  static_assert((kMc & (kMc - 1)) == 0, "kMc: a power of two");
  mbar_arrive(bar);
#pragma unroll
  for (uint32_t r = 1; r < kMc; ++r) mbar_arrive_cluster(bar, cluster_rank() ^ r);
}

/// Pair tile t of the cluster's CTA (band order over tile-row pairs): its row and column tiles.
template <class Cfg>
__device__ __forceinline__ void pair_coords(int t, int tiles_m, int tiles_n, int& tm, int& tn) {
  int pm;
  band_tile<Cfg::kGroupM>(t, (tiles_m + 1) / 2, tiles_n, pm, tn);
  tm = 2 * pm + static_cast<int>(cluster_rank());
}
__device__ __forceinline__ int pair_tiles(int tiles_m, int tiles_n) {
  return (tiles_m + 1) / 2 * tiles_n;
}

/// A persistent CTA's output tiles: kMc = 1, linear tiles blockIdx.x, + gridDim.x, ... in band
/// order (band_tile); kMc = 2, its cluster pair's tiles (pair_coords). Every role walks
///   for (int t = w.first(); t < w.count(); t += w.step()) { w.coords(t, tm, tn); ... }
template <class Cfg, int kMc>
struct CtaTiles {
  static_assert(kMc == 1 || kMc == 2, "kMc: 1 or 2 CTAs per cluster");
  int tiles_m, tiles_n, tiles;  // tiles = tiles_m * tiles_n
  __device__ int first() const { return blockIdx.x / kMc; }
  __device__ int step() const { return gridDim.x / kMc; }
  __device__ int count() const { return kMc > 1 ? pair_tiles(tiles_m, tiles_n) : tiles; }
  __device__ void coords(int t, int& tm, int& tn) const {
    if constexpr (kMc > 1) {
      pair_coords<Cfg>(t, tiles_m, tiles_n, tm, tn);
    } else {
      band_tile<Cfg::kGroupM>(t, tiles_m, tiles_n, tm, tn);
    }
  }
};

/// Producer of a two-CTA cluster (one thread per CTA): produce_band's ring over the cluster's pair
/// tiles, B's half boxes from tma_bh multicast to both CTAs.
template <class Cfg>
__device__ __forceinline__ void produce_pairs(const TensorMap* tma_a, const TensorMap* tma_bh,
                                              uint32_t smem, uint32_t full, uint32_t empty,
                                              int tiles_m, int tiles_n, int kblocks) {
  const uint32_t rank = cluster_rank();
  uint32_t it = 0;
  const CtaTiles<Cfg, 2> walk{tiles_m, tiles_n, tiles_m * tiles_n};
  for (int t = walk.first(); t < walk.count(); t += walk.step()) {
    int tm, tn;
    walk.coords(t, tm, tn);
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      mbar_wait(empty + 8 * s, ph ^ 1);
      mbar_expect_tx(full + 8 * s, Cfg::kStageBytes);
      const uint32_t b_dst = smem + Cfg::kStages * Cfg::kABytes + s * Cfg::kBBytes;
      tma_load_2d(smem + s * Cfg::kABytes, tma_a, full + 8 * s, kb * Cfg::kBK, tm * Cfg::kBM);
      tma_load_2d_multicast(b_dst + rank * (Cfg::kBBytes / 2), tma_bh, full + 8 * s,
                            kb * Cfg::kBK, tn * Cfg::kBN + rank * (Cfg::kBN / 2), 0x3);
    }
  }
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 1000
/// MMA loop of a dense sm_100a GEMM (one thread), over produce_band's stages: per tile, waits for
/// its accumulator buffer (two of kBN TMEM columns, drained by the epilogue on acc_empty), issues
/// each stage's 32-byte K steps (kind::f16, or kind::f8f6f4 when kF8), frees the stage with a
/// commit, and publishes the tile on acc_full.
template <class Cfg, bool kF8, uint32_t kIdesc>
__device__ __forceinline__ void issue_mma_band(uint32_t smem, uint32_t full, uint32_t empty,
                                               uint32_t acc_full, uint32_t acc_empty,
                                               uint32_t tmem_base, int tiles, int kblocks) {
  uint32_t it = 0, local = 0;
  for (int t = blockIdx.x; t < tiles; t += gridDim.x, ++local) {
    const uint32_t buf = local & 1, aph = (local >> 1) & 1;
    mbar_wait(acc_empty + 8 * buf, aph ^ 1);  // the epilogue has drained this buffer
    tc_fence_after();
    const uint32_t d_tmem = tmem_base + buf * Cfg::kBN;
    for (int kb = 0; kb < kblocks; ++kb, ++it) {
      const uint32_t s = it % Cfg::kStages, ph = (it / Cfg::kStages) & 1;
      mbar_wait(full + 8 * s, ph);
      tc_fence_after();
      const uint32_t a = smem + s * Cfg::kABytes;
      const uint32_t b = smem + Cfg::kStages * Cfg::kABytes + s * Cfg::kBBytes;
#pragma unroll
      for (int k = 0; k < Cfg::kBK / (kF8 ? 32 : 16); ++k) {
        if constexpr (kF8) {
          umma_f8f6f4(d_tmem, umma_desc_sw128(a + 32 * k), umma_desc_sw128(b + 32 * k), kIdesc,
                      (kb | k) != 0);
        } else {
          umma_f16(d_tmem, umma_desc_sw128(a + 32 * k), umma_desc_sw128(b + 32 * k), kIdesc,
                   (kb | k) != 0);
        }
      }
      umma_commit(empty + 8 * s);  // frees the stage once these MMAs have read it
    }
    umma_commit(acc_full + 8 * buf);
  }
}
#endif

}  // namespace ws
