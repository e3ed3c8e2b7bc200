// Host-only checks of a job's library call (evaluator/runner/library_baselines.h runs it).
#include <fmt/format.h>

#include "evaluator/runner/job.h"
#include "problems/init.h"

namespace ws::runner {

std::vector<int> LibraryOpDtypes(const std::string& op) {
  if (op == "bf16_gemm") return {kWsDtypeBF16, kWsDtypeBF16, kWsDtypeBF16};
  if (op == "fp8_rowwise_gemm") {
    return {kWsDtypeFP8E4M3, kWsDtypeFP8E4M3, kWsDtypeF32, kWsDtypeF32, kWsDtypeBF16};
  }
  return {};
}

Status ValidateLibraryJob(const LibraryJob& job, const std::vector<TensorJob>& tensors) {
  const std::vector<int> dtypes = LibraryOpDtypes(job.op);
  if (dtypes.empty()) return Status::Error("unknown library op '{}'", job.op);
  if (job.tensors.size() != dtypes.size()) {
    return Status::Error("{} takes {} tensors, the job names {}", job.op, dtypes.size(),
                         job.tensors.size());
  }
  // Element counts, in argument order: A, B, [a_scale, b_scale,] D.
  std::vector<int64_t> numel = {job.m * job.k, job.n * job.k};
  if (dtypes.size() == 5) numel.insert(numel.end(), {job.m, job.n});
  numel.push_back(job.m * job.n);
  for (size_t i = 0; i < dtypes.size(); ++i) {
    const int t = job.tensors[i];
    if (t < 0 || static_cast<size_t>(t) >= tensors.size()) {
      return Status::Error("{} argument {}: no such tensor", job.op, i);
    }
    const TensorJob& tj = tensors[t];
    const bool want_input = i + 1 < dtypes.size();
    if (tj.input != want_input || tj.dtype != dtypes[i] || tj.numel != numel[i]) {
      return Status::Error("{} argument {} ('{}'): expected an {} of dtype code {} with {} "
                           "elements, got an {} of dtype code {} with {}",
                           job.op, i, tj.name, want_input ? "input" : "output", dtypes[i],
                           numel[i], tj.input ? "input" : "output", tj.dtype, tj.numel);
    }
  }
  return Status::Ok();
}

}  // namespace ws::runner
