/* warpsmith:plan
{ "knobs":  { "THREADS": [256, 128] },
  "launch": [ { "kernel": "sm90_mxfp8_scales_blocked_zero",
                "grid":  ["ceil_div(ceil_div(M + 96 * G, 128) * ceil_div(K / 32, 4) * 512, THREADS)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["scales_blocked", "ceil_div(M + 96 * G, 128) * ceil_div(K / 32, 4) * 512"] },
              { "kernel": "sm90_mxfp8_scales_to_blocked_scatter",
                "grid":  ["ceil_div(M * (K / 32), THREADS)"], "block": ["THREADS"], "smem": "0",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] } ] }
*/
// Baseline for mxfp8_scales_to_blocked: what a competent CUDA user writes first. One kernel
// zero-fills the whole output (the pads), a second scatters: one thread per input scale finds its
// group by scanning the offsets, sums the padded sizes of the groups before it, and stores its
// byte at the blocked position. Correct, not tuned: every thread rescans the offsets (O(G) each),
// the pads are written twice over, and the scattered byte stores hit 16-byte lines apart.

// out (n bytes) = 0.
extern "C" __global__ void sm90_mxfp8_scales_blocked_zero(unsigned char* __restrict__ out, int n) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t < n) out[t] = 0;
}

// scales (M,C); group_offsets (G) end rows; out: tiles of 512 bytes. Thread t: scale t.
extern "C" __global__ void sm90_mxfp8_scales_to_blocked_scatter(
    const unsigned char* __restrict__ scales, const int* __restrict__ group_offsets,
    unsigned char* __restrict__ out, int M, int C, int G) {
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= static_cast<long long>(M) * C) return;
  const long long row = t / C, c = t % C;
  long long start = 0, padded = 0;
  for (int g = 0; g < G; ++g) {
    const long long end = group_offsets[g];
    if (row < end) break;  // row belongs to group g
    padded += (end - start + 127) / 128 * 128;
    start = end;
  }
  const long long p = padded + (row - start);  // padded row
  const long long c4 = (C + 3) / 4;
  const long long tile = (p / 128) * c4 + c / 4;
  out[tile * 512 + (p % 32) * 16 + ((p % 128) / 32) * 4 + c % 4] = scales[t];
}
