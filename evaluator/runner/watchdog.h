// The runner's per-case watchdog and the result file it shares with the main thread
// (docs/runner-protocol.md). Host-only: no CUDA here, so it is tested without a GPU.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/status.h"

namespace ws::runner {

/// Added to every case's allowance before the watchdog stops it: scheduler jitter and the host
/// I/O of the case's last steps, not kernel time.
inline constexpr double kCaseGraceSeconds = 2;

/// The job's result file: {"device": ..., "cases": [...]}, rewritten whole after every change
/// (temporary file + rename, so a reader never sees half of it). Thread-safe: the main thread
/// appends the cases it finishes and the watchdog the one it stops. The lock is held only for
/// host work (serializing, writing), never across a GPU call.
class ResultFile {
 public:
  ResultFile(std::string path, nlohmann::ordered_json device);

  /// Writes the file as it stands.
  Status Write();
  /// Appends one case's result and rewrites the file.
  Status Append(nlohmann::ordered_json case_result);
  /// Sets a top-level field (not "device" or "cases") and rewrites the file.
  Status Set(const std::string& key, nlohmann::ordered_json value);
  /// A copy of what the file holds (tests).
  nlohmann::ordered_json Snapshot();

 private:
  Status WriteLocked();

  std::mutex mu_;
  const std::string path_;
  nlohmann::ordered_json result_;  // guarded by mu_
};

/// The result of a case the watchdog stopped: {"id", "status": "timeout", "message",
/// "budget_s"}.
nlohmann::ordered_json TimeoutCaseResult(const std::string& case_id, double allowance_s,
                                         double grace_s);

/// Appends TimeoutCaseResult to `results` and ends the process at once with kExitCaseTimeout
/// (_exit: no atexit handlers, which could wait on the hung GPU). Called from the watchdog's
/// thread while the main thread may be blocked inside a CUDA call.
[[noreturn]] void StopCaseAndExit(ResultFile* results, const std::string& case_id,
                                  double allowance_s, double grace_s);

/// Calls `on_expiry(case_id, allowance_s)` on its own thread once the armed case has run longer
/// than its allowance plus `grace_s`. `on_expiry` runs with the watchdog's lock held, so Arm and
/// Disarm wait for it to return (in the runner it never does: it ends the process). So once
/// Disarm has returned, the case it disarmed can no longer expire, and the main thread may write
/// that case's own result.
class CaseWatchdog {
 public:
  using Expiry = std::function<void(const std::string& case_id, double allowance_s)>;

  CaseWatchdog(double grace_s, Expiry on_expiry);
  /// Stops and joins the thread (an armed case never expires after this).
  ~CaseWatchdog();
  CaseWatchdog(const CaseWatchdog&) = delete;
  CaseWatchdog& operator=(const CaseWatchdog&) = delete;

  /// Starts timing `case_id` from now; replaces any armed case.
  void Arm(const std::string& case_id, double allowance_s);
  /// Stops timing the armed case, if any.
  void Disarm();

 private:
  void Loop();

  using Clock = std::chrono::steady_clock;
  const double grace_s_;
  const Expiry on_expiry_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;   // guarded by mu_
  bool armed_ = false;  // guarded by mu_
  std::string case_id_;
  double allowance_s_ = 0;
  Clock::time_point deadline_;
  std::thread thread_;  // last: starts after the members it reads
};

}  // namespace ws::runner
