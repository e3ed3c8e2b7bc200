// Deep mode's building blocks: finding compute-sanitizer, the command line that wraps a runner in
// one of its tools, and reading its output back as clean / findings / unavailable. Evaluate()
// puts them together (docs/deep-mode.md); everything here is pure and unit-tested without a GPU.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace ws {

enum class SanitizerTool { kMemcheck, kRacecheck, kInitcheck };

/// The tools deep mode runs, in order.
inline constexpr SanitizerTool kDeepTools[] = {SanitizerTool::kMemcheck, SanitizerTool::kRacecheck,
                                               SanitizerTool::kInitcheck};

std::string_view SanitizerToolName(SanitizerTool t);  // "memcheck", "racecheck", "initcheck"

/// The exit status compute-sanitizer is told to use when it found errors (--error-exitcode).
inline constexpr int kSanitizerErrorExit = 99;

/// compute-sanitizer: $WARPSMITH_COMPUTE_SANITIZER, else on PATH, else $CUDA_HOME/bin, else
/// /usr/local/cuda/bin. The canonical path (symlinks resolved: its injection libraries sit beside
/// the real binary). An error says where it looked.
Result<std::string> FindComputeSanitizer();

/// The folders a sandboxed run of `sanitizer` must see read-only: the folder of the real binary
/// (its injection libraries and helpers live there), unless it is under /usr, which the sandbox
/// binds anyway.
std::vector<std::string> SanitizerReadOnlyPaths(const std::string& sanitizer);

/// The environment a sanitizer run gets on top of the sandbox's allowlist: the frontend talks
/// to the target over a Unix socket (the sandbox has no network and seccomp refuses every
/// socket family but AF_UNIX).
std::vector<std::pair<std::string, std::string>> SanitizerEnv();

/// `sanitizer --tool T <common options> <tool options> [--kernel-name kne=K ...] -- runner_argv`.
/// `kernels` are the plan's kernel names (identifiers, so the exact mangled name of an extern "C"
/// kernel): memcheck and racecheck check only them, so the runner's trusted helper kernels
/// (input generation, hashing, guards) are never instrumented. initcheck checks every kernel: it
/// must see the helpers' writes to know the inputs and guards are initialized; its findings are
/// attributed to kernels by ParseSanitizerOutput instead.
std::vector<std::string> SanitizerArgv(const std::string& sanitizer, SanitizerTool tool,
                                       const std::vector<std::string>& kernels,
                                       const std::vector<std::string>& runner_argv);

/// What one tool's run said.
struct SanitizerOutcome {
  enum class State { kClean, kFindings, kUnavailable };
  State state = State::kUnavailable;
  int64_t count = 0;                  // errors (memcheck, initcheck) or hazards (racecheck)
  std::string unit = "errors";        // "errors" or "hazards"
  std::vector<std::string> findings;  // the first findings, one line each, in the candidate
  std::string why;                    // kUnavailable: why the tool could not give an answer

  /// "clean", "3 hazards", "1 error", "unavailable: ...": EvalResult::deep's values.
  std::string Text() const;
  /// "racecheck: 3 hazards: Error: Race reported between ...": a wrong_answer message.
  std::string Message(SanitizerTool tool) const;
};

/// Reads a finished sanitizer run: its exit status (`exited` false when it was killed by a
/// signal), and its stdout and stderr together. The rules, in order:
///  - an "ERROR SUMMARY: N errors" with N > 0, a "RACECHECK SUMMARY: N hazards" with N > 0, or
///    exit status kSanitizerErrorExit are findings. Each finding report is attributed to the
///    kernel its first "at NAME" line names; reports in no kernel of `kernels` (a trusted helper
///    kernel, a runner API call) are not the candidate's: when only such reports exist the tool
///    is unavailable (the evaluator's own code was flagged), never a verdict on the candidate;
///  - a run with no summary line (the tool did not attach, the driver refused it), one killed by
///    a signal, or one whose runner failed without findings is unavailable, with the sanitizer's
///    own error lines as the reason;
///  - otherwise (a zero summary and exit status 0) clean.
SanitizerOutcome ParseSanitizerOutput(SanitizerTool tool, bool exited, int exit_code,
                                      const std::string& output,
                                      const std::set<std::string>& kernels);

}  // namespace ws
