// warpsmith device library: MXFP8 scale blocks of a cluster's tiles gathered into whole stores.
//
// A transposing quantizer whose CTA owns a 128 x 64 tile writes, per tile, 2 bytes of each of
// its 128 scales rows and 4 bytes of each of its 64 scales_t rows. Each is its own L2 request,
// and about half of all L2 requests cross the fabric between the H200's two L2 partitions, the
// unit that limits these kernels (kernels/swiglu_quantize_fwd/NOTES.md). ClusterScales makes a
// cluster of 8 CTAs (2 M tiles x 4 I tiles) send its blocks by st.async into one CTA per M tile
// and one per I tile, which then store 8 bytes of every row: 64 requests per tile instead of
// 192, with no workspace and no second launch.
//
// kHalves: the matrices per tile. 1: A [M, I] -> scales [M, I/32], scales_t [I, M/32]. 2: two
// side by side (swiglu_quantize_bwd's dg || du): scales [M, 2I/32] (half h at column h I/32),
// scales_t [2I, M/32] (half h from row h I).
#pragma once

#include "ws/cluster.cuh"
#include "ws/memory.cuh"
#include "ws/ptx_sm90.cuh"

namespace ws {
namespace mx {

template <int kHalves, int kThreads>
struct ClusterScales {
  static constexpr int kClusterSize = 8;
  static constexpr int kTileM = 128, kTileI = 64;
  static_assert(kHalves == 1 || kHalves == 2, "one or two matrices per tile");
  static_assert(kThreads >= 32 * kHalves, "the sends take 32 x kHalves threads");
  // Shared memory (16-byte aligned base): this tile's scales [kHalves][128][2], the row
  // collector's [4][kHalves][128][2], the column collector's [2][kHalves * 64][4] (the staged
  // scales_t blocks as they are), two mbarriers.
  static constexpr int kLocal = 0, kRows = 256 * kHalves, kCols = kRows + 1024 * kHalves;
  static constexpr int kBars = kCols + 512 * kHalves;
  static constexpr int kBytes = kBars + 16;  // = 1792 kHalves + 16: the plan's smem

  /// CTA bid's tile: cluster c = bid / 8 covers M tiles 2 cm + q / 4 and I tiles 4 ci + q % 4
  /// (q = bid % 8, its rank), the I groups fastest. Past M or I: a tile of zeros, no stores.
  static __device__ __forceinline__ void tile_of(int bid, int col_tiles, int& mt, int& it) {
    const int groups_i = (col_tiles + 3) / 4, c = bid / kClusterSize, q = bid % kClusterSize;
    mt = 2 * (c / groups_i) + q / 4;
    it = 4 * (c % groups_i) + q % 4;
  }

  /// Byte offset in the local block of half h, tile row r, scale column b (0, 1).
  static __device__ __forceinline__ int local(int h, int r, int b) {
    return 256 * h + 2 * r + b;
  }

  /// At the kernel's start, every thread: the collectors' barriers (one phase each), then this
  /// CTA's arrival on the cluster barrier that finish() waits on before any remote access.
  /// region: kBytes of shared memory, 16-byte aligned, at the same offset in every CTA.
  static __device__ __forceinline__ void init(unsigned char* region) {
    const unsigned cs = smem_u32(region);
    if (threadIdx.x == 0) {
      const unsigned q = cluster_rank();
      mbar_init(cs + kBars, 1);
      mbar_init(cs + kBars + 8, 1);
      fence_mbarrier_init();
      if (q % 4 == 0) mbar_expect_tx(cs + kBars, 4 * 256 * kHalves);
      if (q / 4 == 0) mbar_expect_tx(cs + kBars + 8, 2 * 256 * kHalves);
    }
    cluster_arrive_relaxed();
  }

  /// At the kernel's end, every thread of every CTA (valid tile or not), after the local block
  /// (in region) and the staged scales_t ([kHalves * 64][4] at stage) are complete and
  /// synchronized: sends both, then the collectors store their rows. mt, it: this CTA's tile.
  static __device__ __forceinline__ void finish(const unsigned char* region,
                                                const unsigned char* stage,
                                                unsigned char* __restrict__ scales,
                                                unsigned char* __restrict__ scales_t, int M,
                                                int I, int mt, int it) {
    const int tid = threadIdx.x;
    const unsigned cs = smem_u32(region), staged = smem_u32(stage);
    const unsigned q = cluster_rank(), ms = q / 4, is = q % 4;
    const unsigned rows_bar = cs + kBars, cols_bar = rows_bar + 8;
    cluster_wait();  // every CTA's barriers are initialized
    if (tid < 16 * kHalves) {  // the local block to the row collector, as its block is
      send(cs + kLocal + 16 * tid, cs + kRows + 256 * kHalves * is + 16 * tid, rows_bar, 4 * ms);
    } else if (tid < 32 * kHalves) {  // the staged scales_t to the column collector, block ms
      const int c = tid - 16 * kHalves;
      send(staged + 16 * c, cs + kCols + 256 * kHalves * ms + 16 * c, cols_bar, is);
    }
    if (is == 0) {  // row collector: M tile mt, I tiles it .. it + 3
      mbar_wait(rows_bar, 0);
      const unsigned char* rows = region + kRows;
      const int m0 = mt * kTileM, half = I / 32, c0 = 2 * it;
      const int bytes = min(8, half - c0);
      for (int t = tid; t < kTileM * kHalves; t += kThreads) {
        const int h = t / kTileM, r = t % kTileM;
        if (m0 + r >= M) continue;
        unsigned lo = 0, hi = 0;
#pragma unroll
        for (int b = 0; b < 8; ++b) {
          const unsigned byte = rows[256 * kHalves * (b / 2) + local(h, r, b % 2)];
          if (b < 4) {
            lo |= byte << (8 * b);
          } else {
            hi |= byte << (8 * (b - 4));
          }
        }
        store8(scales + static_cast<long long>(m0 + r) * kHalves * half + h * half + c0, lo, hi,
               bytes);
      }
    }
    if (ms == 0) {  // column collector: I tile it, M tiles mt, mt + 1
      mbar_wait(cols_bar, 0);
      const unsigned char* cols = region + kCols;
      const int i0 = it * kTileI, width = M / 32, c0 = 4 * mt;
      const int bytes = min(8, width - c0);
      for (int k = tid; k < kTileI * kHalves; k += kThreads) {
        const int h = k / kTileI, c = k % kTileI;
        if (i0 + c >= I) continue;
        store8(scales_t + (static_cast<long long>(h) * I + i0 + c) * width + c0,
               *reinterpret_cast<const unsigned*>(cols + 4 * k),
               *reinterpret_cast<const unsigned*>(cols + 256 * kHalves + 4 * k), bytes);
      }
    }
  }

 private:
  /// 16 bytes at local shared address src into cluster CTA `to` at the same-layout address dst.
  static __device__ __forceinline__ void send(unsigned src, unsigned dst, unsigned bar,
                                              unsigned to) {
    const Chunk v = load_shared16(src);
    st_async16(cluster_addr(dst, to), v.w[0], v.w[1], v.w[2], v.w[3], cluster_addr(bar, to));
  }
  /// The first `bytes` (1..8) of lo:hi: one 8-byte store when whole and aligned.
  static __device__ __forceinline__ void store8(unsigned char* dst, unsigned lo, unsigned hi,
                                                int bytes) {
    if (bytes == 8 && (reinterpret_cast<size_t>(dst) & 7) == 0) {
      *reinterpret_cast<uint2*>(dst) = make_uint2(lo, hi);
    } else {
      for (int b = 0; b < bytes; ++b) {
        dst[b] = static_cast<unsigned char>((b < 4 ? lo : hi) >> (8 * (b % 4)));
      }
    }
  }
};

}  // namespace mx
}  // namespace ws
