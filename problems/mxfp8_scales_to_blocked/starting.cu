/* warpsmith:plan
{ "knobs":  { "THREADS": [128, 64, 256], "STORE_BYTES": [16, 4] },
  "launch": [ { "kernel": "sm90_mxfp8_scales_to_blocked_stripes",
                "grid":  ["ceil_div(M + 96 * G, 128)"], "block": ["THREADS"], "smem": "0",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] } ] }
*/
// Starting kernel for mxfp8_scales_to_blocked: one CTA per 128-row output stripe (the output has
// ceil_div(M + 96 G, 128) of them). Thread 0 walks the group offsets to find which group's padded
// extent holds the stripe (or none: a tail stripe, all pad); then each thread writes whole 16-byte
// lines: line i of a tile holds rows i, i+32, i+64, i+96 of the stripe, 4 scale columns each, so
// a line is gathered from 4 input rows (byte loads: C need not be a multiple of 4) and stored as
// one 16-byte store (STORE_BYTES 16) or four 4-byte stores (4). Pads are written once, in the
// same stores. Knobs: THREADS, STORE_BYTES. Left on the table: the serial group walk per CTA
// (a prefix over G computed once, or a warp-parallel search), byte-wise gathers where C % 4 == 0
// allows 4-byte loads, and several stripes per CTA for the small-C shapes.

#ifndef THREADS
#define THREADS 128
#endif
#ifndef STORE_BYTES
#define STORE_BYTES 16
#endif

namespace {
constexpr int kThreads = THREADS;
static_assert(kThreads % 32 == 0 && kThreads <= 1024, "whole warps");
static_assert(STORE_BYTES == 16 || STORE_BYTES == 4, "store width");
}  // namespace

// scales (M,C) e8m0; group_offsets (G) i32 end rows; out: stripes * C4 tiles of 512 bytes.
extern "C" __global__ void __launch_bounds__(kThreads)
    sm90_mxfp8_scales_to_blocked_stripes(const unsigned char* __restrict__ scales,
                                         const int* __restrict__ group_offsets,
                                         unsigned char* __restrict__ out, int M, int C, int G) {
  __shared__ long long s_start;  // input row of the stripe's padded row 0
  __shared__ int s_rows;         // rows of the stripe that hold data (0 .. 128)
  const long long p0 = static_cast<long long>(blockIdx.x) * 128;  // first padded row
  if (threadIdx.x == 0) {
    long long start = 0, padded = 0;
    int rows = 0;
    long long first = 0;
    for (int g = 0; g < G; ++g) {
      const long long end = group_offsets[g];
      const long long n = end - start;
      const long long padded_n = (n + 127) / 128 * 128;
      if (p0 < padded + padded_n) {
        const long long rel = p0 - padded;  // a multiple of 128, < n
        first = start + rel;
        rows = static_cast<int>(min(n - rel, 128LL));
        break;
      }
      padded += padded_n;
      start = end;
    }
    s_start = first;
    s_rows = rows;
  }
  __syncthreads();
  const long long first = s_start;
  const int rows = s_rows;
  const int c4 = (C + 3) / 4;

  // Line l of the stripe: tile l / 32, line l % 32.
  for (int l = threadIdx.x; l < c4 * 32; l += kThreads) {
    const int ct = l / 32, line = l % 32;
    unsigned w[4];
#pragma unroll
    for (int slot = 0; slot < 4; ++slot) {
      const int r = slot * 32 + line;
      unsigned v = 0;
      if (r < rows) {
        const unsigned char* src = scales + (first + r) * C;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int c = ct * 4 + j;
          if (c < C) v |= static_cast<unsigned>(src[c]) << (8 * j);
        }
      }
      w[slot] = v;
    }
    unsigned char* dst = out + (blockIdx.x * static_cast<long long>(c4) + ct) * 512 + line * 16;
#if STORE_BYTES == 16
    *reinterpret_cast<uint4*>(dst) = make_uint4(w[0], w[1], w[2], w[3]);
#else
#pragma unroll
    for (int slot = 0; slot < 4; ++slot) reinterpret_cast<unsigned*>(dst)[slot] = w[slot];
#endif
  }
}
