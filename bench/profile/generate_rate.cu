// The runner's input generation kernel (ws_generate) timed alone, as the runner launches it:
// elements per second for bf16 tensors: mx_blocks in row blocks and in tiles, and normal. Built by
// bench/profile/generate_rate.sh against the generator sources of any commit (GEN_SOURCES: the
// text of problems/init.h, evaluator/runner/digest.h and evaluator/runner/runner_kernels.cu, as
// the runner hands them to NVRTC), so two generators compare in one run.
#include GEN_SOURCES

#include <algorithm>
#include <vector>

#include "cuda_check.h"

int main(int argc, char** argv) {
  const long long numel = argc > 1 ? std::atoll(argv[1]) : 939524096LL;  // 131072 x 7168
  void* out = nullptr;
  CHECK(cudaMalloc(&out, static_cast<size_t>(numel) * 2));
  // The runner's launch (evaluator/runner/cuda_util.cc): 256-thread blocks, at most 8192.
  const long long work = GEN_THREADS(numel);
  const unsigned blocks = static_cast<unsigned>(std::clamp<long long>((work + 255) / 256, 1, 8192));
  cudaEvent_t a, b;
  CHECK(cudaEventCreate(&a));
  CHECK(cudaEventCreate(&b));
  const struct { const char* name; WsInitParams p; } dists[] = {
      {"mx_blocks", {kWsDistMxBlocks, 0, 1, 0, 0, 0, 0, 0}},
      {"normal", {kWsDistNormal, 0, 1, 0, 0, 0, 0, 0}},
      {"mx_tiles", {kWsDistMxBlocks, 0, 1, 0, 0, 7168, 0, 0}},  // 32x32 tiles of 7168 columns
  };
  std::printf("{\"numel\": %lld, \"blocks\": %u, \"rates\": {", numel, blocks);
  for (int d = 0; d < 3; ++d) {
    std::vector<float> ms;
    for (int run = 0; run < 6; ++run) {  // the first warms up
      CHECK(cudaEventRecord(a));
      ws_generate<<<blocks, 256>>>(static_cast<unsigned char*>(out), numel, kWsDtypeBF16,
                                   dists[d].p, 1000 + run, 0);
      CHECK(cudaGetLastError());
      CHECK(cudaEventRecord(b));
      CHECK(cudaEventSynchronize(b));
      float t = 0;
      CHECK(cudaEventElapsedTime(&t, a, b));
      if (run > 0) ms.push_back(t);
    }
    std::sort(ms.begin(), ms.end());
    const float med = ms[ms.size() / 2];
    std::printf("%s\"%s\": {\"median_ms\": %.3f, \"g_elements_per_s\": %.1f}", d ? ", " : "",
                dists[d].name, med, numel / (med * 1e-3) / 1e9);
  }
  std::printf("}}\n");
  CHECK(cudaFree(out));
  return 0;
}
