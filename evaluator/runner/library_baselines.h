// Library baselines: a problem whose spec says "baseline": "cublaslt:<op>" is timed against the
// library call a user would make instead of a kernel file. The runner makes the call itself, in
// place of a plan's launches, on the case's own tensors and workspace (docs/runner-protocol.md).
//
// Ops (row-major tensors, in the order the job's "library.tensors" names them):
//   bf16_gemm         A [M,K] bf16, B [N,K] bf16 -> D [M,N] bf16;  D = A * B^T, fp32 accumulation.
//   fp8_rowwise_gemm  A [M,K] e4m3, B [N,K] e4m3, a_scale [M] f32, b_scale [N] f32 -> D [M,N] bf16;
//                     D[m,n] = (sum_k A[m,k] B[n,k]) * a_scale[m] * b_scale[n], fp32 accumulation.
// fp8_rowwise_gemm uses cuBLASLt's outer-vector scale mode (CUBLASLT_MATMUL_MATRIX_SCALE_OUTER_VEC_32F)
// where the library offers it for the GPU; otherwise an unscaled FP8 GEMM into fp32 followed by
// the runner's own epilogue kernel (ws_outer_scale_bf16) that applies both scales and rounds to
// bf16; the result says which ("path").
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <cublasLt.h>
#include <cuda.h>

#include "base/status.h"
#include "evaluator/runner/job.h"

namespace ws::runner {

/// "CUBLAS_STATUS_NOT_SUPPORTED" (cublasGetStatusName lives in libcublas, not linked here).
std::string CublasStatusName(cublasStatus_t s);

/// One prepared library call: descriptors and the chosen algorithm, reused for every run.
class LibraryOp {
 public:
  virtual ~LibraryOp() = default;
  /// Runs the call on `args` (device pointers in the op's argument order) on stream `s`.
  virtual Status Run(const std::vector<CUdeviceptr>& args, CUdeviceptr workspace,
                     int64_t workspace_bytes, CUstream s) = 0;
  /// What ran: "cublasLt bf16 TN, algo 21, tile 12, ...; path outer_vec".
  virtual std::string Describe() const = 0;
};

/// Prepares a call (cuBLASLt handle, layouts, heuristic algorithm for `workspace_bytes`).
/// `helpers` is the runner's helper module (for the FP8 epilogue fallback).
Result<std::unique_ptr<LibraryOp>> CreateLibraryOp(const LibraryJob& job,
                                                   const std::vector<TensorJob>& tensors,
                                                   int64_t workspace_bytes, CUmodule helpers);

}  // namespace ws::runner
