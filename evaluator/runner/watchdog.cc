#include "evaluator/runner/watchdog.h"

#include <unistd.h>

#include <cstdio>
#include <utility>

#include "base/files.h"
#include "evaluator/runner/commands.h"

namespace ws::runner {

using ojson = nlohmann::ordered_json;

ResultFile::ResultFile(std::string path, ojson device)
    : path_(std::move(path)), result_({{"device", std::move(device)}, {"cases", ojson::array()}}) {}

Status ResultFile::Write() {
  std::lock_guard<std::mutex> lock(mu_);
  return WriteLocked();
}

Status ResultFile::Append(ojson case_result) {
  std::lock_guard<std::mutex> lock(mu_);
  result_["cases"].push_back(std::move(case_result));
  return WriteLocked();
}

Status ResultFile::Set(const std::string& key, ojson value) {
  std::lock_guard<std::mutex> lock(mu_);
  if (key == "device" || key == "cases") return Status::Error("ResultFile::Set: '{}' is reserved", key);
  result_[key] = std::move(value);
  return WriteLocked();
}

ojson ResultFile::Snapshot() {
  std::lock_guard<std::mutex> lock(mu_);
  return result_;
}

Status ResultFile::WriteLocked() { return WriteFileAtomic(path_, result_.dump(1)); }

ojson TimeoutCaseResult(const std::string& case_id, double allowance_s, double grace_s) {
  return {{"id", case_id},
          {"status", "timeout"},
          {"message", fmt::format("case {} did not finish within its {:g} s allowance (stopped "
                                  "after {:g} s)",
                                  case_id, allowance_s, allowance_s + grace_s)},
          {"budget_s", allowance_s}};
}

void StopCaseAndExit(ResultFile* results, const std::string& case_id, double allowance_s,
                     double grace_s) {
  Status s = results->Append(TimeoutCaseResult(case_id, allowance_s, grace_s));
  // The exit status alone still says what happened when the file could not be written.
  std::fprintf(stderr, "ws_runner: case %s did not finish within its %g s allowance; stopped%s%s\n",
               case_id.c_str(), allowance_s, s.ok() ? "" : " (", s.ok() ? "" : s.message().c_str());
  std::fflush(stderr);
  ::_exit(kExitCaseTimeout);
}

CaseWatchdog::CaseWatchdog(double grace_s, Expiry on_expiry)
    : grace_s_(grace_s), on_expiry_(std::move(on_expiry)), thread_([this] { Loop(); }) {}

CaseWatchdog::~CaseWatchdog() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CaseWatchdog::Arm(const std::string& case_id, double allowance_s) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = true;
    case_id_ = case_id;
    allowance_s_ = allowance_s;
    deadline_ = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                   std::chrono::duration<double>(allowance_s + grace_s_));
  }
  cv_.notify_all();
}

void CaseWatchdog::Disarm() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    armed_ = false;
  }
  cv_.notify_all();
}

void CaseWatchdog::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (!armed_) {
      cv_.wait(lock);
      continue;
    }
    // Woken early by Arm, Disarm or the destructor: the loop re-reads the state.
    if (cv_.wait_until(lock, deadline_) != std::cv_status::timeout) continue;
    if (stop_ || !armed_ || Clock::now() < deadline_) continue;
    armed_ = false;
    on_expiry_(case_id_, allowance_s_);  // under the lock: see the class comment
  }
}

}  // namespace ws::runner
