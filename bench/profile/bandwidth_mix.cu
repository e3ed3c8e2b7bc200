// DRAM bandwidth by read:write mix, for the speed-of-light of write-heavy kernels (a permute that
// writes each token to K rows writes K bytes per byte read; the probed copy rate is a 1:1 mix).
// Standalone: nvcc -O3 -arch=sm_90a bench/profile/bandwidth_mix.cu -o bwmix && ./bwmix > mix.json
// (or scripts/gpu_session.sh bandwidth).
// Each pattern moves >= 3 GiB (60x the L2) per launch; median of 15 launches after 3 warm-ups.
// Rates are bytes read plus bytes written per second, as the probe's copy rate is.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "cuda_check.h"

namespace {

// Reads n 16-byte words; the sink store (never taken for this data) keeps the loads alive.
__global__ void read_only(const uint4* __restrict__ src, size_t n, uint4* sink) {
  uint32_t acc = 0;
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    uint4 v = __ldcs(src + i);
    acc ^= v.x ^ v.y ^ v.z ^ v.w;
  }
  if (acc == 0x9e3779b9u) sink[0] = make_uint4(acc, 0, 0, 0);
}

__global__ void write_only(uint4* __restrict__ dst, size_t n, bool cs) {
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < n;
       i += size_t{gridDim.x} * blockDim.x) {
    uint4 v = make_uint4(uint32_t(i), uint32_t(i >> 32), 1u, 2u);
    if (cs) __stcs(dst + i, v); else dst[i] = v;
  }
}

// Row r of src (row_words 16-byte words) goes to rows perm[r*k + j], j < k, of dst: the
// permute's shape, a row read once and written k times to scattered rows.
__global__ void fan_out(const uint4* __restrict__ src, uint4* __restrict__ dst,
                        const int* __restrict__ perm, int rows, int row_words, int k, bool cs) {
  int warp = (blockIdx.x * blockDim.x + threadIdx.x) / 32, lane = threadIdx.x % 32;
  int warps = gridDim.x * blockDim.x / 32;
  for (int r = warp; r < rows; r += warps) {
    for (int w = lane; w < row_words; w += 32) {
      uint4 v = __ldcs(src + size_t(r) * row_words + w);
      for (int j = 0; j < k; ++j) {
        uint4* p = dst + size_t(perm[size_t(r) * k + j]) * row_words + w;
        if (cs) __stcs(p, v); else *p = v;
      }
    }
  }
}

// A stream reading kIn and writing kOut 8-byte words per step, each output a function of the
// step's input (no load is dead): the quantizers' 2:1 read:write mix and dequantize's 1:2,
// beside a kernel's 1:1.
template <int kIn, int kOut>
__global__ void stream_mix(const uint2* __restrict__ src, uint2* __restrict__ dst, size_t steps) {
  static_assert((kIn == 1 || kIn == 2) && (kOut == 1 || kOut == 2), "8 or 16 bytes a side");
  for (size_t i = blockIdx.x * size_t{blockDim.x} + threadIdx.x; i < steps;
       i += size_t{gridDim.x} * blockDim.x) {
    uint4 v;
    if constexpr (kIn == 2) {
      v = __ldcs(reinterpret_cast<const uint4*>(src) + i);
    } else {
      const uint2 h = __ldcs(src + i);
      v = make_uint4(h.x, h.y, h.x ^ 0x5bd1e995u, h.y + 1u);
    }
    if constexpr (kOut == 2) {
      __stcs(reinterpret_cast<uint4*>(dst) + i, v);
    } else {
      __stcs(dst + i, make_uint2(v.x ^ v.z, v.y ^ v.w));
    }
  }
}

float median_ms(const std::vector<float>& v) {
  std::vector<float> s = v;
  std::sort(s.begin(), s.end());
  return s[s.size() / 2];
}

// `before` runs ahead of each timed launch, outside the events (an L2 flush for streams that
// fit in a few L2s, as the evaluator flushes before every timed iteration).
template <class Launch, class Before>
float time_ms(Launch launch, Before before) {
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  for (int i = 0; i < 3; ++i) launch();
  std::vector<float> ms;
  for (int i = 0; i < 15; ++i) {
    before();
    CHECK(cudaEventRecord(a));
    launch();
    CHECK(cudaEventRecord(b));
    CHECK(cudaEventSynchronize(b));
    float t = 0;
    CHECK(cudaEventElapsedTime(&t, a, b));
    ms.push_back(t);
  }
  CHECK(cudaGetLastError());
  CHECK(cudaEventDestroy(a));
  CHECK(cudaEventDestroy(b));
  return median_ms(ms);
}

template <class Launch>
float time_ms(Launch launch) {
  return time_ms(launch, [] {});
}

}  // namespace

int main() {
  int sms = 0;
  CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t bytes = size_t{3} << 30;  // per buffer
  const size_t words = bytes / 16;
  uint4 *a = nullptr, *b = nullptr;
  CHECK(cudaMalloc(&a, bytes));
  CHECK(cudaMalloc(&b, bytes));
  CHECK(cudaMemset(a, 1, bytes));
  CHECK(cudaMemset(b, 2, bytes));
  const int grid = sms * 8, block = 256;
  std::printf("{\n  \"sms\": %d,\n  \"patterns\": [\n", sms);
  auto row = [&](const char* name, double moved, float ms, bool last = false) {
    std::printf(
        "    {\"pattern\": \"%s\", \"bytes\": %.0f, \"median_ms\": %.4f, \"tb_per_s\": %.3f}%s\n",
        name, moved, ms, moved / (ms * 1e-3) / 1e12, last ? "" : ",");
  };
  row("read", double(bytes), time_ms([&] { read_only<<<grid, block>>>(a, words, b); }));
  row("write", double(bytes), time_ms([&] { write_only<<<grid, block>>>(b, words, false); }));
  row("write_cs", double(bytes), time_ms([&] { write_only<<<grid, block>>>(b, words, true); }));
  CHECK(cudaMemcpyAsync(b, a, bytes / 2, cudaMemcpyDeviceToDevice));  // warm
  row("memcpy", double(bytes), time_ms([&] {
        CHECK(cudaMemcpyAsync(b, a, bytes / 2, cudaMemcpyDeviceToDevice));
      }));
  // Read:write mixes at 3 GiB, then at the bench shapes' sizes with the L2 flushed before each
  // launch: the rowwise quantizer's 16384x2880 (2 bytes read, 1 written per element; 141.6 MB)
  // and dequantize's 16384x4096 and 65536x2880 (1 read, 2 written). Scales left out.
  uint4* flush = nullptr;
  const size_t flush_bytes = size_t{256} << 20;  // ~5x the H200's L2
  CHECK(cudaMalloc(&flush, flush_bytes));
  const auto flush_l2 = [&] { CHECK(cudaMemsetAsync(flush, 0, flush_bytes)); };
  struct Mix {
    const char* name;
    int in, out;
    size_t elements;  // 0: 3 GiB of the larger side, no flush
  };
  const Mix mixes[] = {{"stream_r2w1", 2, 1, 0},
                       {"stream_r1w2", 1, 2, 0},
                       {"stream_r2w2", 2, 2, 0},
                       {"stream_r2w1_16384x2880", 2, 1, size_t{16384} * 2880},
                       {"stream_r1w2_16384x4096", 1, 2, size_t{16384} * 4096},
                       {"stream_r1w2_65536x2880", 1, 2, size_t{65536} * 2880}};
  for (const Mix& m : mixes) {
    // A step is 8 elements of either problem: (2, 1) reads 8 bf16 and writes 8 bytes, (1, 2)
    // reads 8 bytes and writes 8 bf16.
    const size_t steps =
        m.elements ? m.elements / 8 : bytes / (8 * size_t(std::max(m.in, m.out)));
    const double moved = double(steps) * 8 * (m.in + m.out);
    const auto launch = [&] {
      const uint2* src = reinterpret_cast<const uint2*>(a);
      uint2* dst = reinterpret_cast<uint2*>(b);
      if (m.in == 2 && m.out == 1) stream_mix<2, 1><<<grid, block>>>(src, dst, steps);
      if (m.in == 1 && m.out == 2) stream_mix<1, 2><<<grid, block>>>(src, dst, steps);
      if (m.in == 2 && m.out == 2) stream_mix<2, 2><<<grid, block>>>(src, dst, steps);
    };
    row(m.name, moved, m.elements ? time_ms(launch, flush_l2) : time_ms(launch));
  }
  // The driver's copy moving the same bytes as each bench size (half read, half written), L2
  // flushed: what "copy bandwidth" reaches at that size, against the probe's 2 GiB copy.
  for (const Mix& m : mixes) {
    if (!m.elements) continue;
    const size_t half = m.elements * (m.in + m.out) / 2;
    char name[64];
    std::snprintf(name, sizeof(name), "memcpy%s", std::strrchr(m.name, '_'));
    row(name, 2.0 * double(half), time_ms([&] {
          CHECK(cudaMemcpyAsync(b, a, half, cudaMemcpyDeviceToDevice));
        }, flush_l2));
  }
  CHECK(cudaFree(flush));
  // Fan-out at the permute's row sizes: 7168-byte rows (H 7168 in e4m3 from bf16 is 2:1, here
  // 1:1 bytes per row so only the k fan-out differs), k = 1, 2, 8, rows to scattered slots.
  for (int k : {1, 2, 8}) {
    for (int cs : {0, 1}) {
      const int row_bytes = 7168, row_words = row_bytes / 16;
      const int out_rows = int(bytes / row_bytes), rows = out_rows / k;
      std::vector<int> perm(size_t(rows) * k);
      for (size_t i = 0; i < perm.size(); ++i) perm[i] = int(i);
      std::srand(7);
      for (size_t i = perm.size() - 1; i > 0; --i) {
        std::swap(perm[i], perm[size_t(std::rand()) % (i + 1)]);
      }
      int* dperm = nullptr;
      CHECK(cudaMalloc(&dperm, perm.size() * sizeof(int)));
      CHECK(cudaMemcpy(dperm, perm.data(), perm.size() * sizeof(int), cudaMemcpyHostToDevice));
      float ms = time_ms([&] {
        fan_out<<<grid, block>>>(a, b, dperm, rows, row_words, k, cs != 0);
      });
      char name[64];
      std::snprintf(name, sizeof name, "fan_out_k%d%s", k, cs ? "_cs" : "");
      row(name, double(rows) * row_bytes * (1 + k), ms, k == 8 && cs == 1);
      CHECK(cudaFree(dperm));
    }
  }
  std::printf("  ]\n}\n");
  CHECK(cudaFree(a));
  CHECK(cudaFree(b));
  return 0;
}
