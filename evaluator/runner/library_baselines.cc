#include "evaluator/runner/library_baselines.h"

#include <fmt/format.h>

#include "evaluator/runner/cuda_util.h"

namespace ws::runner {
namespace {

Status CublasError(cublasStatus_t s, std::string_view what) {
  return Status::Error("{} in {}", CublasStatusName(s), what);
}

#define WS_LT_TRY(expr)                                                           \
  do {                                                                            \
    cublasStatus_t ws_lt_s_ = (expr);                                             \
    if (ws_lt_s_ != CUBLAS_STATUS_SUCCESS) return CublasError(ws_lt_s_, #expr);   \
  } while (0)

// Row-major A [M,K] and B [N,K] seen column-major are K x M and K x N with leading dimension K;
// row-major D [M,N] is N x M with leading dimension N. So D^T = B * A^T is cuBLAS's "TN" GEMM
// with m = N, n = M: cuBLAS's A is our B and cuBLAS's B is our A. Hopper's FP8 GEMMs need exactly
// this layout (both operands K-major).
class LtGemm : public LibraryOp {
 public:
  ~LtGemm() override { Reset(); }

  void Reset() {
    if (pref_) cublasLtMatmulPreferenceDestroy(pref_);
    if (d_) cublasLtMatrixLayoutDestroy(d_);
    if (b_) cublasLtMatrixLayoutDestroy(b_);
    if (a_) cublasLtMatrixLayoutDestroy(a_);
    if (desc_) cublasLtMatmulDescDestroy(desc_);
    if (lt_) cublasLtDestroy(lt_);
    if (acc_) cuMemFree(acc_);
    pref_ = nullptr;
    a_ = b_ = d_ = nullptr;
    desc_ = nullptr;
    lt_ = nullptr;
    acc_ = 0;
  }

  // fp8: e4m3 operands with a_scale/b_scale; outer_vec: scales inside cuBLASLt, else into an
  // fp32 buffer and the epilogue kernel.
  Status Init(const LibraryJob& job, int64_t workspace_bytes, bool fp8, bool outer_vec,
              CUmodule helpers) {
    job_ = job;
    workspace_bytes_ = workspace_bytes;
    helpers_ = helpers;
    m_ = job.m;
    n_ = job.n;
    k_ = job.k;
    fp8_ = fp8;
    outer_vec_ = outer_vec;
    const cudaDataType_t in = fp8 ? CUDA_R_8F_E4M3 : CUDA_R_16BF;
    const cudaDataType_t out = fp8 && !outer_vec ? CUDA_R_32F : CUDA_R_16BF;
    WS_LT_TRY(cublasLtCreate(&lt_));
    WS_LT_TRY(cublasLtMatmulDescCreate(&desc_, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    const cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    WS_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof(ta)));
    WS_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof(tb)));
    if (fp8) {
      // torch._scaled_mm's default: no fast accumulation (promotion to fp32 inside the library).
      const int8_t fast = 0;
      WS_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_FAST_ACCUM, &fast,
                                               sizeof(fast)));
    }
    if (fp8 && outer_vec) {
      const cublasLtMatmulMatrixScale_t mode = CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F;
      WS_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_MODE, &mode,
                                               sizeof(mode)));
      WS_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_MODE, &mode,
                                               sizeof(mode)));
    }
    WS_LT_TRY(cublasLtMatrixLayoutCreate(&a_, in, k_, n_, k_));
    WS_LT_TRY(cublasLtMatrixLayoutCreate(&b_, in, k_, m_, k_));
    WS_LT_TRY(cublasLtMatrixLayoutCreate(&d_, out, n_, m_, n_));
    WS_LT_TRY(cublasLtMatmulPreferenceCreate(&pref_));
    const size_t wsb = static_cast<size_t>(workspace_bytes);
    WS_LT_TRY(cublasLtMatmulPreferenceSetAttribute(
        pref_, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsb, sizeof(wsb)));
    // The scale pointers are set per run (each input set has its own); the modes above are what
    // the heuristic needs.
    int found = 0;
    WS_LT_TRY(cublasLtMatmulAlgoGetHeuristic(lt_, desc_, a_, b_, d_, d_, pref_, 1, &heur_, &found));
    if (found == 0) return Status::Error("cuBLASLt found no algorithm");
    if (fp8 && !outer_vec) {
      WS_CUDA_TRY(cuMemAlloc(&acc_, static_cast<size_t>(m_ * n_ * 4)));
      WS_CUDA_TRY(cuModuleGetFunction(&epilogue_, helpers, "ws_outer_scale_bf16"));
    }
    return Status::Ok();
  }

  Status Run(const std::vector<CUdeviceptr>& args, CUdeviceptr workspace, int64_t workspace_bytes,
             CUstream s) override {
    Status st = RunOnce(args, workspace, workspace_bytes, s);
    if (!st.ok() && fp8_ && outer_vec_ && !settled_) {
      // The heuristic offered outer-vector scales but the call refused them: fall back to the
      // epilogue, once, on the first (check) run, so every timed run takes the same path.
      const Status outer = st;
      Reset();
      st = Init(job_, workspace_bytes_, true, false, helpers_);
      if (st.ok()) st = RunOnce(args, workspace, workspace_bytes, s);
      if (!st.ok()) return Status::Error("{} (with outer-vector scales: {})", st.message(),
                                         outer.message());
    }
    if (st.ok()) settled_ = true;
    return st;
  }

  Status RunOnce(const std::vector<CUdeviceptr>& args, CUdeviceptr workspace,
                 int64_t workspace_bytes, CUstream s) {
    const float alpha = 1.0f, beta = 0.0f;
    void* a = reinterpret_cast<void*>(args[1]);  // cuBLAS's A is our B
    void* b = reinterpret_cast<void*>(args[0]);
    const CUdeviceptr out = args.back();
    void* d = reinterpret_cast<void*>(fp8_ && !outer_vec_ ? acc_ : out);
    if (fp8_ && outer_vec_) {
      // cuBLAS's A scale runs along its m (our N): b_scale; its B scale along n (our M): a_scale.
      void* sa = reinterpret_cast<void*>(args[3]);
      void* sb = reinterpret_cast<void*>(args[2]);
      WS_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_A_SCALE_POINTER, &sa,
                                               sizeof(sa)));
      WS_LT_TRY(cublasLtMatmulDescSetAttribute(desc_, CUBLASLT_MATMUL_DESC_B_SCALE_POINTER, &sb,
                                               sizeof(sb)));
    }
    WS_LT_TRY(cublasLtMatmul(lt_, desc_, &alpha, a, a_, b, b_, &beta, d, d_, d, d_, &heur_.algo,
                             reinterpret_cast<void*>(workspace), static_cast<size_t>(workspace_bytes),
                             s));
    if (fp8_ && !outer_vec_) {
      CUdeviceptr acc = acc_, sa = args[2], sb = args[3], dst = out;
      long long m = m_, n = n_;
      void* params[] = {&acc, &sa, &sb, &dst, &m, &n};
      WS_RETURN_IF_ERROR(LaunchHelper(epilogue_, s, m_ * n_, params));
    }
    return Status::Ok();
  }

  std::string Describe() const override {
    int id = -1, tile = -1, stages = -1;
    size_t written = 0;
    cublasLtMatmulAlgoConfigGetAttribute(&heur_.algo, CUBLASLT_ALGO_CONFIG_ID, &id, sizeof(id),
                                         &written);
    cublasLtMatmulAlgoConfigGetAttribute(&heur_.algo, CUBLASLT_ALGO_CONFIG_TILE_ID, &tile,
                                         sizeof(tile), &written);
    cublasLtMatmulAlgoConfigGetAttribute(&heur_.algo, CUBLASLT_ALGO_CONFIG_STAGES_ID, &stages,
                                         sizeof(stages), &written);
    return fmt::format("cublasLt {} TN m={} n={} k={}, algo {} tile {} stages {}, workspace {}{}",
                       fp8_ ? "e4m3" : "bf16", n_, m_, k_, id, tile, stages, heur_.workspaceSize,
                       !fp8_        ? ""
                       : outer_vec_ ? "; scales: cuBLASLt outer vectors"
                                    : "; scales: fp32 output + runner epilogue");
  }

 private:
  LibraryJob job_;
  int64_t workspace_bytes_ = 0;
  CUmodule helpers_ = nullptr;
  int64_t m_ = 0, n_ = 0, k_ = 0;
  bool fp8_ = false, outer_vec_ = false;
  bool settled_ = false;  // a run succeeded: the path is fixed
  cublasLtHandle_t lt_ = nullptr;
  cublasLtMatmulDesc_t desc_ = nullptr;
  cublasLtMatrixLayout_t a_ = nullptr, b_ = nullptr, d_ = nullptr;
  cublasLtMatmulPreference_t pref_ = nullptr;
  cublasLtMatmulHeuristicResult_t heur_ = {};
  CUdeviceptr acc_ = 0;          // fallback: the fp32 product
  CUfunction epilogue_ = nullptr;
};

}  // namespace

std::string CublasStatusName(cublasStatus_t s) {
  switch (s) {
    case CUBLAS_STATUS_SUCCESS: return "CUBLAS_STATUS_SUCCESS";
    case CUBLAS_STATUS_NOT_INITIALIZED: return "CUBLAS_STATUS_NOT_INITIALIZED";
    case CUBLAS_STATUS_ALLOC_FAILED: return "CUBLAS_STATUS_ALLOC_FAILED";
    case CUBLAS_STATUS_INVALID_VALUE: return "CUBLAS_STATUS_INVALID_VALUE";
    case CUBLAS_STATUS_ARCH_MISMATCH: return "CUBLAS_STATUS_ARCH_MISMATCH";
    case CUBLAS_STATUS_EXECUTION_FAILED: return "CUBLAS_STATUS_EXECUTION_FAILED";
    case CUBLAS_STATUS_INTERNAL_ERROR: return "CUBLAS_STATUS_INTERNAL_ERROR";
    case CUBLAS_STATUS_NOT_SUPPORTED: return "CUBLAS_STATUS_NOT_SUPPORTED";
    default: return fmt::format("cublasStatus_t {}", static_cast<int>(s));
  }
}

Result<std::unique_ptr<LibraryOp>> CreateLibraryOp(const LibraryJob& job,
                                                   const std::vector<TensorJob>& tensors,
                                                   int64_t workspace_bytes, CUmodule helpers) {
  WS_RETURN_IF_ERROR(ValidateLibraryJob(job, tensors));
  const bool fp8 = job.op == "fp8_rowwise_gemm";
  auto op = std::make_unique<LtGemm>();
  Status s = op->Init(job, workspace_bytes, fp8, /*outer_vec=*/fp8, helpers);
  if (!s.ok() && fp8) {
    // This cuBLASLt or GPU has no outer-vector scales: scale in the runner's epilogue instead.
    op->Reset();
    Status fallback = op->Init(job, workspace_bytes, fp8, /*outer_vec=*/false, helpers);
    if (!fallback.ok()) {
      return Status::Error("{} (with outer-vector scales: {})", fallback.message(), s.message());
    }
    s = fallback;
  }
  if (!s.ok()) return s;
  return std::unique_ptr<LibraryOp>(std::move(op));
}

}  // namespace ws::runner
