/* warpsmith:plan
{ "knobs":  { "QUANT_THREADS": [256, 128, 512], "VEC": [0, 1], "CHUNK": [256, 128, 64] },
  "launch": [ { "kernel": "moe_permute_clear_rows",
                "grid":  ["ceil_div(round_up(T*K + min(E, T*K)*(A-1), A), 256)"],
                "block": [256], "smem": "0",
                "args":  ["row_slot", "round_up(T*K + min(E, T*K)*(A-1), A)"] },
              { "kernel": "moe_permute_chunk_counts",
                "grid":  ["ceil_div(T, CHUNK)"], "block": [256], "smem": "0",
                "args":  ["idx", "workspace", "T", "E", "K"] },
              { "kernel": "moe_permute_scan",
                "grid":  [1], "block": [1024], "smem": "0",
                "args":  ["workspace", "offsets", "T", "E", "A"] },
              { "kernel": "moe_permute_scatter",
                "grid":  ["ceil_div(T, CHUNK)"], "block": [256], "smem": "0",
                "args":  ["idx", "workspace", "slot_row", "row_slot", "T", "E", "K"] },
              { "kernel": "moe_permute_quantize_rows",
                "grid":  ["ceil_div(round_up(T*K + min(E, T*K)*(A-1), A) * (H/32), QUANT_THREADS)"],
                "block": ["QUANT_THREADS"], "smem": "0",
                "args":  ["x", "row_slot", "q", "scales",
                          "round_up(T*K + min(E, T*K)*(A-1), A)", "H", "K"] } ],
  "workspace": { "bytes": "ceil_div(T, CHUNK) * E * 4", "zero": false } }
*/
// Starting kernel for moe_permute_quantize: the baseline's five steps (clear row_slot; per-chunk
// expert histograms; one block scanning the padded group sizes into offsets and per-chunk first
// rows; per-chunk stable scatter of the slots; one thread per 32-element block quantizing its row
// or writing zeros) with tunable knobs:
//
//  - CHUNK: tokens per block in the histogram and scatter steps (fewer tokens: more blocks, a
//    shorter serial walk per expert, more chunk counts to scan).
//  - QUANT_THREADS: threads per block of the quantize step.
//  - VEC: 1 loads a 32-element block as four 16-byte loads and stores its 32 E4M3 bytes as two
//    16-byte stores (every block starts 64-byte aligned in x and 32-byte aligned in q); 0 uses
//    scalar loads and stores as the baseline does.
//
// The defaults (CHUNK=256, QUANT_THREADS=256, VEC=0) are the baseline. The quantize step moves
// almost all the bytes (it is ~3 bytes per element, like mxfp8_quantize_rowwise, plus the filler
// rows), so VEC and a warp-cooperative layout should matter most; the routing steps are small.
// (Expectations, not yet measured on the H200.)

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "needs the parameters -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef QUANT_THREADS
#define QUANT_THREADS 256
#endif
#ifndef VEC
#define VEC 0
#endif
#ifndef CHUNK
#define CHUNK 256
#endif

namespace {
constexpr int kChunk = CHUNK;      // tokens per chunk (block) in steps 2 and 4
constexpr int kMaxExperts = 1024;  // the spec's bounds
constexpr int kMaxK = 32;
constexpr int kBlock = 32;  // elements per E8M0 scale
constexpr unsigned char kScaleNaN = 0xFF;
constexpr unsigned char kE4M3NaN = 0x7F;
}  // namespace

extern "C" __global__ void moe_permute_clear_rows(int* __restrict__ row_slot, int MP) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < MP)
    row_slot[r] = -1;
}

// ws[chunk * E + e] = slots of the chunk routed to e.
extern "C" __global__ void moe_permute_chunk_counts(const int* __restrict__ idx,
                                                    int* __restrict__ ws, int T, int E, int K) {
  __shared__ int hist[kMaxExperts];
  for (int e = threadIdx.x; e < E; e += blockDim.x) hist[e] = 0;
  __syncthreads();
  const long long first = static_cast<long long>(blockIdx.x) * kChunk * K;
  const long long last =
      min(static_cast<long long>(blockIdx.x + 1) * kChunk, static_cast<long long>(T)) * K;
  for (long long s = first + threadIdx.x; s < last; s += blockDim.x) atomicAdd(&hist[idx[s]], 1);
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x)
    ws[static_cast<long long>(blockIdx.x) * E + e] = hist[e];
}

// One block of 1024 threads; thread e handles expert e.
extern "C" __global__ void moe_permute_scan(int* __restrict__ ws, int* __restrict__ offsets, int T,
                                            int E, int A) {
  __shared__ int scan[kMaxExperts];
  const int e = threadIdx.x;
  const int chunks = (T + kChunk - 1) / kChunk;
  int total = 0;
  if (e < E) {
    for (int c = 0; c < chunks; ++c) total += ws[static_cast<long long>(c) * E + e];
  }
  const int padded = (total + A - 1) / A * A;
  scan[e] = padded;
  __syncthreads();
  for (int off = 1; off < kMaxExperts; off <<= 1) {  // inclusive Hillis-Steele scan
    const int add = e >= off ? scan[e - off] : 0;
    __syncthreads();
    scan[e] += add;
    __syncthreads();
  }
  if (e >= E)
    return;
  offsets[e] = scan[e];
  int running = scan[e] - padded;  // the group's first row
  for (int c = 0; c < chunks; ++c) {
    int* cell = ws + static_cast<long long>(c) * E + e;
    const int n = *cell;
    *cell = running;
    running += n;
  }
}

extern "C" __global__ void moe_permute_scatter(const int* __restrict__ idx,
                                               const int* __restrict__ ws,
                                               int* __restrict__ slot_row,
                                               int* __restrict__ row_slot, int T, int E, int K) {
  __shared__ int sidx[kChunk * kMaxK];
  const long long first = static_cast<long long>(blockIdx.x) * kChunk * K;
  const int n = static_cast<int>(
      min(static_cast<long long>(blockIdx.x + 1) * kChunk, static_cast<long long>(T)) * K - first);
  for (int i = threadIdx.x; i < n; i += blockDim.x) sidx[i] = idx[first + i];
  __syncthreads();
  for (int e = threadIdx.x; e < E; e += blockDim.x) {
    int r = ws[static_cast<long long>(blockIdx.x) * E + e];
    for (int i = 0; i < n; ++i) {
      if (sidx[i] != e)
        continue;
      slot_row[first + i] = r;
      row_slot[r] = static_cast<int>(first + i);
      ++r;
    }
  }
}

// x (T,H) bf16, row_slot (MP), q (MP,H) e4m3, scales (MP,H/32) e8m0; one thread per 32 elements.
extern "C" __global__ void moe_permute_quantize_rows(const __nv_bfloat16* __restrict__ x,
                                                     const int* __restrict__ row_slot,
                                                     __nv_fp8_storage_t* __restrict__ q,
                                                     unsigned char* __restrict__ scales, int MP,
                                                     int H, int K) {
  const int blocks_per_row = H / kBlock;
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= static_cast<long long>(MP) * blocks_per_row)
    return;
  const int slot = row_slot[b / blocks_per_row];
  if (slot < 0) {
#if VEC
    uint4* dst = reinterpret_cast<uint4*>(q + b * kBlock);
    dst[0] = make_uint4(0, 0, 0, 0);
    dst[1] = make_uint4(0, 0, 0, 0);
#else
    for (int i = 0; i < kBlock; ++i) q[b * kBlock + i] = 0;
#endif
    scales[b] = 0;
    return;
  }
  const __nv_bfloat16* xb =
      x + static_cast<long long>(slot / K) * H + (b % blocks_per_row) * kBlock;
  float v[kBlock];
  float amax = 0.0f;
  bool has_nan = false;
#if VEC
  {
    const uint4* src = reinterpret_cast<const uint4*>(xb);
#pragma unroll
    for (int c = 0; c < 4; ++c) {
      const uint4 u = src[c];
      const unsigned words[4] = {u.x, u.y, u.z, u.w};
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        v[8 * c + 2 * i] = __uint_as_float(words[i] << 16);
        v[8 * c + 2 * i + 1] = __uint_as_float(words[i] & 0xFFFF0000u);
      }
    }
  }
#endif
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
#if !VEC
    v[i] = __bfloat162float(xb[i]);
#endif
    has_nan |= isnan(v[i]);
    amax = fmaxf(amax, fabsf(v[i]));
  }
  int s;
  if (has_nan) {
    s = kScaleNaN;
  } else if (WS_ROUNDING == WS_ROUNDING_FLOOR) {
    if (isinf(amax))
      s = kScaleNaN;
    else if (amax == 0.0f)
      s = 0;
    else
      s = min(max(ilogbf(amax) - 8 + 127, 0), 254);
  } else {
    const float d = __fmul_rn(amax, 1.0f / 448.0f);
    const unsigned bits = __float_as_uint(d);
    const int e = static_cast<int>(bits >> 23);
    const unsigned mant = bits & 0x7FFFFF;
    if (isinf(d))
      s = 254;
    else if (e == 0)
      s = mant > 0x400000 ? 1 : 0;  // subnormal d
    else
      s = min(e + (mant != 0 ? 1 : 0), 254);
  }
  scales[b] = static_cast<unsigned char>(s);
  if (s == kScaleNaN) {
    for (int i = 0; i < kBlock; ++i) q[b * kBlock + i] = kE4M3NaN;
    return;
  }
  const float r = ldexpf(1.0f, 127 - s);  // 2^-127 is subnormal: needs no flush-to-zero
#if VEC
  unsigned packed[8];
#pragma unroll
  for (int i = 0; i < 8; ++i) {
    packed[i] = 0;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const unsigned byte =
          __nv_cvt_float_to_fp8(__fmul_rn(v[4 * i + j], r), __NV_SATFINITE, __NV_E4M3);
      packed[i] |= byte << (8 * j);
    }
  }
  uint4* dst = reinterpret_cast<uint4*>(q + b * kBlock);
  dst[0] = make_uint4(packed[0], packed[1], packed[2], packed[3]);
  dst[1] = make_uint4(packed[4], packed[5], packed[6], packed[7]);
#else
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    q[b * kBlock + i] = __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE, __NV_E4M3);
  }
#endif
}
