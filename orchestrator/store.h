// The store: one SQLite database per workspace (WAL mode, versioned schema). Every evaluation is
// recorded with its kernel, GPU, arch, verdict, timings and speed-of-light fraction. A committed
// evaluation survives a kill -9 of the orchestrator.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"

struct sqlite3;

namespace ws {

struct KernelRecord {
  int64_t id = 0;
  std::string problem;
  std::string hash;         // sha256 of the source
  std::string source;
  std::string origin;       // "file:<path>", "tuner", "agent:<model>", "reference"
  std::optional<int64_t> parent_id;
  std::string created_at;
};

struct ShapeTiming {
  std::string shape_json;   // {"M":..,"K":..}
  std::string kind;         // "bench"
  double median_us = 0, min_us = 0, p90_us = 0, stdev_us = 0;
  int iterations = 0;
  double sol_us = 0;
};

struct EvaluationRecord {
  int64_t id = 0;
  int64_t kernel_id = 0;
  std::string problem;
  std::string params_json;  // {"rounding":"rceil"}
  std::string knobs_json;   // {"ROWS":4}
  std::string gpu;          // "NVIDIA H200" ("" when compile-only)
  std::string arch;         // "sm_90a"
  std::string driver;
  std::string verdict;      // VerdictName
  std::string message;
  std::string resources_json;
  double time_us = 0;       // geomean of bench medians (0 if not timed)
  double sol_fraction = 0;  // geomean of T_SOL / T over bench shapes (0 if unknown)
  std::vector<ShapeTiming> timings;
  std::string created_at;
};

struct CeilingsRecord {
  std::string gpu;
  double copy_bytes_per_s = 0, bf16_flops_per_s = 0, fp8_flops_per_s = 0;
  std::string measured_at;
};

struct LeaderboardEntry {
  std::string problem;
  std::string params_json;
  std::string gpu;
  int64_t kernel_id = 0;
  int64_t evaluation_id = 0;
  std::string kernel_hash;
  std::string origin;
  double time_us = 0;
  double sol_fraction = 0;
  std::string created_at;
};

/// Thread-compatible (one Store per thread); separate processes may share one database file.
class Store {
 public:
  /// Opens or creates the database and migrates the schema to the current version.
  static Result<std::unique_ptr<Store>> Open(const std::string& path);
  ~Store();
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  int schema_version() const;

  /// Inserts a kernel, or returns the id of the kernel with the same (problem, hash).
  Result<int64_t> PutKernel(const KernelRecord& k);
  Result<KernelRecord> GetKernel(int64_t id);

  /// Records an evaluation and its timings in one transaction; returns its id.
  Result<int64_t> AddEvaluation(const EvaluationRecord& e);
  Result<std::vector<EvaluationRecord>> Evaluations(const std::string& problem, int limit);

  Status PutCeilings(const CeilingsRecord& c);
  Result<std::optional<CeilingsRecord>> GetCeilings(const std::string& gpu);

  /// The fastest ok evaluation per (problem, params, gpu), fastest first within a problem.
  /// `problem` empty means all problems.
  Result<std::vector<LeaderboardEntry>> Leaderboard(const std::string& problem);

 private:
  explicit Store(sqlite3* db);
  sqlite3* db_;
  int version_ = 0;
};

}  // namespace ws
