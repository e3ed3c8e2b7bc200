// The runner's commands (docs/runner-protocol.md). Each returns the process exit status.
#pragma once

#include <string>
#include <string_view>

namespace ws::runner {

constexpr int kExitOk = 0;
constexpr int kExitRunnerError = 1;  // our own failure (I/O, NVRTC), not the candidate's
constexpr int kExitBadJob = 2;
constexpr int kExitNoGpu = 3;
constexpr int kExitCrashed = 4;
constexpr int kExitCaseTimeout = 5;  // the watchdog stopped a case past its budget_s (watchdog.h)
constexpr int kExitGpuBusy = 6;      // the job's gpu_lock stayed held past gpu_lock_wait_s
constexpr int kExitNoTurn = 7;       // the job's turn gate did not say go (evaluator/gpu_lock.h)

/// What the turn gate's file reads when the runner may load its cubin and take the GPU.
constexpr std::string_view kTurnGo = "go";

/// `ws_runner devices`: prints {"devices": [...]}.
int DevicesCommand();

/// `ws_runner probe`: prints the measured ceilings.
int ProbeCommand();

/// `ws_runner run JOB.json`: runs the job and writes its result file after every case.
int RunCommand(const std::string& job_path);

}  // namespace ws::runner
