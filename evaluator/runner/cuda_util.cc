#include "evaluator/runner/cuda_util.h"

#include "evaluator/runner/commands.h"

#include <algorithm>
#include <fstream>
#include <regex>
#include <vector>

#include "evaluator/runner/digest.h"
#include "evaluator/runner/helpers_compile.h"
#include "problems/init.h"

namespace ws::runner {

namespace {

// The full driver version from the kernel module ("580.159.04"); empty when unavailable.
std::string ModuleDriverVersion() {
  std::ifstream in("/proc/driver/nvidia/version");
  std::string line;
  if (!in || !std::getline(in, line)) return "";
  std::smatch m;
  // "NVRM version: NVIDIA UNIX x86_64 Kernel Module  580.159.04  Tue ..." (the Open module puts
  // "for x86_64" before the version, so match the first dotted number between spaces).
  static const std::regex kVersion(R"(\s([0-9]+\.[0-9]+(\.[0-9]+)?)\s)");
  if (std::regex_search(line, m, kVersion)) return m[1].str();
  return "";
}

Result<int> Attr(CUdevice d, CUdevice_attribute a, const char* what) {
  int v = 0;
  CUresult r = cuDeviceGetAttribute(&v, a, d);
  if (r != CUDA_SUCCESS) return CuError(r, what);
  return v;
}

}  // namespace

std::string CuErrorName(CUresult r) {
  const char* name = nullptr;
  if (cuGetErrorName(r, &name) == CUDA_SUCCESS && name) return name;
  return fmt::format("CUresult {}", static_cast<int>(r));
}

Status CuError(CUresult r, std::string_view what) {
  return Status::Error("{} in {}", CuErrorName(r), what);
}

nlohmann::ordered_json DeviceProps::ToJson() const {
  return {{"index", ordinal},
          {"name", name},
          {"cc", cc},
          {"arch", arch},
          {"driver", driver},
          {"num_sms", num_sms},
          {"l2_bytes", l2_bytes},
          {"memory_bytes", memory_bytes},
          {"max_threads_per_block", max_threads_per_block},
          {"max_smem_per_block", max_smem_per_block},
          {"max_grid", {max_grid[0], max_grid[1], max_grid[2]}}};
}

Result<DeviceProps> QueryDevice(int ordinal) {
  DeviceProps p;
  p.ordinal = ordinal;
  CUdevice d;
  WS_CUDA_TRY(cuDeviceGet(&d, ordinal));
  char name[256] = {};
  WS_CUDA_TRY(cuDeviceGetName(name, sizeof(name) - 1, d));
  p.name = name;
  WS_ASSIGN_OR_RETURN(int major, Attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, "cc major"));
  WS_ASSIGN_OR_RETURN(int minor, Attr(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, "cc minor"));
  p.cc = major * 10 + minor;
  // Hopper and later have architecture-specific ("a") targets; candidates compile for those.
  p.arch = fmt::format("sm_{}{}", p.cc, p.cc >= 90 ? "a" : "");
  p.driver = ModuleDriverVersion();
  if (p.driver.empty()) {
    int v = 0;
    WS_CUDA_TRY(cuDriverGetVersion(&v));
    p.driver = fmt::format("{}.{}", v / 1000, (v % 1000) / 10);
  }
  WS_ASSIGN_OR_RETURN(p.num_sms, Attr(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, "SM count"));
  WS_ASSIGN_OR_RETURN(int l2, Attr(d, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, "L2 size"));
  p.l2_bytes = l2;
  size_t mem = 0;
  WS_CUDA_TRY(cuDeviceTotalMem(&mem, d));
  p.memory_bytes = static_cast<int64_t>(mem);
  WS_ASSIGN_OR_RETURN(p.max_threads_per_block,
                      Attr(d, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK, "max threads"));
  WS_ASSIGN_OR_RETURN(int smem, Attr(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
                                     "opt-in shared memory"));
  p.max_smem_per_block = smem;
  const CUdevice_attribute grid[3] = {CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X,
                                      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y,
                                      CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z};
  for (int i = 0; i < 3; ++i) {
    WS_ASSIGN_OR_RETURN(int g, Attr(d, grid[i], "max grid"));
    p.max_grid[i] = g;
  }
  return p;
}

Result<DeviceContext> OpenDevice(int ordinal) {
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) {
    return Status::Error("no usable GPU: cuInit failed with {}", CuErrorName(r));
  }
  int count = 0;
  r = cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS) return Status::Error("no usable GPU: {}", CuErrorName(r));
  if (count == 0) return Status::Error("no usable GPU: the driver lists no CUDA devices");
  if (ordinal < 0 || ordinal >= count) {
    return Status::Error("no usable GPU: device {} requested, {} present", ordinal, count);
  }
  DeviceContext dc;
  WS_CUDA_TRY(cuDeviceGet(&dc.device, ordinal));
  WS_ASSIGN_OR_RETURN(dc.props, QueryDevice(ordinal));
  WS_CUDA_TRY(cuDevicePrimaryCtxRetain(&dc.context, dc.device));
  WS_CUDA_TRY(cuCtxSetCurrent(dc.context));
  WS_CUDA_TRY(cuStreamCreate(&dc.stream, CU_STREAM_NON_BLOCKING));
  return dc;
}

Result<Helpers> LoadHelpers(int cc) {
  Helpers h;
  // The build's cubin for this GPU when there is one (the same NVRTC compile, done once);
  // compiled here otherwise, or when that one does not load.
  for (const PrebuiltHelpers& p : PrebuiltHelperTable()) {
    if (p.cc != cc) continue;
    if (cuModuleLoadData(&h.module, p.cubin) != CUDA_SUCCESS) h.module = nullptr;
    break;
  }
  if (h.module == nullptr) {
    WS_ASSIGN_OR_RETURN(std::vector<char> cubin, CompileHelpers(cc));
    WS_CUDA_TRY(cuModuleLoadData(&h.module, cubin.data()));
  }
  WS_CUDA_TRY(cuModuleGetFunction(&h.generate, h.module, "ws_generate"));
  WS_CUDA_TRY(cuModuleGetFunction(&h.hash, h.module, "ws_hash"));
  WS_CUDA_TRY(cuModuleGetFunction(&h.digest, h.module, "ws_digest"));
  WS_CUDA_TRY(cuModuleGetFunction(&h.guard_fill, h.module, "ws_guard_fill"));
  WS_CUDA_TRY(cuModuleGetFunction(&h.guard_check, h.module, "ws_guard_check"));
  WS_CUDA_TRY(cuModuleGetFunction(&h.l2_flush, h.module, "ws_l2_flush"));
  return h;
}

Status LaunchHelper(CUfunction f, CUstream s, int64_t work, void** params, unsigned grid_y) {
  constexpr int64_t kBlock = 256;
  // Grid-stride kernels: a few thousand blocks fill any current GPU.
  int64_t blocks = std::clamp<int64_t>((work + kBlock - 1) / kBlock, 1, 8192);
  WS_CUDA_TRY(cuLaunchKernel(f, static_cast<unsigned>(blocks), grid_y, 1, kBlock, 1, 1, 0, s,
                             params, nullptr));
  return Status::Ok();
}

Status Generate(const Helpers& h, CUstream s, CUdeviceptr out, int64_t numel, int dtype,
                const WsInitParams& init, uint64_t seed, int tensor_index) {
  if (numel == 0) return Status::Ok();
  long long n = numel;
  unsigned long long sd = seed;
  WsInitParams p = init;
  void* params[] = {&out, &n, &dtype, &p, &sd, &tensor_index};
  return LaunchHelper(h.generate, s, (numel + 63) / 64 * 32, params);  // a thread per pair
}

Status Generate(const Helpers& h, CUstream s, CUdeviceptr out, int64_t numel, int dtype, int dist,
                float p0, float p1, uint64_t seed, int tensor_index) {
  return Generate(h, s, out, numel, dtype, WsInitParams{dist, p0, p1, 0, 0, 0, 0, 0}, seed,
                  tensor_index);
}

Result<uint64_t> HashDevice(const Helpers& h, CUstream s, CUdeviceptr p, int64_t bytes,
                            CUdeviceptr scratch) {
  WS_CUDA_TRY(cuMemsetD32Async(scratch, 0, 2, s));
  long long n = bytes;
  void* params[] = {&p, &n, &scratch};
  WS_RETURN_IF_ERROR(LaunchHelper(h.hash, s, bytes / 8, params));
  unsigned long long sum = 0;
  WS_CUDA_TRY(cuMemcpyDtoHAsync(&sum, scratch, sizeof(sum), s));
  WS_CUDA_TRY(cuStreamSynchronize(s));
  // The length goes in too, so trailing zero bytes still count.
  return ws_mix64(sum ^ ws_mix64(static_cast<unsigned long long>(bytes) + 0x632BE59BD9B4E019ull));
}

Result<std::array<uint64_t, 2>> DigestDevice(const Helpers& h, CUstream s, CUdeviceptr p,
                                             int64_t bytes, uint64_t key, CUdeviceptr scratch) {
  WS_CUDA_TRY(cuMemsetD32Async(scratch, 0, 4, s));
  long long n = bytes;
  unsigned long long k = key;
  void* params[] = {&p, &n, &k, &scratch};
  WS_RETURN_IF_ERROR(LaunchHelper(h.digest, s, bytes / 8, params));
  unsigned long long sums[2] = {0, 0};
  WS_CUDA_TRY(cuMemcpyDtoHAsync(sums, scratch, sizeof(sums), s));
  WS_CUDA_TRY(cuStreamSynchronize(s));
  const auto len = static_cast<unsigned long long>(bytes);
  return std::array<uint64_t, 2>{ws_digest_final(0, key, len, sums[0]),
                                 ws_digest_final(1, key, len, sums[1])};
}

int OpenDeviceWithHelpers(DeviceContext* dc, Helpers* helpers) {
  auto opened = OpenDevice(0);
  if (!opened.ok()) {
    std::fprintf(stderr, "ws_runner: %s\n", opened.status().message().c_str());
    return kExitNoGpu;
  }
  *dc = std::move(*opened);
  auto loaded = LoadHelpers(dc->props.cc);
  if (!loaded.ok()) {
    std::fprintf(stderr, "ws_runner: %s\n", loaded.status().message().c_str());
    return kExitRunnerError;
  }
  *helpers = *loaded;
  return kExitOk;
}

}  // namespace ws::runner
