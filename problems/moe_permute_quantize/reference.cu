/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "moe_permute_clear_naive",
                "grid":  ["ceil_div(round_up(T*K + min(E, T*K)*(A-1), A), THREADS)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["row_slot", "round_up(T*K + min(E, T*K)*(A-1), A)"] },
              { "kernel": "moe_permute_count_naive",
                "grid":  ["ceil_div(E, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["idx", "workspace", "T", "E", "K"] },
              { "kernel": "moe_permute_offsets_naive",
                "grid":  ["1"], "block": ["1"], "smem": "0",
                "args":  ["workspace", "offsets", "E", "A"] },
              { "kernel": "moe_permute_assign_naive",
                "grid":  ["ceil_div(E, THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["idx", "workspace", "slot_row", "row_slot", "T", "E", "K"] },
              { "kernel": "moe_permute_quantize_naive",
                "grid":  ["ceil_div(round_up(T*K + min(E, T*K)*(A-1), A) * (H/32), THREADS)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["x", "row_slot", "q", "scales",
                          "round_up(T*K + min(E, T*K)*(A-1), A)", "H", "K"] } ],
  "workspace": { "bytes": "E * 8", "zero": false } }
*/
// Trusted GPU reference for moe_permute_quantize: the rules of spec.json in five plain steps, each
// thread doing one obvious serial job. (1) every row_slot = -1 (padding, filler); (2) one thread
// per expert counts its slots; (3) one thread computes the padded group ends (offsets) and starts;
// (4) one thread per expert walks all slots in ascending order and hands out its group's rows, so
// the order within a group is ascending slot order by construction; (5) one thread per 32-element
// block of every row: a row with a slot quantizes its token's block with
// mxfp8_quantize_rowwise's trusted reference logic (integer bit logic, copied verbatim), any other
// row writes q 0x00 and scale 0x00. Workspace: count[E], then start[E] (i32). Slow by design;
// never tune this file.
//
// Checked byte for byte against problems/moe_permute_quantize/reference.cc by
// `warpsmith problems verify`.

#if !defined(WS_ROUNDING) || !defined(WS_ROUNDING_RCEIL) || !defined(WS_ROUNDING_FLOOR)
#error "needs the parameters -DWS_ROUNDING=<0|1> -DWS_ROUNDING_RCEIL=0 -DWS_ROUNDING_FLOOR=1"
#endif
#ifndef THREADS
#define THREADS 256
#endif

#include "ref/mx_rules.cuh"

extern "C" __global__ void moe_permute_clear_naive(int* row_slot, int MP) {
  const int r = blockIdx.x * blockDim.x + threadIdx.x;
  if (r < MP)
    row_slot[r] = -1;
}

// ws = count[E] | start[E].
extern "C" __global__ void moe_permute_count_naive(const int* idx, int* ws, int T, int E, int K) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= E)
    return;
  int n = 0;
  for (long long s = 0; s < static_cast<long long>(T) * K; ++s) n += idx[s] == e ? 1 : 0;
  ws[e] = n;
}

extern "C" __global__ void moe_permute_offsets_naive(int* ws, int* offsets, int E, int A) {
  int end = 0;
  for (int e = 0; e < E; ++e) {
    ws[E + e] = end;
    end += (ws[e] + A - 1) / A * A;
    offsets[e] = end;
  }
}

extern "C" __global__ void moe_permute_assign_naive(const int* idx, const int* ws, int* slot_row,
                                                    int* row_slot, int T, int E, int K) {
  const int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e >= E)
    return;
  int r = ws[E + e];
  for (int s = 0; s < T * K; ++s) {
    if (idx[s] != e)
      continue;
    slot_row[s] = r;
    row_slot[r] = s;
    ++r;
  }
}

// x (T,H) bf16 bits, row_slot (MP), q (MP,H) e4m3, scales (MP,H/32) e8m0; one thread per block.
extern "C" __global__ void moe_permute_quantize_naive(const unsigned short* x, const int* row_slot,
                                                      unsigned char* q, unsigned char* scales,
                                                      int MP, int H, int K) {
  const long long num_blocks = static_cast<long long>(MP) * (H / kBlock);
  const long long b = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (b >= num_blocks)
    return;
  const long long row = b / (H / kBlock);
  const int col_block = static_cast<int>(b % (H / kBlock));
  unsigned char* qb = q + b * kBlock;  // (32): rows of q are H bytes, so block b starts at 32 b
  const int slot = row_slot[row];
  if (slot < 0) {
    for (int i = 0; i < kBlock; ++i) qb[i] = 0;
    scales[b] = 0;
    return;
  }
  const unsigned short* xb = x + static_cast<long long>(slot / K) * H + col_block * kBlock;

  unsigned amax = 0;  // bf16 magnitude bits
  bool nan = false;
  for (int i = 0; i < kBlock; ++i) {
    const unsigned a = xb[i] & 0x7FFFu;
    if (a > 0x7F80u)
      nan = true;
    else if (a > amax)
      amax = a;
  }

  unsigned s;
  if (nan) {
    s = kE8M0NaN;
  } else if (WS_ROUNDING == WS_ROUNDING_FLOOR) {
    s = amax == 0x7F80u ? kE8M0NaN : scale_floor(amax);
  } else {
    s = scale_rceil(amax);
  }
  scales[b] = static_cast<unsigned char>(s);

  if (s == kE8M0NaN) {
    for (int i = 0; i < kBlock; ++i) qb[i] = kE4M3NaN;
    return;
  }
  const float r = bits_to_float(s == 254 ? 0x00400000u : (254u - s) << 23);  // 2^(127-S)
  for (int i = 0; i < kBlock; ++i) {
    const float v = bits_to_float(static_cast<unsigned>(xb[i]) << 16);
    qb[i] = static_cast<unsigned char>(e4m3_from_f32(mul_f32(v, r)));
  }
}
