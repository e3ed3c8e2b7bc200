/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128, 512, 1024], "ELEMS_PER_THREAD": [32, 16, 8],
              "VECTOR_BYTES": [2, 4, 8, 16], "BLOCKS_PER_THREAD": [1, 2, 4], "CONVERT": [0, 1] },
  "launch": [ { "kernel": "sm90_bf16_mxfp8_quantize_rowwise_vectorized",
                "grid":  ["ceil_div(M * (K / 32) * (32 / ELEMS_PER_THREAD), BLOCKS_PER_THREAD * THREADS)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["x", "q", "scales", "M", "K"] } ] }
*/
// Starting kernel for mxfp8_quantize_rowwise: what a competent CUDA user writes next, once the
// one-thread-per-block baseline is too slow. Same rules and bit logic as the baseline (the E8M0
// scale from the bits of amax and d = amax * fp32(1/448); q from the fp32 product x * 2^(127-S)
// through the hardware's saturating RNE E4M3 conversion), with the data layout made tunable:
//
//  - A 32-element block (64 bytes of x) is shared by 32 / ELEMS_PER_THREAD consecutive lanes
//    ("lanes per block", 1, 2 or 4); amax is reduced across them with xor-shuffles.
//  - Each lane reads its ELEMS_PER_THREAD elements of a block as VECTOR_BYTES-wide loads (2: one
//    bf16 at a time, 16: eight). Load i of lane j in its block reads vector i * lanes + j, so the
//    lanes of a block read neighbouring vectors at every load instruction.
//  - Each lane handles BLOCKS_PER_THREAD blocks, 32 / lanes blocks apart (a warp covers one
//    contiguous tile), and issues the loads of all of them before it uses any.
//  - CONVERT 0: cuda_fp8.h's __nv_cvt_float_to_fp8 per element; 1: the packed
//    cvt.rn.satfinite.e4m3x2.f32 (two elements per instruction), both the same RNE + satfinite.
//  - One thread per (lanes, BLOCKS_PER_THREAD) share of the work, no grid-stride loop: a large
//    plain grid.
//
// The defaults (THREADS=256, ELEMS_PER_THREAD=32, VECTOR_BYTES=2, BLOCKS_PER_THREAD=1,
// CONVERT=0) are the baseline's layout: one thread per block, scalar bf16 loads, each warp load
// instruction touching 32 blocks 64 bytes apart. Expected fast (H200, memory-bound at ~3 bytes per
// element): THREADS=512 ELEMS_PER_THREAD=8 VECTOR_BYTES=16 BLOCKS_PER_THREAD=2 CONVERT=1, which is
// the hand-tuned kernel's structure (kernels/mxfp8_quantize_rowwise: 4 lanes per block, one
// 16-byte load per lane per block, every load instruction 512 contiguous bytes, two loads in
// flight per lane before use, packed conversion, plain ld.global.nc from a const __restrict__
// pointer, a large plain grid; it differs only in plain st.global q stores, where the hand-tuned
// kernel uses st.global.cs, and in scale bytes stored by each block's first lane rather than
// gathered into one 32-byte store); THREADS 128-512 and BLOCKS_PER_THREAD 2-4 are expected within
// ~1% of it, BLOCKS_PER_THREAD=1 at 4 lanes ~8% slower (too few bytes in flight). Clearly worse:
// 2- and 4-byte loads (4-8x the load instructions and L1 wavefronts), one lane per block (each
// load instruction strides 64 bytes), and THREADS=1024 with many blocks per thread (the register
// cap of __launch_bounds__(1024) spills).
//
// Evaluate: build/warpsmith eval mxfp8_quantize_rowwise problems/mxfp8_quantize_rowwise/starting.cu
//   [--set rounding=floor] [--knob VECTOR_BYTES=16 ...]

#include <cuda_fp8.h>

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "compile with the problem's parameters: -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif
#ifndef ELEMS_PER_THREAD
#define ELEMS_PER_THREAD 32
#endif
#ifndef VECTOR_BYTES
#define VECTOR_BYTES 2
#endif
#ifndef BLOCKS_PER_THREAD
#define BLOCKS_PER_THREAD 1
#endif
#ifndef CONVERT
#define CONVERT 0
#endif

namespace {

constexpr int kThreads = THREADS;
constexpr int kBlockElems = 32;                              // elements per E8M0 scale
constexpr int kElems = ELEMS_PER_THREAD;                     // of one block, per lane
constexpr int kLanes = kBlockElems / kElems;                 // lanes per block: 1, 2 or 4
constexpr int kVecBytes = VECTOR_BYTES;                      // bytes per load
constexpr int kVecElems = kVecBytes / 2;                     // bf16 per load: 1..8
constexpr int kLoads = kElems / kVecElems;                   // loads per lane per block
constexpr int kWords = kElems / 2;                           // x held as bf16 pairs
constexpr int kBlocks = BLOCKS_PER_THREAD;                   // blocks per lane
constexpr int kWarpBlocks = 32 / kLanes * kBlocks;           // blocks per warp (one tile)
constexpr bool kFloor = WS_ROUNDING == WS_ROUNDING_FLOOR;

static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
static_assert(kElems == 8 || kElems == 16 || kElems == 32, "1, 2 or 4 lanes per block");
static_assert(kVecBytes == 2 || kVecBytes == 4 || kVecBytes == 8 || kVecBytes == 16, "load width");
static_assert(kVecElems <= kElems, "a load stays within the lane's share of a block");
static_assert(kBlocks >= 1 && kBlocks <= 8, "registers");

constexpr unsigned kFullMask = 0xFFFFFFFFu;
constexpr unsigned kScaleNaN = 0xFF;
constexpr unsigned kE4M3NaNx4 = 0x7F7F7F7Fu;
constexpr unsigned kBf16Inf = 0x7F80u;  // |x| bits; a NaN's are larger

// Load i of this lane's share of a block (vector i * kLanes + lane_in_block) into w, which holds
// the lane's elements as bf16 pairs (element 2k in the low half of w[k]).
__device__ __forceinline__ void load_vector(const unsigned short* __restrict__ src, int i,
                                            unsigned (&w)[kWords]) {
  if constexpr (kVecBytes == 16) {
    const uint4 v = *reinterpret_cast<const uint4*>(src);
    w[4 * i] = v.x;
    w[4 * i + 1] = v.y;
    w[4 * i + 2] = v.z;
    w[4 * i + 3] = v.w;
  } else if constexpr (kVecBytes == 8) {
    const uint2 v = *reinterpret_cast<const uint2*>(src);
    w[2 * i] = v.x;
    w[2 * i + 1] = v.y;
  } else if constexpr (kVecBytes == 4) {
    w[i] = *reinterpret_cast<const unsigned*>(src);
  } else {
    const unsigned h = *src;
    if (i % 2 == 0) w[i / 2] = h;
    else w[i / 2] |= h << 16;
  }
}

// Store the E4M3 bytes of load i (element e in byte e % 4 of qw[e / 4]).
__device__ __forceinline__ void store_vector(unsigned char* __restrict__ dst, int i,
                                             const unsigned (&qw)[kElems / 4]) {
  if constexpr (kVecBytes == 16) {
    *reinterpret_cast<uint2*>(dst) = make_uint2(qw[2 * i], qw[2 * i + 1]);
  } else if constexpr (kVecBytes == 8) {
    *reinterpret_cast<unsigned*>(dst) = qw[i];
  } else if constexpr (kVecBytes == 4) {
    *reinterpret_cast<unsigned short*>(dst) =
        static_cast<unsigned short>(qw[i / 2] >> (16 * (i % 2)));
  } else {
    *dst = static_cast<unsigned char>(qw[i / 4] >> (8 * (i % 4)));
  }
}

// rceil: the smallest S in [0, 254] with 2^(S-127) >= d, d = amax * fp32(1/448) (non-FTZ: d and
// amax can be subnormal). Read off d's bits: a power of two stays, anything above rounds up.
__device__ __forceinline__ unsigned rceil_scale(unsigned amax_bits) {
  const float d = __fmul_rn(__uint_as_float(amax_bits << 16), 1.0f / 448.0f);
  const unsigned bits = __float_as_uint(d);
  const unsigned e = bits >> 23;  // d >= 0
  const unsigned mant = bits & 0x7FFFFFu;
  if (e == 0xFF) return 254;                     // d = +Inf
  if (e == 0) return mant > 0x400000u ? 1u : 0u;  // subnormal d: 2^-127 is 0x400000 * 2^-149
  return min(e + (mant != 0 ? 1u : 0u), 254u);
}

// floor: clamp(floor(log2(amax)) - 8 + 127, 0, 254) for finite amax; floor(log2) of a normal
// bf16 is its biased exponent - 127, and subnormals and 0 clamp to 0.
__device__ __forceinline__ unsigned floor_scale(unsigned amax_bits) {
  return static_cast<unsigned>(max(static_cast<int>(amax_bits >> 7) - 8, 0));
}

// Two fp32 -> two E4M3 bytes, RNE, saturating to +-448 (Inf too), lo in the low byte.
__device__ __forceinline__ unsigned to_e4m3x2(float lo, float hi) {
#if CONVERT == 1
  unsigned short d;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(d) : "f"(hi), "f"(lo));
  return d;
#else
  return static_cast<unsigned>(__nv_cvt_float_to_fp8(lo, __NV_SATFINITE, __NV_E4M3)) |
         static_cast<unsigned>(__nv_cvt_float_to_fp8(hi, __NV_SATFINITE, __NV_E4M3)) << 8;
#endif
}

}  // namespace

// x (M,K) bf16 bits, q (M,K) e4m3, scales (M,K/32) e8m0, row-major. K % 32 == 0, so the blocks
// of 32 elements run flat through memory: block b is x[32b, 32b+32), its scale scales[b].
extern "C" __global__ void __launch_bounds__(kThreads)
    sm90_bf16_mxfp8_quantize_rowwise_vectorized(const unsigned short* __restrict__ x,
                                                unsigned char* __restrict__ q,
                                                unsigned char* __restrict__ scales, int M, int K) {
  const long long num_blocks = static_cast<long long>(M) * (K / kBlockElems);
  const int lane = threadIdx.x % 32;
  const int lane_in_block = lane % kLanes;
  const long long warp = (static_cast<long long>(blockIdx.x) * kThreads + threadIdx.x) / 32;
  // Block u of this lane: warp tile, then u-th group of 32 / kLanes blocks, then lane / kLanes.
  const long long first_block = warp * kWarpBlocks + lane / kLanes;

  // All loads first. Blocks past the end read as zeros (a block's lanes are in or out together)
  // and are not stored; their lanes still take part in the shuffles.
  unsigned w[kBlocks][kWords];
#pragma unroll
  for (int u = 0; u < kBlocks; ++u) {
    const long long b = first_block + u * (32 / kLanes);
#pragma unroll
    for (int k = 0; k < kWords; ++k) w[u][k] = 0;
    if (b < num_blocks) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        load_vector(x + b * kBlockElems + (i * kLanes + lane_in_block) * kVecElems, i, w[u]);
      }
    }
  }

#pragma unroll
  for (int u = 0; u < kBlocks; ++u) {
    const long long b = first_block + u * (32 / kLanes);

    // amax as bf16 bits: |x| is x & 0x7FFF, and on these bits integer order is magnitude order
    // (NaNs sort above +Inf).
    unsigned amax = 0;
#pragma unroll
    for (int k = 0; k < kWords; ++k) {
      amax = max(amax, max(w[u][k] & 0x7FFFu, (w[u][k] >> 16) & 0x7FFFu));
    }
#pragma unroll
    for (int o = 1; o < kLanes; o *= 2) amax = max(amax, __shfl_xor_sync(kFullMask, amax, o));

    // NaN always, and +-Inf under floor, give scale 0xFF and all q 0x7F.
    const bool special = kFloor ? amax >= kBf16Inf : amax > kBf16Inf;
    const unsigned s = special ? kScaleNaN : (kFloor ? floor_scale(amax) : rceil_scale(amax));
    // 2^(127-S) as fp32 bits; S = 254 gives the subnormal 2^-127 (so the multiply must not FTZ).
    const unsigned r_exp = special ? 127u : 254u - s;
    const float r = __uint_as_float(r_exp != 0 ? r_exp << 23 : 0x00400000u);

    unsigned qw[kElems / 4];
#pragma unroll
    for (int k = 0; k < kWords; k += 2) {
      const unsigned lo = to_e4m3x2(__fmul_rn(__uint_as_float(w[u][k] << 16), r),
                                    __fmul_rn(__uint_as_float(w[u][k] & 0xFFFF0000u), r));
      const unsigned hi = to_e4m3x2(__fmul_rn(__uint_as_float(w[u][k + 1] << 16), r),
                                    __fmul_rn(__uint_as_float(w[u][k + 1] & 0xFFFF0000u), r));
      qw[k / 2] = special ? kE4M3NaNx4 : lo | hi << 16;
    }

    if (b < num_blocks) {
#pragma unroll
      for (int i = 0; i < kLoads; ++i) {
        store_vector(q + b * kBlockElems + (i * kLanes + lane_in_block) * kVecElems, i, qw);
      }
      if (lane_in_block == 0) scales[b] = static_cast<unsigned char>(s);
    }
  }
}
