// A worker: one attempt at one problem by an LLM. A tool-calling loop over an LlmClient: the
// model compiles, checks and times candidates through the evaluator (feedback in every turn) and
// submits one; a plain answer whose last ```cuda block is the candidate counts as a submission.
// The conversation is kept within the model's context window by eliding old tool outputs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "agents/agents.h"
#include "agents/tuner.h"

namespace ws {

/// What the evaluator said, as text for the model (hidden shapes appear as "hidden shape #n").
struct ToolFeedback {
  std::string text;
  std::string verdict;    // VerdictName, "" for reports
  bool accepted = false;  // submit: the candidate was accepted (ok, or not_run
                          // in a compile-only campaign)
  std::optional<int64_t> evaluation_id;
};

/// The worker's tools; the campaign engine implements them over ws::Evaluate and the store.
class WorkerTools {
 public:
  enum class Action { kCompile, kCheck, kTime, kResourceReport, kSassSummary, kSubmit };
  virtual ~WorkerTools() = default;
  /// Runs one tool on a candidate. An error Status means the evaluator itself failed (not the
  /// candidate); the attempt then ends with that error.
  virtual Result<ToolFeedback> Run(Action action, const std::string& source,
                                   const KnobSetting& knobs) = 0;
  /// Called after every model turn, for accounting (tokens, cost).
  virtual void RecordTurn(const Usage& usage, const std::string& stop_reason) = 0;
  /// True when the attempt must end now (a budget is spent, the user asked to stop).
  virtual bool ShouldStop() = 0;
};

struct WorkerOptions {
  std::string model;
  int max_turns = 16;
  int64_t context_tokens = 128000;  // the model's window; estimated as characters / 4
  int max_output_tokens = 8192;
  double temperature = 0.7;
};

struct WorkerBrief {
  std::string system_prompt;
  std::string task;
};

struct WorkerOutcome {
  std::string status;  // "submitted", "no_submission", "error", "stopped"
  std::string message;
  std::optional<int64_t> submitted_evaluation_id;
  Usage usage;  // summed over turns
  int turns = 0;
};

/// Runs one attempt. Never throws and never fails: an endpoint that fails ends the attempt with
/// status "error" and the reason in `message`.
WorkerOutcome RunWorker(LlmClient& client, const WorkerOptions& opts, const WorkerBrief& brief,
                        WorkerTools& tools, const CancelToken* cancel);

/// Characters / 4 over every message's text and tool-call arguments.
int64_t EstimateTokens(const std::vector<ChatMessage>& messages);

/// Elides old tool outputs, then old tool-call sources and replies (oldest first; the system
/// prompt, the task and the last `keep_recent` messages stay whole) until the estimate fits
/// `budget_tokens` or nothing more can go.
void FitContext(std::vector<ChatMessage>& messages, int64_t budget_tokens, size_t keep_recent = 4);

/// The last ```cuda (or ```cu / ```c++) fenced block of `text`, if any.
std::optional<std::string> LastCudaBlock(const std::string& text);

}  // namespace ws
