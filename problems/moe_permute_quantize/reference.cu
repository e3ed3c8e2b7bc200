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

namespace {

constexpr int kBlock = 32;  // elements per scale
constexpr unsigned kE8M0NaN = 0xFF;
constexpr unsigned kE4M3NaN = 0x7F;
constexpr unsigned kE4M3Max = 0x7E;  // 448
constexpr unsigned kF32Inf = 0x7F800000u;
constexpr unsigned kF32_448 = 0x43E00000u;

__device__ float bits_to_float(unsigned b) {
  return __uint_as_float(b);
}

// fp32 multiply, round to nearest even, subnormals kept (the rules' arithmetic).
__device__ float mul_f32(float a, float b) {
  float d;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(d) : "f"(a), "f"(b));
  return d;
}

// Position of the highest set bit of a non-zero value.
__device__ int highest_bit(unsigned v) {
  int p = 0;
  while (v >>= 1) ++p;
  return p;
}

// floor(log2(a)) of a finite non-zero bf16 magnitude, exact from its bits.
__device__ int floor_log2_bf16(unsigned a) {
  const int e = static_cast<int>(a >> 7);
  if (e != 0)
    return e - 127;
  return highest_bit(a & 0x7F) - 133;  // subnormal: value = mantissa * 2^-133
}

__device__ unsigned scale_rceil(unsigned amax_bf16) {
  const float d = mul_f32(bits_to_float(amax_bf16 << 16), 1.0f / 448.0f);
  const unsigned db = __float_as_uint(d);
  if (db == kF32Inf)
    return 254;
  // The smallest s with 2^(s-127) >= d, by search. Compare fp32 bit patterns, which order
  // non-negative values; 2^-127 (s = 0) is the subnormal 0x00400000.
  for (unsigned s = 0; s < 254; ++s) {
    const unsigned pow2 = s == 0 ? 0x00400000u : (s << 23);
    if (pow2 >= db)
      return s;
  }
  return 254;
}

__device__ unsigned scale_floor(unsigned amax_bf16) {
  if (amax_bf16 == 0)
    return 0;
  int s = floor_log2_bf16(amax_bf16) - 8 + 127;
  if (s < 0)
    s = 0;
  if (s > 254)
    s = 254;
  return static_cast<unsigned>(s);
}

// fp32 -> E4M3, round to nearest even, saturating to +-448 (Inf too). The sign is kept (-0 ->
// 0x80).
__device__ unsigned e4m3_from_f32(float v) {
  const unsigned bits = __float_as_uint(v);
  const unsigned sign = (bits >> 24) & 0x80;
  const unsigned a = bits & 0x7FFFFFFFu;
  if (a > kF32Inf)
    return sign | kE4M3NaN;
  if (a >= kF32_448)
    return sign | kE4M3Max;                        // 448 itself, above (rounds or saturates), Inf
  const int ue = static_cast<int>(a >> 23) - 127;  // fp32 subnormals: tiny, handled below
  if (ue < -10)
    return sign;                                   // |v| < 2^-10: half the smallest subnormal
  const unsigned sig = (a & 0x7FFFFF) | 0x800000;  // |v| = sig * 2^(ue-23)
  // E4M3 step: 2^(ue-3) for normals (ue >= -6), 2^-9 for subnormals.
  const int step_exp = (ue >= -6 ? ue : -6) - 3;
  const int shift = step_exp - (ue - 23);  // 20..24
  unsigned steps = sig >> shift;
  const unsigned rem = sig - (steps << shift);
  const unsigned half = 1u << (shift - 1);
  if (rem > half || (rem == half && (steps & 1)))
    ++steps;
  // steps counts multiples of 2^step_exp: for normals 8..16 (16 carries to the next binade),
  // encode = (biased exponent - 1) * 8 + steps; for subnormals step_exp = -9 and encode = steps.
  const unsigned code = static_cast<unsigned>((step_exp + 9) * 8) + steps;
  return sign | (code > kE4M3Max ? kE4M3Max : code);
}

}  // namespace

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
