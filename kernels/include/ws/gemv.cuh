// warpsmith device library: the decode (small-M) GEMM that streams B straight into mma.sync
// fragments, for d[M,N] = a[M,K] b[N,K]^T with M <= 16 * kMT, both operands K-contiguous.
//
// A CTA owns kNT 8-column tiles (from tile0); its kWarps warps take blocks of kUnroll k-steps in
// turn (warp w: blocks w, w + kWarps, ...), so the CTA reads each of its B rows as one advancing
// run. A k-step is 64 bytes of each row: lane (g = lane / 4, q = lane % 4) loads 16 bytes of B row
// tile * 8 + g and of A rows g and g + 8 of each 16-row tile, at byte 16 q of the step, all of a
// block's loads before its MMAs (B with no L1 allocation; A, small and shared by every CTA, through
// L1 and L2). Those 16 bytes feed two MMAs under one relabelling of k, the same for A and B so the
// sum is unchanged: in the m16n8k16 (bf16) and m16n8k32 (e4m3) fragments a lane holds k-groups
// {q, q + 4} of 2 (bf16) or 4 (e4m3) elements in two 32-bit words per row; the first MMA takes the
// loaded words 0 and 1 as those two groups, the second words 2 and 3. Bytes past K (K % 16 == 0
// for e4m3, % 8 for bf16: a lane's 16 bytes are all inside or all past) load as zeros.
// gemv_reduce sums the warps' fp32 fragments in warp order (deterministic) through shared memory.
//
// Split K (kSplit > 1, the plan launches clusters of kSplit CTAs): a cluster shares its column
// tiles and its CTAs take consecutive slices of the k-steps. Every CTA reads all of A for its
// columns, so A's L2 traffic is (N / (8 kNT)) * |A| whatever the split: the split buys CTAs (bytes
// in flight) without shrinking kNT. Each CTA sums its warps into its shared memory, and after a
// cluster barrier rank r adds the cluster's partials for every kSplit-th fragment in rank order
// through distributed shared memory (deterministic, no workspace, no atomics).
#pragma once

#include "ws/cluster.cuh"
#include "ws/memory.cuh"

namespace ws {

/// bf16 x bf16 -> f32, m16n8k16: 32 k per 64-byte step.
struct GemvBf16 {
  static constexpr int kElemBytes = 2;
  static constexpr bool kPromote = false;  // fp32 accumulation in the tensor core
  __device__ __forceinline__ static void mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2,
                                             unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};

/// e4m3 x e4m3 -> f32, m16n8k32: 64 k per step. kPromote: each step's two MMAs start from zero
/// and are added to the fp32 accumulator, so no MMA sums more than 64 products, whatever the
/// target does inside one (Hopper's FP8 wgmma accumulates with fewer bits than fp32; ptxas lowers
/// this mma.sync on sm_90a and sm_100a to f16 HMMAs with fp32 accumulation, exact for e4m3).
struct GemvE4m3 {
  static constexpr int kElemBytes = 1;
  static constexpr bool kPromote = true;
  __device__ __forceinline__ static void mma(float (&c)[4], unsigned a0, unsigned a1, unsigned a2,
                                             unsigned a3, unsigned b0, unsigned b1) {
    asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, "
        "{%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
  }
};

/// This warp's sums over its k-steps of the CTA's slice (slice `part` of kSplit, in blocks of
/// kUnroll steps): acc[mt][nt] is the m16n8 fragment of rows 16 mt.., columns (tile0 + nt) * 8..
/// (zero where no step fell to the warp). a (M,K), b (N,K) row-major, element sizes
/// Op::kElemBytes.
template <class Op, int kMT, int kNT, int kWarps, int kUnroll, int kSplit = 1,
          LoadHint kLoadB = LoadHint::kNcNoAllocate, int kOrder = 0>
__device__ __forceinline__ void gemv_mainloop(const void* a, const void* b, int M, int N, int K,
                                              int tile0, int part, float (&acc)[kMT][kNT][4]) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const int g = lane / 4, q = lane % 4;
  const int m_tiles = (M + 15) / 16;  // <= kMT
  const int tiles_n = N / 8;
  const long long row_bytes = static_cast<long long>(K) * Op::kElemBytes;
  const int steps = static_cast<int>((row_bytes + 63) / 64);
  const int blocks = (steps + kUnroll - 1) / kUnroll;
  const int per_part = (blocks + kSplit - 1) / kSplit;
  const int blk_end = min(blocks, (part + 1) * per_part);

  const char* brow[kNT];  // this lane's B row, at its 16 bytes of a step
  bool bon[kNT];
#pragma unroll
  for (int nt = 0; nt < kNT; ++nt) {
    bon[nt] = tile0 + nt < tiles_n;
    brow[nt] =
        static_cast<const char*>(b) + (bon[nt] ? (tile0 + nt) * 8 + g : 0) * row_bytes + 16 * q;
  }
  const char* arow[kMT][2];  // A rows g and g + 8 of each 16-row tile
  bool aon[kMT][2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int r = mt * 16 + g + 8 * h;
      aon[mt][h] = r < M;
      arow[mt][h] = static_cast<const char*>(a) + (aon[mt][h] ? r : 0) * row_bytes + 16 * q;
    }
  }
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
      for (int i = 0; i < 4; ++i) acc[mt][nt][i] = 0.0f;
    }
  }

  // kOrder 0: the warps take the slice's blocks in turn (the CTA advances along each row
  // together); 1: each warp takes a contiguous 1/kWarps of them (kWarps runs per row).
  const int blk0 = part * per_part;
  const int span = max(0, blk_end - blk0);
  const int blk_first = kOrder == 0 ? blk0 + warp : blk0 + warp * span / kWarps;
  const int blk_stop = kOrder == 0 ? blk_end : blk0 + (warp + 1) * span / kWarps;
  constexpr int kStep = kOrder == 0 ? kWarps : 1;
  for (int blk = blk_first; blk < blk_stop; blk += kStep) {
    Chunk bv[kUnroll][kNT], av[kUnroll][kMT][2];
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
      const int s = blk * kUnroll + u;
      const long long off = static_cast<long long>(s) * 64;
      const bool kin = s < steps && off + 16 * q < row_bytes;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        bv[u][nt] = kin && bon[nt] ? load_global16<kLoadB>(brow[nt] + off) : Chunk{};
      }
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          av[u][mt][h] = kin && mt < m_tiles && aon[mt][h]
                             ? load_global16<LoadHint::kNc>(arow[mt][h] + off)
                             : Chunk{};
        }
      }
    }
#pragma unroll
    for (int u = 0; u < kUnroll; ++u) {
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) {
        if (mt >= m_tiles)
          break;  // warp-uniform
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const Chunk& lo = av[u][mt][0];
          const Chunk& hi = av[u][mt][1];
          const Chunk& bb = bv[u][nt];
          if constexpr (Op::kPromote) {
            float part[4] = {0.0f, 0.0f, 0.0f, 0.0f};
            Op::mma(part, lo.w[0], hi.w[0], lo.w[1], hi.w[1], bb.w[0], bb.w[1]);
            Op::mma(part, lo.w[2], hi.w[2], lo.w[3], hi.w[3], bb.w[2], bb.w[3]);
#pragma unroll
            for (int i = 0; i < 4; ++i) acc[mt][nt][i] += part[i];
          } else {
            Op::mma(acc[mt][nt], lo.w[0], hi.w[0], lo.w[1], hi.w[1], bb.w[0], bb.w[1]);
            Op::mma(acc[mt][nt], lo.w[2], hi.w[2], lo.w[3], hi.w[3], bb.w[2], bb.w[3]);
          }
        }
      }
    }
  }
}

/// Stores fragment f (= (mt * kNT + nt) * 32 + lane) of the CTA's column tiles from tile0: its
/// in-bounds rows r0 = 16 mt + lane / 4 and r0 + 8, columns col, col + 1.
template <int kNT, class Store>
__device__ __forceinline__ void gemv_store_fragment(int f, const float4& sum, int M, int N,
                                                    int tile0, Store& store) {
  const int l = f % 32, nt = f / 32 % kNT, mt = f / (32 * kNT);
  const int t = tile0 + nt;
  if (t >= N / 8)
    return;
  const int col = t * 8 + 2 * (l % 4), r0 = mt * 16 + l / 4;
  if (r0 < M)
    store(r0, col, sum.x, sum.y);
  if (r0 + 8 < M)
    store(r0 + 8, col, sum.z, sum.w);
}

/// The CTA's (with kSplit > 1: the cluster's) sums: every warp's acc through red (kWarps * kMT *
/// kNT * 32 float4 of shared memory), then store(row, col, v0, v1) for each in-bounds pair of
/// output columns col, col + 1 of row, summed over the warps in warp order and over the cluster
/// in rank order. Every thread of the CTA (of the cluster) calls it.
template <int kMT, int kNT, int kWarps, int kSplit, class Store>
__device__ __forceinline__ void gemv_reduce(float4* red, const float (&acc)[kMT][kNT][4], int M,
                                            int N, int tile0, Store&& store) {
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      red[((warp * kMT + mt) * kNT + nt) * 32 + lane] =
          make_float4(acc[mt][nt][0], acc[mt][nt][1], acc[mt][nt][2], acc[mt][nt][3]);
    }
  }
  __syncthreads();
  // Fragment f = (mt * kNT + nt) * 32 + lane: warp 0's slot of red; its thread folds the other
  // warps into it (with kSplit > 1, for the cluster to read).
  const int frags = (M + 15) / 16 * kNT * 32;
  for (int f = threadIdx.x; f < frags; f += kWarps * 32) {
    float4 sum = red[f];
    for (int w = 1; w < kWarps; ++w) {
      const float4 p = red[w * kMT * kNT * 32 + f];
      sum.x += p.x;
      sum.y += p.y;
      sum.z += p.z;
      sum.w += p.w;
    }
    if constexpr (kSplit > 1) {
      red[f] = sum;
    } else {
      gemv_store_fragment<kNT>(f, sum, M, N, tile0, store);
    }
  }
  if constexpr (kSplit > 1) {
    cluster_sync();                        // every rank's partials are in its red
    const unsigned rank = cluster_rank();  // = blockIdx.x % kSplit: 1-D clusters
    for (int f = static_cast<int>(threadIdx.x * kSplit + rank); f < frags;
         f += kWarps * 32 * kSplit) {
      float4 sum = cluster_load_f4(red + f, 0);
      for (int r = 1; r < kSplit; ++r) {
        const float4 p = cluster_load_f4(red + f, r);
        sum.x += p.x;
        sum.y += p.y;
        sum.z += p.z;
        sum.w += p.w;
      }
      gemv_store_fragment<kNT>(f, sum, M, N, tile0, store);
    }
    cluster_sync();  // no CTA leaves while its red may still be read
  }
}

/// A decode kernel's shape: kMaxM rows at most (0: the kernel is never launched; one 16-row tile
/// is still compiled), kNT 8-column tiles per CTA, kWarps warps over K, kUnroll k-steps loaded
/// ahead, kSplit CTAs per cluster splitting K (the plan's cluster size). The plan's shared memory
/// is kRedBytes.
template <int kMaxM, int kNTiles, int kNWarps, int kNUnroll, int kNSplit = 1, int kBLoad = 0,
          int kNOrder = 0>
struct GemvConfig {
  static_assert(kMaxM % 16 == 0 && kMaxM <= 64, "GEMV_M: 0, 16, 32 or 64");
  static_assert(kNSplit >= 1 && kNSplit <= 8, "GEMV_KSPLIT: a portable cluster size");
  static constexpr int kMT = kMaxM > 0 ? kMaxM / 16 : 1;  // 16-row tiles in registers
  static_assert(kBLoad >= 0 && kBLoad <= 3 && (kNOrder == 0 || kNOrder == 1),
                "GEMV_LOAD, GEMV_ORDER");
  static constexpr int kNT = kNTiles, kWarps = kNWarps, kUnroll = kNUnroll, kSplit = kNSplit;
  static constexpr int kOrder = kNOrder;  // gemv_mainloop's block order
  // B's loads: 0 L1 no-allocate; 1 also asks L2 for 256-byte fetches (a row's 64-byte pieces
  // are read by kUnroll loads in a row); 2 L2 evict-first (B is read once); 3 the 256-byte
  // fetches with L1 allocating (moe_decode_fused's weight loads: 1.09x over plain .nc there,
  // and L1::no_allocate beside them 0.95x; bf16_gemm's default since: 1.04x at M16; session
  // 42, an H100).
  static constexpr LoadHint kLoadB = kBLoad == 0   ? LoadHint::kNcNoAllocate
                                     : kBLoad == 1 ? LoadHint::kNcNoAllocateL2_256
                                     : kBLoad == 2 ? LoadHint::kNcL2EvictFirst
                                                   : LoadHint::kNcL2_256;
  static constexpr int kThreads = 32 * kWarps;
  static_assert(kThreads <= 1024, "whole CTA");
  static constexpr int kRedBytes = kWarps * kMT * kNT * 32 * 16;
};

/// One CTA of a decode kernel: its kNT column tiles from (blockIdx.x / kSplit) * kNT and its K
/// slice blockIdx.x % kSplit (its cluster rank), summed by gemv_mainloop, reduced by gemv_reduce
/// through red (Cfg::kRedBytes of shared memory) and handed to store(row, col, v0, v1).
template <class Op, class Cfg, class Store>
__device__ __forceinline__ void gemv(const void* a, const void* b, int M, int N, int K, float4* red,
                                     Store&& store) {
  const int tile0 = static_cast<int>(blockIdx.x) / Cfg::kSplit * Cfg::kNT;
  const int part = static_cast<int>(blockIdx.x) % Cfg::kSplit;
  float acc[Cfg::kMT][Cfg::kNT][4];
  gemv_mainloop<Op, Cfg::kMT, Cfg::kNT, Cfg::kWarps, Cfg::kUnroll, Cfg::kSplit, Cfg::kLoadB,
                Cfg::kOrder>(a, b, M, N, K, tile0, part, acc);
  gemv_reduce<Cfg::kMT, Cfg::kNT, Cfg::kWarps, Cfg::kSplit>(red, acc, M, N, tile0, store);
}

}  // namespace ws
