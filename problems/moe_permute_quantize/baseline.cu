/* warpsmith:plan
{ "knobs":  { "QUANT_THREADS": [256] },
  "launch": [ { "kernel": "moe_permute_clear_rows",
                "grid":  ["ceil_div(round_up(T*K + min(E, T*K)*(A-1), A), 256)"],
                "block": [256], "smem": "0",
                "args":  ["row_slot", "round_up(T*K + min(E, T*K)*(A-1), A)"] },
              { "kernel": "moe_permute_chunk_counts",
                "grid":  ["ceil_div(T, 256)"], "block": [256], "smem": "0",
                "args":  ["idx", "workspace", "T", "E", "K"] },
              { "kernel": "moe_permute_scan",
                "grid":  [1], "block": [1024], "smem": "0",
                "args":  ["workspace", "offsets", "T", "E", "A"] },
              { "kernel": "moe_permute_scatter",
                "grid":  ["ceil_div(T, 256)"], "block": [256], "smem": "0",
                "args":  ["idx", "workspace", "slot_row", "row_slot", "T", "E", "K"] },
              { "kernel": "moe_permute_quantize_rows",
                "grid":  ["ceil_div(round_up(T*K + min(E, T*K)*(A-1), A) * (H/32), QUANT_THREADS)"],
                "block": ["QUANT_THREADS"], "smem": "0",
                "args":  ["x", "row_slot", "q", "scales",
                          "round_up(T*K + min(E, T*K)*(A-1), A)", "H", "K"] } ],
  "workspace": { "bytes": "ceil_div(T, 256) * E * 4", "zero": false } }
*/
// Baseline for moe_permute_quantize: the kernels a competent CUDA user writes first.
//  1. row_slot = -1 everywhere (padding and filler rows stay so).
//  2. Tokens in chunks of 256 (one block each): a shared-memory histogram of the chunk's slots,
//     written to the workspace as count[chunk][expert].
//  3. One block: per expert (thread e) the total, padded to A; a shared-memory scan gives the
//     group ends (offsets) and starts; then each expert's chunk counts become the first row of
//     that chunk's slots in its group (a running sum over chunks), in place.
//  4. One block per chunk: thread e walks the chunk's slots in ascending order and hands out its
//     rows, so within a group the slots are in ascending order (chunks ascending by step 3).
//  5. One thread per 32-element block of every row: quantize the token's block as the
//     mxfp8_quantize_rowwise baseline does (fp32 amax, scale from bits, cuda_fp8.h's saturating
//     E4M3 conversion), or write zeros for rows without a slot.
// Correct, not tuned: the per-expert serial walk in step 4 and scalar 2-byte loads in step 5.

#include <cuda_bf16.h>
#include <cuda_fp8.h>

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "needs the parameters -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef QUANT_THREADS
#define QUANT_THREADS 256
#endif

namespace {
constexpr int kChunk = 256;        // tokens per chunk (block) in steps 2 and 4
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
    for (int i = 0; i < kBlock; ++i) q[b * kBlock + i] = 0;
    scales[b] = 0;
    return;
  }
  const __nv_bfloat16* xb =
      x + static_cast<long long>(slot / K) * H + (b % blocks_per_row) * kBlock;
  float v[kBlock];
  float amax = 0.0f;
  bool has_nan = false;
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    v[i] = __bfloat162float(xb[i]);
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
#pragma unroll
  for (int i = 0; i < kBlock; ++i) {
    q[b * kBlock + i] = __nv_cvt_float_to_fp8(__fmul_rn(v[i], r), __NV_SATFINITE, __NV_E4M3);
  }
}
