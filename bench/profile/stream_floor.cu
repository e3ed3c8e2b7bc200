// The memory floor of a shape: how fast a plain streaming kernel reads R bytes and writes W
// bytes in one pass, timed by the evaluator's protocol (evaluator/evaluate.cc, runner/run.cc):
// warm-up launches for 100 ms, then 20-200 timed launches (300 ms of work), each after an
// overwrite of the output and a read-based L2 flush of 4x the L2, the median. Beside it the
// driver's copy of (R + W) / 2 bytes on the same protocol: the probe's pattern at this size.
//
// A memory-bound kernel moves at least its inputs' and outputs' bytes, in the mix its shape has;
// the probe's rate is a 1:1 mix at 2-3 GiB, which short runs and write-heavy mixes do not reach
// (bench/results/bandwidth-mix-*). So `stream_us` is what a kernel with no other work would take
// at this shape: our time over it says how far from that floor a kernel sits.
//
// Input (stdin), one pattern per line: LABEL READ_BYTES WRITE_BYTES. Output: JSON on stdout.
// Build: nvcc -O3 -arch=sm_90a bench/profile/stream_floor.cu -o stream_floor
// (bench/stream_floor.py writes the patterns from the problems' specs and runs it).
#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cuda_check.h"

namespace {

constexpr int kMaxWords = 8;  // 16-byte loads (or stores) per lane per warp tile

// One warp tile: `a` loads of 32 lanes x 16 B (512 contiguous bytes each), all issued before
// any use, then `b` stores of 512 contiguous bytes, each a function of the loads (none is dead).
__global__ void __launch_bounds__(256) stream(const uint4* __restrict__ src,
                                              uint4* __restrict__ dst, long long tiles, int a,
                                              int b) {
  const long long warp = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) >> 5;
  const int lane = threadIdx.x & 31;
  if (warp >= tiles) return;
  uint4 v[kMaxWords];
#pragma unroll
  for (int u = 0; u < kMaxWords; ++u) {
    if (u < a) v[u] = __ldg(src + (warp * a + u) * 32 + lane);
  }
  unsigned acc = 0;
#pragma unroll
  for (int u = 0; u < kMaxWords; ++u) {
    if (u < a) acc ^= v[u].x ^ v[u].y ^ v[u].z ^ v[u].w;
  }
  // Every loaded word feeds acc, so no load is dead; v is indexed by constants only (in
  // registers).
#pragma unroll
  for (int u = 0; u < kMaxWords; ++u) {
    if (u < b) dst[(warp * b + u) * 32 + lane] = make_uint4(v[0].x ^ acc, v[0].y, v[0].z, u);
  }
}

// The evaluator's flush: reading several times the L2 evicts what the previous launch left.
__global__ void flush_l2(const uint4* buf, long long words, unsigned* sink) {
  unsigned acc = 0;
  for (long long i = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; i < words;
       i += static_cast<long long>(gridDim.x) * blockDim.x) {
    const uint4 v = buf[i];
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x5157a11au) *sink = acc;
}

// The pair (a, b), both in 1..kMaxWords, whose ratio is nearest read:write.
void best_ratio(double read, double write, int& a, int& b) {
  double best = 1e30;
  for (int x = 1; x <= kMaxWords; ++x) {
    for (int y = 1; y <= kMaxWords; ++y) {
      const double err = std::fabs(std::log((x / double(y)) / (read / write)));
      if (err < best - 1e-12) best = err, a = x, b = y;
    }
  }
}

struct Protocol {
  const uint4* flush;
  long long flush_words;
  unsigned* sink;
  int sms;
};

// The evaluator's protocol around `launch`; `poison` is the output overwrite before each run.
template <class Launch, class Poison>
double median_us(const Protocol& p, Launch launch, Poison poison) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  auto once = [&] {
    poison();
    flush_l2<<<p.sms * 4, 512>>>(p.flush, p.flush_words, p.sink);
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float ms = 0;
    CHECK(cudaEventElapsedTime(&ms, a, b));
    return ms * 1e3;
  };
  const auto t0 = std::chrono::steady_clock::now();
  double last = 0;
  for (int i = 0; i < 3 || std::chrono::steady_clock::now() - t0 < std::chrono::milliseconds(100);
       ++i) {
    last = once();
  }
  const int iters = static_cast<int>(std::clamp(300000.0 / std::max(last, 1.0), 20.0, 200.0));
  std::vector<double> us;
  for (int i = 0; i < iters; ++i) us.push_back(once());
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  std::sort(us.begin(), us.end());
  return us[us.size() / 2];
}

}  // namespace

int main() {
  struct Pattern {
    std::string label;
    double read, write;
  };
  std::vector<Pattern> patterns;
  std::string label;
  double r = 0, w = 0;
  while (std::cin >> label >> r >> w) {
    if (r < 16 || w < 16) {
      std::fprintf(stderr, "stream_floor: %s: read and write need at least 16 bytes each\n",
                   label.c_str());
      return 2;
    }
    patterns.push_back({label, r, w});
  }
  if (patterns.empty()) {
    std::fprintf(stderr, "stream_floor: no patterns on stdin (LABEL READ_BYTES WRITE_BYTES)\n");
    return 2;
  }
  int dev = 0, sms = 0, l2 = 0;
  CHECK(cudaGetDevice(&dev));
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
  CHECK(cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev));
  cudaDeviceProp prop{};
  CHECK(cudaGetDeviceProperties(&prop, dev));

  double max_read = 0, max_write = 0;
  for (const Pattern& p : patterns) {
    max_read = std::max(max_read, p.read), max_write = std::max(max_write, p.write);
  }
  // A tile's a:b may round the mix: the buffers hold the larger side of either rounding.
  const size_t src_bytes = static_cast<size_t>(max_read + max_write) + (1 << 20);
  const size_t dst_bytes = src_bytes;
  uint4 *src = nullptr, *dst = nullptr, *flush = nullptr;
  unsigned* sink = nullptr;
  const long long flush_words = std::max<long long>(4LL * l2, 256LL << 20) / 16;
  CHECK(cudaMalloc(&src, src_bytes));
  CHECK(cudaMalloc(&dst, dst_bytes));
  CHECK(cudaMalloc(&flush, flush_words * 16));
  CHECK(cudaMalloc(&sink, sizeof(unsigned)));
  CHECK(cudaMemset(src, 0x3c, src_bytes));
  CHECK(cudaMemset(flush, 0, flush_words * 16));
  const Protocol proto{flush, flush_words, sink, sms};

  std::printf("{\n  \"gpu\": \"%s\",\n  \"sms\": %d,\n  \"l2_bytes\": %d,\n", prop.name, sms, l2);
  std::printf("  \"method\": \"stream: warp tiles of a 512-byte loads then b 512-byte stores "
              "(a:b nearest read:write, each side at most %d, also scaled by 2, 4, 8 while both "
              "fit: the fastest per byte is stream_us), ld.global.nc and plain stores; "
              "copy: cudaMemcpyAsync of (read + write) / 2 bytes; both on the evaluator's protocol "
              "(100 ms warm-up, 20-200 launches, output overwrite and 4x-L2 read flush before "
              "each, median). stream_us is scaled to the exact bytes where a:b rounds the "
              "mix\",\n",
              kMaxWords);
  std::printf("  \"patterns\": [\n");
  for (size_t i = 0; i < patterns.size(); ++i) {
    const Pattern& p = patterns[i];
    int a0 = 1, b0 = 1;
    best_ratio(p.read, p.write, a0, b0);
    // The same mix with more bytes in flight per lane (a:b scaled by m while both fit): the
    // fastest is the floor, so the floor does not hinge on one choice of loads per lane.
    double best_us = 0;
    int best_a = a0, best_b = b0;
    double best_moved = 0;
    for (int m = 1; m * std::max(a0, b0) <= kMaxWords; m *= 2) {
      const int a = a0 * m, b = b0 * m;
      // Tiles to read the bytes; the writes follow from a:b.
      const long long tiles = static_cast<long long>(std::ceil(p.read / (512.0 * a)));
      const double moved = 512.0 * tiles * (a + b);
      const size_t written = static_cast<size_t>(512) * tiles * b;
      const int blocks = static_cast<int>((tiles * 32 + 255) / 256);
      const double us = median_us(
          proto, [&] { stream<<<blocks, 256>>>(src, dst, tiles, a, b); },
          [&] { CHECK(cudaMemsetAsync(dst, 0xa5, written)); });
      // Compared per byte: a:b rounds the mix, and tiles round the bytes.
      if (best_us == 0 || us / moved < best_us / best_moved) {
        best_us = us, best_a = a, best_b = b, best_moved = moved;
      }
    }
    const size_t half = static_cast<size_t>((p.read + p.write) / 2) / 16 * 16;
    const double copy_us = median_us(
        proto, [&] { CHECK(cudaMemcpyAsync(dst, src, half, cudaMemcpyDeviceToDevice)); },
        [&] { CHECK(cudaMemsetAsync(dst, 0xa5, half)); });
    const double exact = p.read + p.write;
    std::printf("    {\"label\": \"%s\", \"read_bytes\": %.0f, \"write_bytes\": %.0f, "
                "\"a\": %d, \"b\": %d, \"moved_bytes\": %.0f, \"stream_us\": %.3f, "
                "\"copy_us\": %.3f}%s\n",
                p.label.c_str(), p.read, p.write, best_a, best_b, best_moved,
                best_us * exact / best_moved, copy_us * exact / (2.0 * half),
                i + 1 < patterns.size() ? "," : "");
    std::fflush(stdout);
  }
  std::printf("  ]\n}\n");
  CHECK(cudaFree(src));
  CHECK(cudaFree(dst));
  CHECK(cudaFree(flush));
  CHECK(cudaFree(sink));
  return 0;
}
