// Development harness for mxfp8_quantize_rowwise (H200, sm_90a).
//
// Compiles the candidates (kernels/mxfp8_quantize_rowwise/kernel.cu, the problem's baseline.cu and
// reference.cu) with NVRTC, the evaluator's way (-default-device, --std=c++17, -D knobs and
// WS_ROUNDING), checks every byte of q and scales against the CPU reference
// (problems/mxfp8_quantize_rowwise/reference.cc) on stress inputs, then times each kernel: CUDA
// events around one launch, an L2 flush (memset of 256 MiB, > 4x L2) before every timed
// iteration, two rotated input/output sets, median. Also measures the device copy bandwidth
// (cudaMemcpy D2D of 2 GiB, read + write counted) in the same run.
//
// Build and run: bench/dev/run_mxfp8_quantize_rowwise.sh. `--compile-only` needs no GPU.
//
// The launch geometry mirrors each file's plan (hard-coded below; the real evaluator reads it);
// knob defaults are read from the plan's "knobs" object.

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <future>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime.h>
#include <nvrtc.h>

#include "problems/mxfp8_quantize_rowwise/reference.h"

#define WS_CHECK_CUDA(expr)                                                                  \
  do {                                                                                       \
    cudaError_t err_ = (expr);                                                               \
    if (err_ != cudaSuccess) {                                                               \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #expr,                     \
                   cudaGetErrorString(err_));                                                \
      std::exit(1);                                                                          \
    }                                                                                        \
  } while (0)

namespace {

using Knobs = std::map<std::string, int64_t>;

// ---- plan knobs (minimal parse of the "knobs" object) -------------------------------------------

std::string ReadFile(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    std::fprintf(stderr, "cannot read %s\n", path.c_str());
    std::exit(1);
  }
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// Returns name -> first (default) value of each knob in the plan comment.
Knobs PlanDefaultKnobs(const std::string& src) {
  Knobs out;
  size_t p = src.find("\"knobs\"");
  if (p == std::string::npos) return out;
  p = src.find('{', p);
  const size_t end = src.find('}', p);
  while (true) {
    const size_t q0 = src.find('"', p);
    if (q0 == std::string::npos || q0 > end) break;
    const size_t q1 = src.find('"', q0 + 1);
    const std::string name = src.substr(q0 + 1, q1 - q0 - 1);
    const size_t lb = src.find('[', q1);
    out[name] = std::strtoll(src.c_str() + lb + 1, nullptr, 10);
    p = src.find(']', lb);
  }
  return out;
}

// ---- candidates ---------------------------------------------------------------------------------

struct Geometry {
  int64_t grid = 1, block = 1;
};

struct Variant {
  std::string label;   // "kernel", "baseline", "reference", "kernel[CHUNKS=2]"
  std::string file;    // path relative to the repo root
  std::string kernel;  // entry point
  Knobs knobs;         // full knob set (plan defaults + overrides)
  std::function<Geometry(int64_t m, int64_t k, const Knobs&, int num_sms)> geometry;
  bool sweep = false;  // a knob variant of kernel.cu (checked on device against the reference)
};

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

Geometry ThreadPerBlockGeometry(int64_t m, int64_t k, const Knobs& kn, int) {
  return {CeilDiv(m * (k / 32), kn.at("THREADS")), kn.at("THREADS")};
}

// kernel.cu's plan: min(ceil_div(M*K, 8*CHUNKS*THREADS), num_sms*CTAS_PER_SM), THREADS.
Geometry KernelGeometry(int64_t m, int64_t k, const Knobs& kn, int num_sms) {
  return {std::min(CeilDiv(m * k, 8 * kn.at("CHUNKS") * kn.at("THREADS")),
                   int64_t{num_sms} * kn.at("CTAS_PER_SM")),
          kn.at("THREADS")};
}

struct Compiled {
  std::vector<char> cubin;
  std::string log;
  bool ok = false;
};

Compiled CompileNvrtc(const std::string& src, const std::string& name, const std::string& arch,
                      int rounding, const Knobs& knobs, const std::string& cuda_include) {
  Compiled out;
  std::vector<std::string> opts = {"--gpu-architecture=" + arch, "--std=c++17", "-default-device",
                                   "-lineinfo", "-Xptxas=-v", "-DWS_NVRTC=1",
                                   "-DWS_ROUNDING_RCEIL=0", "-DWS_ROUNDING_FLOOR=1",
                                   "-DWS_ROUNDING=" + std::to_string(rounding),
                                   "-I" + cuda_include, "-I" + cuda_include + "/cccl"};
  for (const auto& [k, v] : knobs) opts.push_back("-D" + k + "=" + std::to_string(v));
  std::vector<const char*> argv;
  for (const auto& o : opts) argv.push_back(o.c_str());
  nvrtcProgram prog;
  if (nvrtcCreateProgram(&prog, src.c_str(), name.c_str(), 0, nullptr, nullptr) != NVRTC_SUCCESS) {
    out.log = "nvrtcCreateProgram failed";
    return out;
  }
  const nvrtcResult rc = nvrtcCompileProgram(prog, static_cast<int>(argv.size()), argv.data());
  size_t log_size = 0;
  nvrtcGetProgramLogSize(prog, &log_size);
  out.log.resize(log_size);
  if (log_size) nvrtcGetProgramLog(prog, out.log.data());
  while (!out.log.empty() && (out.log.back() == '\0' || out.log.back() == '\n')) out.log.pop_back();
  if (rc == NVRTC_SUCCESS) {
    size_t n = 0;
    nvrtcGetCUBINSize(prog, &n);
    out.cubin.resize(n);
    nvrtcGetCUBIN(prog, out.cubin.data());
    out.ok = n > 0;
  } else {
    out.log = std::string(nvrtcGetErrorString(rc)) + "\n" + out.log;
  }
  nvrtcDestroyProgram(&prog);
  return out;
}

// "ptxas info    : Used 30 registers, ..." -> 30
int RegistersFromLog(const std::string& log) {
  const size_t p = log.find("Used ");
  return p == std::string::npos ? -1 : std::atoi(log.c_str() + p + 5);
}

struct Loaded {
  cudaLibrary_t lib = nullptr;
  cudaKernel_t fn = nullptr;
  int registers = -1;
};

// ---- stress inputs (generated on the GPU, deterministic in (seed, index)) ------------------------

__device__ __host__ inline uint64_t SplitMix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

__device__ inline uint16_t FloatToBf16Rne(float f) {
  const uint32_t b = __float_as_uint(f);
  if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0x7FC0;
  return static_cast<uint16_t>((b + 0x7FFFu + ((b >> 16) & 1u)) >> 16);
}

__device__ inline float Normal(uint64_t h) {
  const float u1 = (static_cast<float>(h >> 40) + 1.0f) * (1.0f / 16777216.0f);  // (0,1]
  const float u2 = static_cast<float>((h >> 16) & 0xFFFFFF) * (1.0f / 16777216.0f);
  return sqrtf(-2.0f * logf(u1)) * cospif(2.0f * u2);
}

__device__ inline uint16_t Special(uint64_t h) {
  constexpr uint16_t kSpecials[] = {
      0x0000, 0x8000,          // +-0
      0x7F80, 0xFF80,          // +-Inf
      0x7FC0, 0xFFC0, 0x7F81,  // NaNs (quiet, negative, signalling payload)
      0x7F7F, 0xFF7F,          // +-bf16 max
      0x0001, 0x8001, 0x007F,  // subnormals
      0x0080, 0x8080,          // smallest normals
      0x43E0, 0xC3E0,          // +-448
      0x3F80, 0x4380,          // 1, 256
  };
  return kSpecials[h % (sizeof(kSpecials) / sizeof(kSpecials[0]))];
}

// Each 32-element block draws a category from its hash: normals at a modest or a wide range of
// scales, zeros, bf16 subnormals, 448*2^k boundaries (and +-1 ulp) as the block max, powers of two,
// raw random bit patterns (NaN, Inf and all), normals sprinkled with specials, huge magnitudes.
__global__ void GenerateStressInput(uint16_t* x, int64_t n, uint64_t seed) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const uint64_t hb = SplitMix64(seed ^ SplitMix64(static_cast<uint64_t>(i / 32)));
    const uint64_t he = SplitMix64(seed * 31 + static_cast<uint64_t>(i));
    const int cat = static_cast<int>(hb % 100);
    const int lane = static_cast<int>(i % 32);
    uint16_t v;
    if (cat < 70) {
      v = FloatToBf16Rne(ldexpf(Normal(he), static_cast<int>((hb >> 8) % 41) - 20));
    } else if (cat < 76) {
      v = FloatToBf16Rne(ldexpf(Normal(he), static_cast<int>((hb >> 8) % 268) - 140));
    } else if (cat < 78) {
      v = (he & 1) ? 0x8000 : 0x0000;
    } else if (cat < 80) {
      v = static_cast<uint16_t>(((he >> 8) % 128) | ((he & 1) << 15));
    } else if (cat < 84) {
      // One element is 448 * 2^k (+-1 ulp), k in [-130, 7]; the rest are smaller.
      const int k = static_cast<int>((hb >> 8) % 138) - 130;
      if (lane == static_cast<int>((hb >> 20) % 32)) {
        const int ulp = static_cast<int>((hb >> 28) % 3) - 1;
        const float boundary = ldexpf(448.0f, k);
        uint16_t b = FloatToBf16Rne(boundary);
        b = static_cast<uint16_t>(b + ulp);
        v = static_cast<uint16_t>(b | ((hb >> 40) & 1) << 15);
      } else {
        v = FloatToBf16Rne(ldexpf(Normal(he), k + 6) * 0.25f);
      }
    } else if (cat < 88) {
      const int k = static_cast<int>((hb >> 8) % 40) - 20 + static_cast<int>((he >> 8) % 8);
      v = FloatToBf16Rne(ldexpf((he & 1) ? -1.0f : 1.0f, k));
      if ((hb >> 30) % 4 == 0) v = static_cast<uint16_t>((1u << ((he >> 4) % 7)) | ((he & 1) << 15));
    } else if (cat < 92) {
      v = static_cast<uint16_t>(he >> 48);
    } else if (cat < 97) {
      v = (he % 8 == 0) ? Special(he >> 8)
                        : FloatToBf16Rne(ldexpf(Normal(he), static_cast<int>((hb >> 8) % 41) - 20));
    } else {
      v = FloatToBf16Rne(ldexpf(Normal(he), 120 + static_cast<int>((hb >> 8) % 8)));
    }
    x[i] = v;
  }
}

__global__ void CountMismatches(const uint8_t* a, const uint8_t* b, int64_t n,
                                unsigned long long* count) {
  unsigned long long local = 0;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    local += a[i] != b[i];
  }
  if (local) atomicAdd(count, local);
}

// ---- helpers ------------------------------------------------------------------------------------

struct Shape {
  int64_t m, k;
};

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void CpuReference(const std::vector<uint16_t>& x, int64_t m, int64_t k, int rounding,
                  std::vector<uint8_t>& q, std::vector<uint8_t>& s) {
  q.assign(m * k, 0);
  s.assign(m * k / 32, 0);
  const int threads = std::max(1u, std::thread::hardware_concurrency());
  std::vector<std::thread> pool;
  const int64_t rows_per = CeilDiv(m, threads);
  for (int t = 0; t < threads; ++t) {
    const int64_t r0 = t * rows_per, r1 = std::min(m, r0 + rows_per);
    if (r0 >= r1) break;
    pool.emplace_back([&, r0, r1] {
      ws::mxfp8::QuantizeRowwise(x.data() + r0 * k, r1 - r0, k,
                                 static_cast<ws::mxfp8::Rounding>(rounding), q.data() + r0 * k,
                                 s.data() + r0 * (k / 32));
    });
  }
  for (auto& th : pool) th.join();
}

struct Buffers {
  uint16_t* x = nullptr;
  uint8_t* q = nullptr;
  uint8_t* s = nullptr;
};

struct Row {  // one (variant, shape, mode) result
  std::string variant, mode;
  Shape shape;
  std::string check;  // "ok", "MISMATCH ...", "-"
  double us = 0, tbps = 0;
  int registers = -1;
  int64_t grid = 0, block = 0;
};

std::string Json(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') o += '\\';
    if (c == '\n') {
      o += "\\n";
      continue;
    }
    o += c;
  }
  return o + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  std::string repo = ".", out_dir = ".", cubin_dir = ".";
  std::string cuda_include = "/usr/local/cuda/include";
  bool compile_only = false, sweep = true;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--repo") repo = argv[++i];
    else if (a == "--out") out_dir = argv[++i];
    else if (a == "--cubin-dir") cubin_dir = argv[++i];
    else if (a == "--cuda-include") cuda_include = argv[++i];
    else if (a == "--compile-only") compile_only = true;
    else if (a == "--no-sweep") sweep = false;
  }
  const char* kModes[2] = {"rceil", "floor"};

  // ---- variants ----
  const std::string kernel_file = "kernels/mxfp8_quantize_rowwise/kernel.cu";
  const std::string baseline_file = "problems/mxfp8_quantize_rowwise/baseline.cu";
  const std::string reference_file = "problems/mxfp8_quantize_rowwise/reference.cu";
  std::map<std::string, std::string> sources = {
      {kernel_file, ReadFile(repo + "/" + kernel_file)},
      {baseline_file, ReadFile(repo + "/" + baseline_file)},
      {reference_file, ReadFile(repo + "/" + reference_file)}};
  std::vector<Variant> variants = {
      {"reference", reference_file, "sm90_bf16_mxfp8_quantize_rowwise_naive",
       PlanDefaultKnobs(sources[reference_file]), ThreadPerBlockGeometry},
      {"baseline", baseline_file, "sm90_bf16_mxfp8_quantize_rowwise_thread_per_block",
       PlanDefaultKnobs(sources[baseline_file]), ThreadPerBlockGeometry},
      {"kernel", kernel_file, "sm90_bf16_mxfp8_quantize_rowwise",
       PlanDefaultKnobs(sources[kernel_file]), KernelGeometry},
  };
  if (sweep) {
    // One knob at a time around the plan's defaults, plus a few pairs.
    // Around the plan's defaults (CHUNKS=2, THREADS=512, LOAD_HINT=0): the geometry, the load
    // flavours that lost on 2026-11-30, the scale-store scheme, a persistent grid.
    const std::vector<Knobs> overrides = {
        {{"CHUNKS", 4}, {"THREADS", 256}},
        {{"CHUNKS", 4}, {"THREADS", 128}},
        {{"CHUNKS", 2}, {"THREADS", 128}},
        {{"CHUNKS", 3}, {"THREADS", 256}},
        {{"CHUNKS", 8}, {"THREADS", 128}},
        {{"LOAD_HINT", 3}},
        {{"LOAD_HINT", 1}},
        {{"STORE_CS", 0}},
        {{"SCALE_STORE", 1}},
        {{"CTAS_PER_SM", 8}},
    };
    for (const auto& o : overrides) {
      Variant v = variants[2];
      std::string label = "kernel[";
      for (const auto& [k, val] : o) {
        v.knobs[k] = val;
        label += (label.back() == '[' ? "" : ",") + k + "=" + std::to_string(val);
      }
      v.label = label + "]";
      v.sweep = true;
      variants.push_back(v);
    }
  }

  // ---- compile everything (both modes; sm_90a, plus sm_100a for kernel.cu) in parallel ----
  struct Job {
    size_t variant;
    int mode;
    std::string arch;
    std::future<Compiled> result;
  };
  std::vector<Job> jobs;
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<std::string> archs = {"sm_90a"};
      if (vi == 2) archs.push_back("sm_100a");
      for (const auto& arch : archs) {
        const Variant& v = variants[vi];
        jobs.push_back({vi, mode, arch,
                        std::async(std::launch::async, CompileNvrtc, sources[v.file], v.file, arch,
                                   mode, v.knobs, cuda_include)});
      }
    }
  }
  std::map<std::pair<size_t, int>, Compiled> cubins;  // sm_90a only
  bool compile_failed = false;
  for (auto& j : jobs) {
    Compiled c = j.result.get();
    const Variant& v = variants[j.variant];
    std::printf("compile %-44s %-5s %-7s %s regs=%d\n", v.label.c_str(), kModes[j.mode],
                j.arch.c_str(), c.ok ? "ok" : "FAILED", RegistersFromLog(c.log));
    if (!c.ok || c.log.find("warning") != std::string::npos) std::printf("%s\n", c.log.c_str());
    compile_failed |= !c.ok;
    if (j.arch == "sm_90a") cubins[{j.variant, j.mode}] = std::move(c);
  }
  if (compile_failed) return 1;
  {
    std::ofstream man(cubin_dir + "/cubins.json");
    man << "[\n";
    bool first = true;
    for (const auto& [key, c] : cubins) {
      const Variant& v = variants[key.first];
      if (v.file != kernel_file) continue;
      std::string path = cubin_dir + "/cubin_" + std::to_string(key.first) + "_" +
                          std::to_string(key.second) + ".cubin";
      std::ofstream(path, std::ios::binary).write(c.cubin.data(), c.cubin.size());
      man << (first ? "" : ",\n") << " {\"label\": " << Json(v.label) << ", \"mode\": "
          << Json(kModes[key.second]) << ", \"kernel\": " << Json(v.kernel)
          << ", \"path\": " << Json(path) << ", \"CHUNKS\": " << v.knobs.at("CHUNKS")
          << ", \"THREADS\": " << v.knobs.at("THREADS") << "}";
      first = false;
    }
    man << "\n]\n";
  }
  if (compile_only) return 0;

  // ---- device ----
  cudaDeviceProp prop;
  WS_CHECK_CUDA(cudaGetDeviceProperties(&prop, 0));
  const int num_sms = prop.multiProcessorCount;
  int driver_version = 0;
  cudaDriverGetVersion(&driver_version);
  std::printf("device %s, %d SMs, L2 %d MiB, CUDA driver API %d\n", prop.name, num_sms,
              prop.l2CacheSize >> 20, driver_version);

  std::map<std::pair<size_t, int>, Loaded> loaded;
  for (auto& [key, c] : cubins) {
    Loaded l;
    WS_CHECK_CUDA(cudaLibraryLoadData(&l.lib, c.cubin.data(), nullptr, nullptr, 0, nullptr,
                                      nullptr, 0));
    WS_CHECK_CUDA(cudaLibraryGetKernel(&l.fn, l.lib, variants[key.first].kernel.c_str()));
    l.registers = RegistersFromLog(c.log);
    loaded[key] = l;
  }

  cudaStream_t stream;
  WS_CHECK_CUDA(cudaStreamCreate(&stream));
  auto launch = [&](size_t vi, int mode, const Buffers& b, Shape sh) -> Geometry {
    const Variant& v = variants[vi];
    const Geometry g = v.geometry(sh.m, sh.k, v.knobs, num_sms);
    int m = static_cast<int>(sh.m), k = static_cast<int>(sh.k);
    void* args[] = {(void*)&b.x, (void*)&b.q, (void*)&b.s, &m, &k};
    WS_CHECK_CUDA(cudaLaunchKernel(reinterpret_cast<const void*>(loaded[{vi, mode}].fn),
                                   dim3(static_cast<unsigned>(g.grid)),
                                   dim3(static_cast<unsigned>(g.block)), args, 0, stream));
    WS_CHECK_CUDA(cudaGetLastError());
    return g;
  };

  const size_t kFlushBytes = size_t{256} << 20;
  void* flush = nullptr;
  WS_CHECK_CUDA(cudaMalloc(&flush, kFlushBytes));
  unsigned long long* d_count = nullptr;
  WS_CHECK_CUDA(cudaMalloc(&d_count, sizeof(unsigned long long)));

  std::vector<Row> rows;
  int failures = 0;

  // Compares device outputs with host expectations; returns "ok" or a description.
  auto compare_host = [&](const Buffers& b, Shape sh, const std::vector<uint16_t>& x,
                          const std::vector<uint8_t>& q_ref,
                          const std::vector<uint8_t>& s_ref) -> std::string {
    std::vector<uint8_t> q(sh.m * sh.k), s(sh.m * sh.k / 32);
    WS_CHECK_CUDA(cudaMemcpy(q.data(), b.q, q.size(), cudaMemcpyDeviceToHost));
    WS_CHECK_CUDA(cudaMemcpy(s.data(), b.s, s.size(), cudaMemcpyDeviceToHost));
    if (std::memcmp(q.data(), q_ref.data(), q.size()) == 0 &&
        std::memcmp(s.data(), s_ref.data(), s.size()) == 0) {
      return "ok";
    }
    int64_t bad_q = 0, bad_s = 0;
    std::string first;
    for (size_t i = 0; i < s.size(); ++i) {
      bool bad = s[i] != s_ref[i];
      bad_s += bad;
      for (int j = 0; j < 32; ++j) {
        const bool bq = q[i * 32 + j] != q_ref[i * 32 + j];
        bad_q += bq;
        bad |= bq;
      }
      if (bad && first.size() < 1500) {
        char buf[512];
        int n = std::snprintf(buf, sizeof(buf), "\n  block %zu: scale got %02x want %02x; x/got/want:",
                              i, s[i], s_ref[i]);
        for (int j = 0; j < 32 && n < 480; ++j) {
          if (q[i * 32 + j] != q_ref[i * 32 + j] || j < 2) {
            n += std::snprintf(buf + n, sizeof(buf) - n, " [%d]%04x/%02x/%02x", j, x[i * 32 + j],
                               q[i * 32 + j], q_ref[i * 32 + j]);
          }
        }
        first += buf;
      }
    }
    return "MISMATCH q=" + std::to_string(bad_q) + " scales=" + std::to_string(bad_s) + first;
  };

  auto compare_device = [&](const Buffers& a, const Buffers& b, Shape sh) -> int64_t {
    WS_CHECK_CUDA(cudaMemsetAsync(d_count, 0, sizeof(unsigned long long), stream));
    CountMismatches<<<4 * num_sms, 512, 0, stream>>>(a.q, b.q, sh.m * sh.k, d_count);
    CountMismatches<<<4 * num_sms, 512, 0, stream>>>(a.s, b.s, sh.m * sh.k / 32, d_count);
    unsigned long long n = 0;
    WS_CHECK_CUDA(cudaMemcpyAsync(&n, d_count, sizeof(n), cudaMemcpyDeviceToHost, stream));
    WS_CHECK_CUDA(cudaStreamSynchronize(stream));
    return static_cast<int64_t>(n);
  };

  auto alloc = [&](Shape sh) {
    Buffers b;
    WS_CHECK_CUDA(cudaMalloc(&b.x, sh.m * sh.k * 2));
    WS_CHECK_CUDA(cudaMalloc(&b.q, sh.m * sh.k));
    WS_CHECK_CUDA(cudaMalloc(&b.s, sh.m * sh.k / 32));
    return b;
  };
  auto release = [&](Buffers& b) {
    cudaFree(b.x);
    cudaFree(b.q);
    cudaFree(b.s);
  };
  auto poison = [&](const Buffers& b, Shape sh, int byte) {
    WS_CHECK_CUDA(cudaMemsetAsync(b.q, byte, sh.m * sh.k, stream));
    WS_CHECK_CUDA(cudaMemsetAsync(b.s, byte, sh.m * sh.k / 32, stream));
  };

  // ---- correctness on test shapes: every variant, both modes, vs the CPU reference ----
  const std::vector<Shape> test_shapes = {{1, 32},    {1, 64},     {2, 96},     {3, 160},
                                          {5, 2880},  {7, 7168},   {33, 4128},  {128, 2048},
                                          {255, 5120}, {1000, 32}, {513, 96},   {4099, 288},
                                          {65537, 32}, {1031, 7168}};
  for (size_t si = 0; si < test_shapes.size(); ++si) {
    const Shape sh = test_shapes[si];
    Buffers b = alloc(sh);
    GenerateStressInput<<<256, 256, 0, stream>>>(b.x, sh.m * sh.k, 1000 + si);
    WS_CHECK_CUDA(cudaGetLastError());
    std::vector<uint16_t> x(sh.m * sh.k);
    WS_CHECK_CUDA(cudaMemcpy(x.data(), b.x, x.size() * 2, cudaMemcpyDeviceToHost));
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<uint8_t> q_ref, s_ref;
      CpuReference(x, sh.m, sh.k, mode, q_ref, s_ref);
      for (size_t vi = 0; vi < variants.size(); ++vi) {
        poison(b, sh, 0xA5 ^ static_cast<int>(vi));
        launch(vi, mode, b, sh);
        WS_CHECK_CUDA(cudaStreamSynchronize(stream));
        const std::string r = compare_host(b, sh, x, q_ref, s_ref);
        if (r != "ok") {
          ++failures;
          std::printf("TEST %-44s %-5s %lldx%lld %s\n", variants[vi].label.c_str(), kModes[mode],
                      (long long)sh.m, (long long)sh.k, r.c_str());
        }
      }
    }
    release(b);
  }
  std::printf("test shapes: %zu shapes x 2 modes x %zu variants, %d failures\n",
              test_shapes.size(), variants.size(), failures);

  // ---- copy bandwidth (read + write), same run ----
  double copy_tbps = 0;
  {
    const size_t bytes = size_t{2} << 30;
    void *a = nullptr, *c = nullptr;
    WS_CHECK_CUDA(cudaMalloc(&a, bytes));
    WS_CHECK_CUDA(cudaMalloc(&c, bytes));
    WS_CHECK_CUDA(cudaMemset(a, 0x3C, bytes));
    std::vector<double> us;
    cudaEvent_t e0, e1;
    cudaEventCreate(&e0);
    cudaEventCreate(&e1);
    for (int it = 0; it < 13; ++it) {
      WS_CHECK_CUDA(cudaMemsetAsync(flush, it, kFlushBytes, stream));
      cudaEventRecord(e0, stream);
      WS_CHECK_CUDA(cudaMemcpyAsync(c, a, bytes, cudaMemcpyDeviceToDevice, stream));
      cudaEventRecord(e1, stream);
      WS_CHECK_CUDA(cudaEventSynchronize(e1));
      float ms = 0;
      cudaEventElapsedTime(&ms, e0, e1);
      if (it >= 3) us.push_back(ms * 1e3);
    }
    copy_tbps = 2.0 * bytes / (Median(us) * 1e-6) / 1e12;
    std::printf("copy D2D 2 GiB: %.1f us median, %.3f TB/s (read+write)\n", Median(us), copy_tbps);
    cudaFree(a);
    cudaFree(c);
  }

  // ---- bench shapes: check, then time ----
  const std::vector<Shape> bench_shapes = {{131072, 7168}, {131072, 2048}, {65536, 5120},
                                           {16384, 2880}};
  constexpr int kSets = 2;
  std::vector<double> matched_copy(bench_shapes.size(), 0.0);
  for (size_t si = 0; si < bench_shapes.size(); ++si) {
    const Shape sh = bench_shapes[si];
    const double bytes = static_cast<double>(sh.m) * sh.k * (2.0 + 1.0 + 1.0 / 32.0);
    Buffers sets[kSets], ref;
    for (int i = 0; i < kSets; ++i) {
      sets[i] = alloc(sh);
      GenerateStressInput<<<8 * num_sms, 512, 0, stream>>>(sets[i].x, sh.m * sh.k,
                                                           77 + 10 * si + i);
      WS_CHECK_CUDA(cudaGetLastError());
    }
    ref = alloc(sh);
    // Size-matched copy: read M*K*1.5 bytes and write as many (the kernel's 3 B/element), from the
    // x buffers: the ramp-up and drain a kernel of this size cannot avoid.
    {
      const size_t half = static_cast<size_t>(sh.m * sh.k) * 3 / 2;
      std::vector<double> us;
      cudaEvent_t e0, e1;
      cudaEventCreate(&e0);
      cudaEventCreate(&e1);
      for (int it = 0; it < 23; ++it) {
        WS_CHECK_CUDA(cudaMemsetAsync(flush, it, kFlushBytes, stream));
        cudaEventRecord(e0, stream);
        WS_CHECK_CUDA(cudaMemcpyAsync(sets[1].x, sets[0].x, half, cudaMemcpyDeviceToDevice, stream));
        cudaEventRecord(e1, stream);
        WS_CHECK_CUDA(cudaEventSynchronize(e1));
        float ms = 0;
        cudaEventElapsedTime(&ms, e0, e1);
        if (it >= 3) us.push_back(ms * 1e3);
      }
      matched_copy[si] = 2.0 * half / (Median(us) * 1e-6) / 1e12;
      std::printf("size-matched copy %lldx%lld (%.0f MB read + written): %.1f us, %.3f TB/s\n",
                  (long long)sh.m, (long long)sh.k, 2.0 * half / 1e6, Median(us), matched_copy[si]);
      // Regenerate set 1's input, overwritten by the copy.
      GenerateStressInput<<<8 * num_sms, 512, 0, stream>>>(sets[1].x, sh.m * sh.k, 77 + 10 * si + 1);
      WS_CHECK_CUDA(cudaGetLastError());
    }
    std::vector<uint16_t> x(sh.m * sh.k);
    WS_CHECK_CUDA(cudaMemcpy(x.data(), sets[0].x, x.size() * 2, cudaMemcpyDeviceToHost));
    for (int mode = 0; mode < 2; ++mode) {
      std::vector<uint8_t> q_ref, s_ref;
      const auto t0 = std::chrono::steady_clock::now();
      CpuReference(x, sh.m, sh.k, mode, q_ref, s_ref);
      const double cpu_s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      for (size_t vi = 0; vi < variants.size(); ++vi) {
        const Variant& v = variants[vi];
        Row row{v.label, kModes[mode], sh};
        // Check on set 0: the three delivered kernels against the CPU reference byte for byte;
        // sweep variants on the device against the (CPU-checked) GPU reference's output.
        poison(sets[0], sh, 0x5A ^ static_cast<int>(vi));
        launch(vi, mode, sets[0], sh);
        WS_CHECK_CUDA(cudaStreamSynchronize(stream));
        if (!v.sweep) {
          row.check = compare_host(sets[0], sh, x, q_ref, s_ref);
          if (vi == 0) {  // keep the reference's output for the sweep checks
            WS_CHECK_CUDA(cudaMemcpy(ref.q, sets[0].q, sh.m * sh.k, cudaMemcpyDeviceToDevice));
            WS_CHECK_CUDA(cudaMemcpy(ref.s, sets[0].s, sh.m * sh.k / 32, cudaMemcpyDeviceToDevice));
          }
        } else {
          const int64_t bad = compare_device(sets[0], ref, sh);
          row.check = bad == 0 ? "ok" : "MISMATCH " + std::to_string(bad) + " bytes vs reference.cu";
        }
        if (row.check != "ok") ++failures;

        // Time: 3 warmups, then 20 (large) to 40 (small) iterations over rotated sets.
        const int iters = bytes > 1e9 ? 20 : 40;
        std::vector<cudaEvent_t> ev(2 * iters);
        for (auto& e : ev) cudaEventCreate(&e);
        for (int w = 0; w < 3; ++w) launch(vi, mode, sets[w % kSets], sh);
        Geometry g{};
        for (int it = 0; it < iters; ++it) {
          WS_CHECK_CUDA(cudaMemsetAsync(flush, it, kFlushBytes, stream));
          cudaEventRecord(ev[2 * it], stream);
          g = launch(vi, mode, sets[it % kSets], sh);
          cudaEventRecord(ev[2 * it + 1], stream);
        }
        WS_CHECK_CUDA(cudaStreamSynchronize(stream));
        std::vector<double> us;
        for (int it = 0; it < iters; ++it) {
          float ms = 0;
          cudaEventElapsedTime(&ms, ev[2 * it], ev[2 * it + 1]);
          us.push_back(ms * 1e3);
        }
        for (auto& e : ev) cudaEventDestroy(e);
        row.us = Median(us);
        row.tbps = bytes / (row.us * 1e-6) / 1e12;
        row.registers = loaded[{vi, mode}].registers;
        row.grid = g.grid;
        row.block = g.block;
        std::printf("%-44s %-5s %6lldx%-5lld %9.1f us %6.3f TB/s %5.3f copy  regs %3d grid %8lld  %s\n",
                    row.variant.c_str(), row.mode.c_str(), (long long)sh.m, (long long)sh.k,
                    row.us, row.tbps, row.tbps / copy_tbps, row.registers, (long long)row.grid,
                    row.check.substr(0, 800).c_str());
        std::fflush(stdout);
        rows.push_back(row);
      }
      std::printf("  (cpu reference %.1f s)\n", cpu_s);
    }
    for (auto& b : sets) release(b);
    release(ref);
  }

  // ---- summary table ----
  std::printf("\n%-44s %-5s", "variant", "mode");
  for (const auto& sh : bench_shapes) std::printf(" %7lldx%-5lld", (long long)sh.m, (long long)sh.k);
  std::printf("   (TB/s, fraction of copy %.3f TB/s)\n", copy_tbps);
  for (size_t vi = 0; vi < variants.size(); ++vi) {
    for (int mode = 0; mode < 2; ++mode) {
      std::printf("%-44s %-5s", variants[vi].label.c_str(), kModes[mode]);
      for (const auto& r : rows) {
        if (r.variant == variants[vi].label && r.mode == kModes[mode]) {
          std::printf("  %5.3f(%4.3f)", r.tbps, r.tbps / copy_tbps);
        }
      }
      std::printf("\n");
    }
  }

  // ---- JSON ----
  std::ofstream js(out_dir + "/harness.json");
  js << "{\n \"device\": " << Json(prop.name) << ",\n \"num_sms\": " << num_sms
     << ",\n \"l2_bytes\": " << prop.l2CacheSize << ",\n \"cuda_driver_api\": " << driver_version
     << ",\n \"copy_TBps\": " << copy_tbps
     << ",\n \"timing\": \"CUDA events around one launch; 256 MiB memset (L2 flush) before each "
        "iteration; 2 rotated input/output sets; 3 warmups; median of 20 (bytes>1e9) or 40\""
     << ",\n \"bytes_formula\": \"M*K*(2 + 1 + 1/32)\""
     << ",\n \"test_failures\": " << failures << ",\n \"size_matched_copy_TBps\": {";
  for (size_t si = 0; si < bench_shapes.size(); ++si) {
    js << (si ? ", " : "") << "\"" << bench_shapes[si].m << "x" << bench_shapes[si].k
       << "\": " << matched_copy[si];
  }
  js << "},\n \"rows\": [\n";
  for (size_t i = 0; i < rows.size(); ++i) {
    const Row& r = rows[i];
    const Variant* v = nullptr;
    for (const auto& vv : variants) {
      if (vv.label == r.variant) v = &vv;
    }
    js << "  {\"variant\": " << Json(r.variant) << ", \"file\": " << Json(v->file)
       << ", \"kernel\": " << Json(v->kernel) << ", \"knobs\": {";
    bool first = true;
    for (const auto& [k, val] : v->knobs) {
      js << (first ? "" : ", ") << Json(k) << ": " << val;
      first = false;
    }
    js << "}, \"mode\": " << Json(r.mode) << ", \"M\": " << r.shape.m << ", \"K\": " << r.shape.k
       << ", \"us\": " << r.us << ", \"TBps\": " << r.tbps << ", \"copy_fraction\": "
       << r.tbps / copy_tbps << ", \"registers\": " << r.registers << ", \"grid\": " << r.grid
       << ", \"block\": " << r.block << ", \"check\": " << Json(r.check.substr(0, 300)) << "}"
       << (i + 1 < rows.size() ? ",\n" : "\n");
  }
  js << " ]\n}\n";
  std::printf("failures: %d\n", failures);
  return failures == 0 ? 0 : 2;
}
