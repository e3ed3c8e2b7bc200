// warpsmith device library: the sm_90a consumer side of a TMA ring (ws/gemm.cuh's layout: kStages
// A tiles, then kStages B tiles; full / empty mbarriers 8 bytes apart): a warpgroup's k-block of
// wgmmas, the release of the stage before it, and the ping-pong consumers' turn barriers.
#pragma once

#include "ws/gemm.cuh"
#include "ws/ptx_sm90.cuh"
#include "ws/wgmma.cuh"

namespace ws {

/// One k-block (128-byte rows: 32-byte K steps, bf16 k16 or E4M3 k32) of consumer warpgroup cw
/// (A rows 64*cw..) from ring stage s into acc, as one commit group; restart: its first wgmma
/// overwrites acc instead of adding to it.
template <class Cfg, bool kF8>
__device__ __forceinline__ void wgmma_kblock(float (&acc)[Cfg::kBN / 2], uint32_t smem, uint32_t s,
                                             int cw, bool restart) {
  const uint32_t a = smem + s * Cfg::kABytes + cw * 64 * 128;
  const uint32_t b = smem + Cfg::kStages * Cfg::kABytes + s * Cfg::kBBytes;
  wgmma_fence();
#pragma unroll
  for (int k = 0; k < Cfg::kBK / (kF8 ? 32 : 16); ++k) {
    if constexpr (kF8) {
      wgmma_e4m3<Cfg::kBN>(acc, wgmma_desc_sw128(a + 32 * k), wgmma_desc_sw128(b + 32 * k),
                           k != 0 || !restart);
    } else {
      wgmma_bf16<Cfg::kBN>(acc, wgmma_desc_sw128(a + 32 * k), wgmma_desc_sw128(b + 32 * k),
                           k != 0 || !restart);
    }
  }
  wgmma_commit();
}

/// After k-block kb (stage s) is committed: from the second k-block on, waits until only its
/// wgmmas may still run and frees the previous k-block's stage prev (signal: the warpgroup's one
/// arriving thread; release_stage<kMc>); then prev = s.
template <int kMc = 1>
__device__ __forceinline__ void release_previous_stage(int kb, uint32_t s, uint32_t& prev,
                                                       uint32_t empty, bool signal) {
  if (kb > 0) {
    wgmma_wait<1>();  // the previous k-block's wgmmas are done: free its stage
    if (signal) release_stage<kMc>(empty + 8 * prev);
  }
  prev = s;
}

// ---- Ping-pong consumers: two warpgroups take a CTA's tiles in turn, each a whole tile, so one's
// epilogue overlaps the other's main loop. Order barriers order + 8w (count 1): warpgroup w
// arrives after each of its main loops, and a warpgroup starts a main loop only once the other
// has finished the previous tile's, which keeps the MMAs in the ring's order. ----

/// Before warpgroup cw's n-th tile (n from 0): waits for the other warpgroup's previous main loop
/// (its n-th for cw 1, its n-1-th for cw 0).
template <int cw>
__device__ __forceinline__ void pingpong_wait_turn(uint32_t order, uint32_t n) {
  if (cw == 1)
    mbar_wait(order, n & 1);
  else if (n > 0)
    mbar_wait(order + 8, (n - 1) & 1);
}

/// After warpgroup cw's main loop into acc0 and acc1 (kblocks k-blocks, the last in stage prev):
/// waits for its wgmmas, frees that stage and lets the other warpgroup start.
template <int cw, int kN>
__device__ __forceinline__ void pingpong_end_main(float (&acc0)[kN], float (&acc1)[kN],
                                                  uint32_t empty, uint32_t prev, uint32_t order,
                                                  int kblocks, bool signal) {
  wgmma_wait<0>();
  fence_operands(acc0);
  fence_operands(acc1);
  if (signal && kblocks > 0) mbar_arrive(empty + 8 * prev);
  if (signal) mbar_arrive(order + 8 * cw);  // this main loop is done: the other may start
}

}  // namespace ws
