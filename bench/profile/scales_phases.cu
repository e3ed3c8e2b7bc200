// mxfp8_scales_to_blocked's per-CTA phases; built and run by bench/profile/scales_phases.py,
// which supplies KERNEL_FILE: the kernel with its stamp points (g_stamps, 4 per CTA).
// Usage: scales_phases M K G   -> one JSON line on stdout.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <vector>

#include "cuda_check.h"
#include KERNEL_FILE

namespace {

// Reads n 16-byte words: evicts the L2 before each timed launch, as the evaluator does.
__global__ void flush_l2(const int4* p, long long n, int* sink) {
  int acc = 0;
  for (long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x; i < n;
       i += gridDim.x * static_cast<long long>(blockDim.x)) {
    acc ^= p[i].x;
  }
  if (acc == 0x12345) *sink = acc;
}

// The plain stream of the same bytes: one 16-byte load and one store per thread.
__global__ void stream(const int4* __restrict__ in, long long nin, int4* __restrict__ out,
                       long long nout) {
  const long long i = blockIdx.x * static_cast<long long>(blockDim.x) + threadIdx.x;
  int4 v = make_int4(0, 0, 0, 0);
  if (i < nin) v = __ldg(in + i);
  if (i < nout) out[i] = v;
}

double percentile(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(p * (v.size() - 1))];
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: scales_phases M K G\n");
    return 2;
  }
  const int M = atoi(argv[1]), K = atoi(argv[2]), G = atoi(argv[3]);
  const int C = K / 32, c4 = (C + 3) / 4;
  std::mt19937 rng(1);
  std::vector<unsigned char> scales(static_cast<size_t>(M) * C);
  for (auto& b : scales) b = rng() & 0xff;
  // Group ends: multiples of 32, skewed sizes, about a fifth of the groups empty, last = M.
  std::vector<double> weight(G);
  double total = 0;
  for (int g = 0; g < G; ++g) {
    weight[g] = rng() % 5 == 0 ? 0.0 : (0.5 + (rng() % 1000) / 1000.0) / std::sqrt(g + 1.0);
    total += weight[g];
  }
  std::vector<int> ends(G);
  double cum = 0;
  for (int g = 0; g < G; ++g) {
    cum += weight[g];
    ends[g] = std::min(M, static_cast<int>(cum / total * (M / 32)) * 32);
  }
  ends[G - 1] = M;
  const long long stripes = (M + 96LL * G + 127) / 128;
  const size_t out_bytes = stripes * c4 * 512;
  unsigned char *d_scales, *d_out;
  int *d_ends, *sink;
  CHECK(cudaMalloc(&d_scales, scales.size()));
  CHECK(cudaMalloc(&d_out, out_bytes));
  CHECK(cudaMalloc(&d_ends, G * sizeof(int)));
  CHECK(cudaMemcpy(d_scales, scales.data(), scales.size(), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(d_ends, ends.data(), G * sizeof(int), cudaMemcpyHostToDevice));
  const long long flush_n = (256LL << 20) / 16;
  int4* flush;
  CHECK(cudaMalloc(&flush, flush_n * 16));
  CHECK(cudaMemset(flush, 0, flush_n * 16));
  CHECK(cudaMalloc(&sink, sizeof(int)));

  // The plan's launch: grid, block, shared memory, and which instance (WIDE_C).
  const int chunks = (c4 + TILES - 1) / TILES;
  const int grid = static_cast<int>(stripes * chunks), smem = 512 * (std::min(c4, TILES) + 1);
  const bool wide = WIDE_C != 0 && C > WIDE_C;
  auto kernel = wide ? sm90_mxfp8_scales_to_blocked_wide : sm90_mxfp8_scales_to_blocked;
  CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  auto launch = [&] { kernel<<<grid, THREADS, smem>>>(d_scales, d_ends, d_out, M, C, G); };
  const long long nin = scales.size() / 16, nout = out_bytes / 16, n = std::max(nin, nout);
  auto launch_stream = [&] {
    stream<<<(n + 255) / 256, 256>>>(reinterpret_cast<const int4*>(d_scales), nin,
                                     reinterpret_cast<int4*>(d_out), nout);
  };
  cudaEvent_t start, stop;
  CHECK(cudaEventCreate(&start));
  CHECK(cudaEventCreate(&stop));
  auto median_us = [&](auto&& run) {
    std::vector<double> t;
    for (int i = 0; i < 60; ++i) {
      flush_l2<<<528, 512>>>(flush, flush_n, sink);
      CHECK(cudaEventRecord(start));
      run();
      CHECK(cudaEventRecord(stop));
      CHECK(cudaEventSynchronize(stop));
      float ms;
      CHECK(cudaEventElapsedTime(&ms, start, stop));
      if (i >= 10) t.push_back(ms * 1000.0);
    }
    return percentile(t, 0.5);
  };
  const double kernel_us = median_us(launch), stream_us = median_us(launch_stream);
  CHECK(cudaGetLastError());

  flush_l2<<<528, 512>>>(flush, flush_n, sink);
  launch();
  CHECK(cudaDeviceSynchronize());
  std::vector<unsigned long long> st(static_cast<size_t>(grid) * 4);
  CHECK(cudaMemcpyFromSymbol(st.data(), g_stamps, st.size() * sizeof(st[0])));
  unsigned long long t0 = ~0ull;
  for (int b = 0; b < grid; ++b) t0 = std::min(t0, st[b * 4]);
  const char* names[] = {"start", "find", "load_sync", "store_issue", "end"};
  std::vector<double> phase[5];
  for (int b = 0; b < grid; ++b) {
    const unsigned long long* s = &st[b * 4];
    phase[0].push_back((s[0] - t0) / 1e3);
    for (int p = 1; p < 4; ++p) phase[p].push_back((s[p] - s[p - 1]) / 1e3);
    phase[4].push_back((s[3] - t0) / 1e3);
  }
  printf("{\"M\":%d,\"K\":%d,\"G\":%d,\"grid\":%d,\"wide\":%d,\"kernel_us\":%.2f,"
         "\"stream_us\":%.2f,\"MB_in\":%.2f,\"MB_out\":%.2f",
         M, K, G, grid, wide ? 1 : 0, kernel_us, stream_us, scales.size() / 1e6, out_bytes / 1e6);
  for (int p = 0; p < 5; ++p) {
    printf(",\"%s\":[%.2f,%.2f,%.2f,%.2f,%.2f]", names[p], percentile(phase[p], 0),
           percentile(phase[p], 0.1), percentile(phase[p], 0.5), percentile(phase[p], 0.9),
           percentile(phase[p], 1.0));
  }
  printf("}\n");
  return 0;
}
