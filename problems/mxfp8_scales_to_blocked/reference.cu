/* warpsmith:plan
{ "knobs":  { "THREADS": [256] },
  "launch": [ { "kernel": "sm90_mxfp8_scales_to_blocked_naive",
                "grid":  ["ceil_div(ceil_div(M + 96 * G, 128) * ceil_div(K / 32, 4) * 512, THREADS)"],
                "block": ["THREADS"], "smem": "0",
                "args":  ["scales", "group_offsets", "scales_blocked", "M", "K / 32", "G"] } ] }
*/
// Trusted GPU reference for mxfp8_scales_to_blocked: one thread per output byte. It decodes its
// byte's tile, line, slot and column into (padded row p, column c), walks the groups in order
// (as reference.cc does) to find the group whose padded extent holds p, and copies the scale or
// writes the 0x00 pad. Slow by design; never tune this file. Checked byte for byte against
// reference.cc by `warpsmith problems verify mxfp8_scales_to_blocked`.

#ifndef THREADS
#define THREADS 256
#endif

// scales (M,C) e8m0; group_offsets (G) i32 end rows; out: T tiles of 512 bytes, T = stripes * C4.
extern "C" __global__ void sm90_mxfp8_scales_to_blocked_naive(const unsigned char* scales,
                                                              const int* group_offsets,
                                                              unsigned char* out, int M, int C,
                                                              int G) {
  const long long c4 = (C + 3) / 4;
  const long long stripes = (static_cast<long long>(M) + 96LL * G + 127) / 128;
  const long long t = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x;
  if (t >= stripes * c4 * 512) return;
  const long long tile = t / 512, in_tile = t % 512;
  const long long line = in_tile / 16, slot = (in_tile % 16) / 4, col = in_tile % 4;
  const long long p = (tile / c4) * 128 + slot * 32 + line;  // padded row
  const long long c = (tile % c4) * 4 + col;                 // scale column

  unsigned char value = 0x00;
  long long start = 0, padded = 0;  // the group's first input row and first padded row
  for (int g = 0; g < G; ++g) {
    const long long rows = group_offsets[g] - start;
    const long long padded_rows = (rows + 127) / 128 * 128;
    if (p < padded + padded_rows) {
      const long long r = p - padded;
      if (r < rows && c < C) value = scales[(start + r) * C + c];
      break;
    }
    start = group_offsets[g];
    padded += padded_rows;
  }
  out[t] = value;
}
