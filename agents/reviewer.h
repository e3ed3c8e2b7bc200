// The reviewer: reads a would-be winner against its parent and the rules, and flags it for a
// person. For the tuner it is a rule check (the same kernel source, modulo knobs, and knob values
// the plan allows); for LLM-written kernels, cheap static checks plus an LLM reading.
#pragma once

#include <string>

#include "agents/agents.h"
#include "agents/tuner.h"
#include "problems/problems.h"

namespace ws {

struct ReviewVerdict {
  bool flagged = false;
  std::string reason;  // why it is flagged; empty when not
  Usage usage;         // the LLM reading's tokens and cost
};

/// The tuner's winner must be its parent's source with only the plan's knob lists changed (the
/// kernels, launches and every line of code identical) and knob values the parent's plan allows.
ReviewVerdict ReviewTunerCandidate(const std::string& parent_source,
                                   const std::string& candidate_source, const KnobSetting& knobs);

/// Static checks on any candidate: reading clocks or timers, and comparisons against the bench
/// shapes' dimensions (specializing on the measured shapes).
ReviewVerdict ReviewRules(const ProblemSpec& spec, const std::string& candidate_source);

/// An LLM reads the candidate against its parent; an answer without a verdict line flags it.
/// An endpoint failure is an error (the caller records that the review did not happen).
/// `max_output_tokens` bounds the answer (a reasoning model's hidden reasoning counts too).
Result<ReviewVerdict> ReviewWithLlm(LlmClient& client, const std::string& model,
                                    const ProblemSpec& spec, const std::string& parent_source,
                                    const std::string& candidate_source, int max_output_tokens,
                                    const CancelToken* cancel);

}  // namespace ws
