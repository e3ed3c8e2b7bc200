// Helpers shared by the evaluator's sources; not part of its public header.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "base/files.h"
#include "base/status.h"
#include "evaluator/evaluator.h"
#include "problems/problems.h"

namespace ws {

/// Registers, shared memory, stack and spills per kernel, from ptxas' verbose log.
ResourceReport ParsePtxasLog(const std::string& log);
std::vector<std::string> DefaultIncludeDirs();

/// Each kernel's parameter sizes in bytes, in order, from a cubin's .nv.info.<kernel> sections
/// (their EIATTR_KPARAM_INFO records): what the driver will read, known without a GPU. An error
/// for bytes that are not a well-formed 64-bit ELF (cubin.cc).
Result<std::map<std::string, std::vector<int>>> CubinKernelParams(std::string_view elf);

/// "" when each launch passes as many arguments as its kernel takes, each of the size the runner
/// will pass (tensor maps 128 bytes, i32 4, the rest 8); else what the runner would refuse. A
/// kernel `params` does not describe is left to the runner.
std::string PlanCubinMismatch(const Plan& plan, const ProblemSpec& spec,
                              const std::map<std::string, std::vector<int>>& params);

// ---- The checker (check.cc) ---------------------------------------------------------------------
/// Failures each Compare* names by coordinates (its default max_reports).
inline constexpr int kMaxReports = 5;

// Each Compare* returns "" on a pass, else what failed, where (coordinates) and by how much, for
// the first `max_reports` failures plus a count (and the worst one where it is not among them).
// Where `rows` is given (ulp, close, gemm), the bytes hold only those rows (last dimension) of the
// tensor of `dims`, back to back (a sampled write-back), and coordinates name the tensor's rows.

/// Exact bytes: "q[3, 17]: got 0x7e, expected 0x7f; ... (2 of 96 elements differ)".
std::string CompareExact(const std::string& tensor, const std::vector<int64_t>& dims, int elem_size,
                         std::string_view got, std::string_view want,
                         int max_reports = kMaxReports);

/// bf16/f16/f32 within `max_ulp` ulps (+0 == -0; NaN only against NaN; infinities exactly).
std::string CompareUlp(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                       std::string_view got, std::string_view want, int64_t max_ulp,
                       int max_reports = kMaxReports,
                       const std::vector<int64_t>* rows = nullptr);

/// bf16/f16/f32: |got - want| <= atol + rtol * |want|; NaN and infinities as for ulp.
std::string CompareClose(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                         std::string_view got, std::string_view want, double rtol, double atol,
                         int max_reports = kMaxReports,
                         const std::vector<int64_t>* rows = nullptr);

/// The gemm tolerance (relative Frobenius error, per-element bound for a fraction, worst element
/// against rms(want)); a non-finite result fails unless the reference has the same one there.
std::string CompareGemm(const std::string& tensor, const std::vector<int64_t>& dims, DType dtype,
                        std::string_view got, std::string_view want, const Tolerance& tol,
                        int max_reports = kMaxReports,
                        const std::vector<int64_t>* rows = nullptr);

/// An mx_data output (fp8, `dims` [..., L], blocks of 32 along L) with its e8m0 scales
/// [..., ceil(L/32)]: scales equal, or off by one in at most tol.scale_mismatch_fraction of blocks
/// (at least one block when that is above 0); the data dequantized within tol.max_ulp fp8 ulps at
/// the larger of the two scales; NaN only against NaN.
std::string CompareMx(const std::string& data, const std::string& scales,
                      const std::vector<int64_t>& dims, DType dtype, std::string_view got_data,
                      std::string_view want_data, std::string_view got_scales,
                      std::string_view want_scales, const Tolerance& tol,
                      int max_reports = kMaxReports);

/// The threads a comparison uses: WARPSMITH_CHECK_THREADS when it is a positive number (1 =
/// serial), else std::thread::hardware_concurrency(). Results never depend on it: every
/// comparison splits its tensor into chunks fixed by the tensor's size and merges them in order.
int CheckThreads();

/// Overrides CheckThreads() while the object lives (tests, benchmarks); 0 removes the override.
/// Not for concurrent use with comparisons that should see another count.
class ScopedCheckThreads {
 public:
  explicit ScopedCheckThreads(int threads);
  ~ScopedCheckThreads();
  ScopedCheckThreads(const ScopedCheckThreads&) = delete;
  ScopedCheckThreads& operator=(const ScopedCheckThreads&) = delete;

 private:
  int previous_;
};

/// Calls fn(0) .. fn(chunks - 1), each exactly once, on up to CheckThreads() threads (the
/// caller's among them) and returns when all are done; then rethrows an exception one threw. fn
/// must be safe to call concurrently for different chunks.
void RunChunks(int64_t chunks, const std::function<void(int64_t)>& fn);

/// What a custom checker sees: the case, the tolerance's options, the output whose entry named
/// it (a checker named by several outputs is called once per case), the case's inputs
/// regenerated on the host (GenerateInputs), and every output of the reference and candidate.
struct CustomCheck {
  const ProblemSpec& spec;
  const SymbolTable& symbols;
  const std::map<std::string, std::string>& params;
  const std::map<std::string, double>& options;
  const std::string& output;
  const TensorMap& inputs;
  const TensorMap& want;
  const TensorMap& got;
};

/// Returns "" on a pass, else what failed, where and by how much.
using CustomChecker = std::string (*)(const CustomCheck&);

/// The checker registered as `name` in check.cc's table; nullptr if none.
const CustomChecker* FindCustomChecker(std::string_view name);
std::vector<std::string> CustomCheckerNames();

/// Registers a checker for the lifetime of the object (tests).
class ScopedCustomChecker {
 public:
  ScopedCustomChecker(const char* name, CustomChecker fn);
  ~ScopedCustomChecker();
  ScopedCustomChecker(const ScopedCustomChecker&) = delete;
  ScopedCustomChecker& operator=(const ScopedCustomChecker&) = delete;
};

/// One tensor's bytes where they lie (a HostTensor's, a mapped output dump's), with its type and
/// shape: the comparisons read dumps of gigabytes in place.
struct TensorBytes {
  DType dtype = DType::kU8;
  std::vector<int64_t> dims;
  std::string_view bytes;
  std::vector<int64_t> rows;  // non-empty: `bytes` holds only these rows of the last dimension
};
using TensorBytesMap = std::map<std::string, TensorBytes>;

/// Views of `tensors`' bytes; they live as long as `tensors` does, unchanged.
TensorBytesMap BytesOf(const TensorMap& tensors);

/// Checks every output of one case by its tolerance. Returns "" when all pass, else the first
/// failure; an error for what is not the candidate's fault (a missing reference output, an
/// unregistered checker). `inputs` is called (once) only when a custom checker needs the inputs
/// (custom checkers get copies of the outputs as HostTensors: theirs are small).
Result<std::string> CheckOutputs(const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, std::string>& params,
                                 const TensorBytesMap& got, const TensorBytesMap& want,
                                 const std::function<Result<TensorMap>()>& inputs,
                                 const std::vector<std::string>& digested = {});
inline Result<std::string> CheckOutputs(const ProblemSpec& spec, const SymbolTable& symbols,
                                        const std::map<std::string, std::string>& params,
                                        const TensorMap& got, const TensorMap& want,
                                        const std::function<Result<TensorMap>()>& inputs,
                                        const std::vector<std::string>& digested = {}) {
  return CheckOutputs(spec, symbols, params, BytesOf(got), BytesOf(want), inputs, digested);
}

/// Where a runner writes output `tensor` of run `tag` ("check", "audit", "last") of the case
/// whose dump prefix is `prefix`.
std::string DumpPath(const std::string& prefix, const std::string& tag, const std::string& tensor);

// ---- Sampled write-back of large bench outputs (digest.cc) --------------------------------------
// A timed bench case is checked three times: its check run in full, its audited and last runs
// (there to catch state kept across runs) against references on their own inputs. Outputs that
// cannot be digested (an ulp, close or gemm tolerance) and are large come back from those two runs
// as a sample of their rows, drawn by a key after each run, in both runners: the GEMMs' outputs of
// gigabytes then cost about 2 dumps per case instead of 6 (docs/design-notes.md).

/// About one row in kSampleEvery is kept; outputs below kSampleMinBytes or with fewer than
/// kSampleMinRows rows (last dimension) come back whole.
inline constexpr int kSampleEvery = 16;
inline constexpr int64_t kSampleMinBytes = int64_t{64} << 20;
inline constexpr int64_t kSampleMinRows = 2048;

struct SampledOutputs {
  uint64_t key = 0;
  int every = kSampleEvery;
  std::map<std::string, int64_t> row_bytes;  // output -> bytes per row (last dimension)
};

/// Rows of the last dimension: the product of the other dimensions (1 for one dimension).
inline int64_t LeadingRows(const std::vector<int64_t>& dims) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < dims.size(); ++d) rows *= dims[d];
  return rows;
}

/// The outputs of a timed case of `kind` whose audited and last runs are sampled, with their
/// row sizes: bench shapes only; not `digested` ones; ulp, close and gemm tolerances only.
Result<std::map<std::string, int64_t>> SampledOutputRows(const ProblemSpec& spec,
                                                         const SymbolTable& symbols,
                                                         std::string_view kind,
                                                         const std::vector<std::string>& digested);

/// CheckOutputs on dumped outputs: run `got_tag` of the candidate's case (under `got_prefix`)
/// against the reference's check run on the same inputs (under `want_prefix`; the inputs are
/// generated from `seed` if a custom checker asks). The dumps are mapped, not read. A candidate
/// output that was not written back fails the candidate; a missing reference dump is an error.
/// With `sample`, its outputs were written back as the rows SampledRows draws, by both runners.
Result<std::string> CompareDumps(const ProblemSpec& spec, const SymbolTable& symbols,
                                 const std::map<std::string, std::string>& params, uint64_t seed,
                                 const std::string& got_prefix, const std::string& got_tag,
                                 const std::string& want_prefix,
                                 const std::vector<std::string>& digested,
                                 const SampledOutputs* sample = nullptr);

// ---- Bench outputs as keyed digests (digest.cc) -------------------------------------------------
// On bench shapes the runners hash each exact output on the device under a key drawn for the
// evaluation (evaluator/runner/digest.h) and report digests instead of writing the bytes.

// The "tensors" array of a runner job for one case: dtypes, sizes, roles and the inputs' init
// fields (integer fields as JSON integers, as the runner requires).
Result<nlohmann::json> TensorsJson(const ProblemSpec& spec, const SymbolTable& symbols);

/// A resolved plan's launches as the runner's job writes them (docs/runner-protocol.md); a
/// tensor-map argument carries its whole map.
nlohmann::json LaunchesJson(const ResolvedPlan& plan);

/// The outputs of a case of `kind` ("test", "hidden", "bench") that the runners digest: on bench
/// shapes the exact ones, except an mx_data check's partner; none when a custom checker (which
/// reads every output) checks the problem. CheckOutputs skips them (`digested`).
std::vector<std::string> DigestedOutputs(const ProblemSpec& spec, std::string_view kind);

/// The digests (output -> 32 hex digits) a runner's case result reports for run `tag` ("check",
/// "audit", "last"); empty when there are none.
std::map<std::string, std::string> RunDigests(const nlohmann::json& case_result,
                                              const std::string& tag);

/// "" when the candidate's digest of every output in `outputs` equals the reference's; else what
/// differs (or is missing), naming the output. An error when the reference lacks a digest.
Result<std::string> CompareDigests(const std::vector<std::string>& outputs,
                                   const std::map<std::string, std::string>& got,
                                   const std::map<std::string, std::string>& want);

/// Where an evaluation's scratch folder goes: the first of `tmpfs_roots` that is a writable
/// tmpfs with room for `need_bytes` of dumps (and as much again spare, at least 1 GiB), when
/// that is at most 16 GiB; else `fallback`. A negative need (unknown) gives `fallback`.
std::string ChooseScratchRoot(const std::vector<std::string>& tmpfs_roots, int64_t need_bytes,
                              const std::string& fallback);

/// A fresh, private folder for one evaluation's jobs and dumps (each runner's sandbox binds it as
/// its only writable folder): under opts.scratch_root when set, else on a tmpfs with room for
/// `need_bytes` of dumps (negative: unknown) in a per-user folder, else in the workspace.
Result<std::string> MakeScratch(const EvaluatorOptions& opts, int64_t need_bytes);

// ---- The candidate runner's own findings (evaluate.cc) ------------------------------------------

struct SandboxResult;

/// A verdict for one case and what to say about it.
struct RunnerFinding {
  Verdict verdict = Verdict::kCrashed;
  std::string message;
};

/// Seconds as the messages say them: "5", "37", "0.5".
std::string SecondsText(double s);

/// What the runner reported about one of the candidate's cases (its result object): a crash or a
/// launch error (crashed), a case its watchdog stopped past `allowance_s` (timeout: "did not
/// finish within its N s allowance"), a damaged guard or changed inputs (wrong_answer), any other
/// status (crashed). nullopt when the runner found nothing wrong.
std::optional<RunnerFinding> RunnerCaseFinding(const nlohmann::json& case_result,
                                               double allowance_s);

/// Why a case has no result: the sandbox stopped the whole runner at `limit_s`, or the runner's
/// watchdog stopped this case past `allowance_s` (exit status kExitCaseTimeout) without recording
/// it (timeout); otherwise the runner died (crashed).
RunnerFinding MissingCaseFinding(const SandboxResult& process, double limit_s, double allowance_s);

}  // namespace ws
