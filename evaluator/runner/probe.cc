// `ws_runner devices` and `ws_runner probe`: what GPUs there are, and their measured ceilings
// (copy bandwidth, BF16 and FP8 matrix rates) for the speed-of-light bound.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda.h>

#include <nlohmann/json.hpp>

#include "evaluator/runner/commands.h"
#include "evaluator/runner/cuda_util.h"
#include "evaluator/runner/job.h"
#include "evaluator/runner/library_baselines.h"
#include "problems/init.h"

namespace ws::runner {
namespace {

using ojson = nlohmann::ordered_json;

constexpr int kWarmup = 5;
constexpr int kReps = 20;
constexpr int64_t kGemmSize = 8192;

// Device memory freed on scope exit.
class DeviceMem {
 public:
  DeviceMem() = default;
  DeviceMem(const DeviceMem&) = delete;
  DeviceMem& operator=(const DeviceMem&) = delete;
  ~DeviceMem() { Reset(); }
  void Reset() {
    if (p_) cuMemFree(p_);
    p_ = 0;
  }
  Status Alloc(size_t bytes) {
    WS_CUDA_TRY(cuMemAlloc(&p_, bytes));
    return Status::Ok();
  }
  CUdeviceptr get() const { return p_; }
  void* ptr() const { return reinterpret_cast<void*>(p_); }

 private:
  CUdeviceptr p_ = 0;
};

// Median time of `op` in milliseconds, each repetition bracketed by its own event pair.
Result<double> MedianMs(CUstream s, const std::function<Status()>& op) {
  for (int i = 0; i < kWarmup; ++i) WS_RETURN_IF_ERROR(op());
  std::vector<CUevent> ev(2 * kReps, nullptr);
  auto destroy = [&] {
    for (CUevent e : ev) {
      if (e) cuEventDestroy(e);
    }
  };
  Status st;
  for (CUevent& e : ev) {
    if (CUresult r = cuEventCreate(&e, CU_EVENT_DEFAULT); r != CUDA_SUCCESS) {
      st = CuError(r, "cuEventCreate");
      break;
    }
  }
  for (int i = 0; st.ok() && i < kReps; ++i) {
    if (CUresult r = cuEventRecord(ev[2 * i], s); r != CUDA_SUCCESS) {
      st = CuError(r, "cuEventRecord");
    }
    if (st.ok()) st = op();
    if (st.ok()) {
      if (CUresult r = cuEventRecord(ev[2 * i + 1], s); r != CUDA_SUCCESS) {
        st = CuError(r, "cuEventRecord");
      }
    }
  }
  if (st.ok()) {
    if (CUresult r = cuStreamSynchronize(s); r != CUDA_SUCCESS) st = CuError(r, "synchronizing");
  }
  std::vector<double> ms;
  for (int i = 0; st.ok() && i < kReps; ++i) {
    float t = 0;
    if (CUresult r = cuEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]); r != CUDA_SUCCESS) {
      st = CuError(r, "cuEventElapsedTime");
    }
    ms.push_back(t);
  }
  destroy();
  if (!st.ok()) return st;
  return ComputeStats(ms).median_us;  // the stats are unit-agnostic: this is milliseconds
}

// Device-to-device copy bandwidth, bytes read plus bytes written per second.
Result<double> CopyBandwidth(const DeviceContext& dc, int64_t* copied) {
  size_t bytes = size_t{2} << 30;
  DeviceMem src, dst;
  // Smaller GPUs: halve until both buffers fit.
  while (true) {
    Status a = src.Alloc(bytes);
    Status b = a.ok() ? dst.Alloc(bytes) : a;
    if (a.ok() && b.ok()) break;
    if (bytes <= (size_t{256} << 20)) return b.Context("allocating the copy buffers");
    src.Reset();
    dst.Reset();
    bytes /= 2;
  }
  WS_CUDA_TRY(cuMemsetD32Async(src.get(), 0x3C003C00u, bytes / 4, dc.stream));
  *copied = static_cast<int64_t>(bytes);
  WS_ASSIGN_OR_RETURN(double ms, MedianMs(dc.stream, [&]() -> Status {
    WS_CUDA_TRY(cuMemcpyDtoDAsync(dst.get(), src.get(), bytes, dc.stream));
    return Status::Ok();
  }));
  return 2.0 * static_cast<double>(bytes) / (ms * 1e-3);
}

Status CublasError(cublasStatus_t s, const char* what) {
  return Status::Error("{} in {}", CublasStatusName(s), what);
}

#define WS_CUBLAS_TRY(expr)                                                   \
  do {                                                                        \
    cublasStatus_t ws_cb_s_ = (expr);                                         \
    if (ws_cb_s_ != CUBLAS_STATUS_SUCCESS) return CublasError(ws_cb_s_, #expr); \
  } while (0)

// Owns the cuBLASLt descriptors of one matmul.
struct LtMatmul {
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t a = nullptr, b = nullptr, c = nullptr;
  cublasLtMatmulPreference_t pref = nullptr;
  ~LtMatmul() {
    if (pref) cublasLtMatmulPreferenceDestroy(pref);
    if (c) cublasLtMatrixLayoutDestroy(c);
    if (b) cublasLtMatrixLayoutDestroy(b);
    if (a) cublasLtMatrixLayoutDestroy(a);
    if (desc) cublasLtMatmulDescDestroy(desc);
  }
};

// D[M,N] = A^T B (TN, column-major: A is K x M, B is K x N), fp32 accumulation, bf16 output, on
// generated normal(0,1) inputs of `in_dtype`. Returns FLOP/s.
Result<double> MatmulRate(const DeviceContext& dc, const Helpers& h, cublasLtHandle_t lt,
                          bool fp8, bool fast_accum = true, bool separate_c = false) {
  const int64_t n = kGemmSize;
  const int in_dtype = fp8 ? kWsDtypeFP8E4M3 : kWsDtypeBF16;
  const cudaDataType_t in_type = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
  const size_t in_bytes = static_cast<size_t>(n * n * ws_dtype_size(in_dtype));
  constexpr size_t kWorkspace = size_t{64} << 20;
  DeviceMem a, b, c, d, ws, scales;
  WS_RETURN_IF_ERROR(a.Alloc(in_bytes));
  WS_RETURN_IF_ERROR(b.Alloc(in_bytes));
  WS_RETURN_IF_ERROR(d.Alloc(static_cast<size_t>(n * n * 2)));
  if (separate_c) WS_RETURN_IF_ERROR(c.Alloc(static_cast<size_t>(n * n * 2)));
  WS_RETURN_IF_ERROR(ws.Alloc(kWorkspace));
  // Each scale on its own 256-byte line: cuBLASLt rejects misaligned scale pointers.
  WS_RETURN_IF_ERROR(scales.Alloc(512));
  // Random data: zeros would let the tensor cores idle at lower power and flatter the rate.
  WS_RETURN_IF_ERROR(Generate(h, dc.stream, a.get(), n * n, in_dtype, kWsDistNormal, 0, 1, 1, 0));
  WS_RETURN_IF_ERROR(Generate(h, dc.stream, b.get(), n * n, in_dtype, kWsDistNormal, 0, 1, 1, 1));
  const float one = 1.0f;
  WS_CUDA_TRY(cuMemsetD32Async(scales.get(), ws_f32_bits(one), 128, dc.stream));

  LtMatmul m;
  WS_CUBLAS_TRY(cublasLtMatmulDescCreate(&m.desc, CUBLAS_COMPUTE_32F, CUDA_R_32F));
  const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
  WS_CUBLAS_TRY(
      cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
  WS_CUBLAS_TRY(
      cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
  if (fp8) {
    // Tensorwise scales (both 1.0); fast accumulation, the ceiling an FP8 kernel can reach.
    void* sa = scales.ptr();
    void* sb = reinterpret_cast<void*>(scales.get() + 256);
    const int8_t fast = fast_accum ? 1 : 0;
    WS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER,
                                                 &sa, sizeof(sa)));
    WS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER,
                                                 &sb, sizeof(sb)));
    WS_CUBLAS_TRY(cublasLtMatmulDescSetAttribute(m.desc, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                                 sizeof(fast)));
  }
  WS_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&m.a, in_type, n, n, n));
  WS_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&m.b, in_type, n, n, n));
  WS_CUBLAS_TRY(cublasLtMatrixLayoutCreate(&m.c, CUDA_R_16BF, n, n, n));
  WS_CUBLAS_TRY(cublasLtMatmulPreferenceCreate(&m.pref));
  const size_t wsb = kWorkspace;
  WS_CUBLAS_TRY(cublasLtMatmulPreferenceSetAttribute(
      m.pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
  cublasLtMatmulHeuristicResult_t heur = {};
  int found = 0;
  WS_CUBLAS_TRY(cublasLtMatmulAlgoGetHeuristic(lt, m.desc, m.a, m.b, m.c, m.c, m.pref, 1, &heur,
                                               &found));
  if (found == 0) return Status::Error("cuBLASLt found no algorithm");
  const float alpha = 1.0f, beta = 0.0f;
  auto op = [&]() -> Status {
    WS_CUBLAS_TRY(cublasLtMatmul(lt, m.desc, &alpha, a.ptr(), m.a, b.ptr(), m.b, &beta,
                                 separate_c ? c.ptr() : d.ptr(), m.c, d.ptr(), m.c, &heur.algo,
                                 ws.ptr(), kWorkspace, dc.stream));
    return Status::Ok();
  };
  WS_ASSIGN_OR_RETURN(double ms, MedianMs(dc.stream, op));
  return 2.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n) /
         (ms * 1e-3);
}

}  // namespace

int DevicesCommand() {
  CUresult r = cuInit(0);
  if (r != CUDA_SUCCESS) {
    std::fprintf(stderr, "ws_runner: no usable GPU: cuInit failed with %s\n",
                 CuErrorName(r).c_str());
    return kExitNoGpu;
  }
  int count = 0;
  r = cuDeviceGetCount(&count);
  if (r != CUDA_SUCCESS || count == 0) {
    std::fprintf(stderr, "ws_runner: no usable GPU: %s\n",
                 r != CUDA_SUCCESS ? CuErrorName(r).c_str() : "the driver lists no CUDA devices");
    return kExitNoGpu;
  }
  ojson devices = ojson::array();
  for (int i = 0; i < count; ++i) {
    auto p = QueryDevice(i);
    if (!p.ok()) {
      std::fprintf(stderr, "ws_runner: device %d: %s\n", i, p.status().message().c_str());
      return kExitNoGpu;
    }
    devices.push_back(p->ToJson());
  }
  std::printf("%s\n", ojson{{"devices", devices}}.dump().c_str());
  return kExitOk;
}

int ProbeCommand() {
  DeviceContext device;
  Helpers helper_kernels;
  if (int rc = OpenDeviceWithHelpers(&device, &helper_kernels); rc != kExitOk) return rc;
  DeviceContext* dc = &device;
  Helpers* helpers = &helper_kernels;
  int64_t copied = 0;
  auto copy = CopyBandwidth(*dc, &copied);
  if (!copy.ok()) {
    std::fprintf(stderr, "ws_runner: copy bandwidth: %s\n", copy.status().message().c_str());
    return kExitRunnerError;
  }
  cublasLtHandle_t lt = nullptr;
  if (cublasStatus_t s = cublasLtCreate(&lt); s != CUBLAS_STATUS_SUCCESS) {
    std::fprintf(stderr, "ws_runner: cublasLtCreate: %s\n", CublasStatusName(s).c_str());
    return kExitRunnerError;
  }
  auto bf16 = MatmulRate(*dc, *helpers, lt, false);
  if (!bf16.ok()) {
    std::fprintf(stderr, "ws_runner: BF16 matmul: %s\n", bf16.status().message().c_str());
    cublasLtDestroy(lt);
    return kExitRunnerError;
  }
  // cuBLASLt's FP8 support varies by version: fall back through plainer configurations.
  auto fp8 = MatmulRate(*dc, *helpers, lt, true, /*fast_accum=*/true);
  if (!fp8.ok()) fp8 = MatmulRate(*dc, *helpers, lt, true, /*fast_accum=*/false);
  if (!fp8.ok()) fp8 = MatmulRate(*dc, *helpers, lt, true, /*fast_accum=*/false, /*separate_c=*/true);
  cublasLtDestroy(lt);
  ojson out = {{"gpu", dc->props.name},
               {"arch", dc->props.arch},
               {"driver", dc->props.driver},
               {"copy_bytes_per_s", *copy},
               {"bf16_flops_per_s", *bf16},
               {"fp8_flops_per_s", fp8.ok() ? *fp8 : 0.0},
               {"copy_bytes", copied},
               {"gemm_mnk", kGemmSize}};
  if (!fp8.ok()) out["fp8_error"] = fp8.status().message();
  std::printf("%s\n", out.dump().c_str());
  return kExitOk;
}

}  // namespace ws::runner
