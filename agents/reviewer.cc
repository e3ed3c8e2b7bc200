#include "agents/reviewer.h"

#include <regex>

#include <fmt/format.h>

#include "agents/prompts.h"
#include "evaluator/evaluator.h"

namespace ws {
namespace {

// The source without its plan comment: what the kernels are, apart from the knob lists.
std::string WithoutPlan(const std::string& source) {
  size_t open = source.find("/* warpsmith:plan");
  if (open == std::string::npos)
    return source;
  size_t close = source.find("*/", open);
  if (close == std::string::npos)
    return source;
  return source.substr(0, open) + source.substr(close + 2);
}

// The plan's launches and workspace, in a comparable form.
std::string LaunchText(const Plan& p) {
  std::string t = p.workspace_bytes + (p.workspace_zero ? "/zero" : "");
  for (const auto& l : p.launches) {
    t += "|" + l.kernel + ":" + l.smem;
    for (const auto* dims : {&l.grid, &l.block, &l.cluster}) {
      t += "[";
      for (const auto& d : *dims) t += d + ",";
      t += "]";
    }
    for (const auto& a : l.args) t += fmt::format("({}:{})", static_cast<int>(a.kind), a.text);
  }
  return t;
}

ReviewVerdict Flag(std::string reason) {
  ReviewVerdict v;
  v.flagged = true;
  v.reason = std::move(reason);
  return v;
}

}  // namespace

ReviewVerdict ReviewTunerCandidate(const std::string& parent_source,
                                   const std::string& candidate_source, const KnobSetting& knobs) {
  if (WithoutPlan(parent_source) != WithoutPlan(candidate_source))
    return Flag("tuner candidate: the device code differs from its parent's");
  Result<Plan> parent = ParsePlan(parent_source);
  Result<Plan> candidate = ParsePlan(candidate_source);
  if (!parent.ok() || !candidate.ok())
    return Flag("tuner candidate: a plan does not parse");
  if (LaunchText(*parent) != LaunchText(*candidate))
    return Flag("tuner candidate: the launches differ from its parent's");
  for (const auto& [name, value] : knobs) {
    auto it = parent->knobs.find(name);
    if (it == parent->knobs.end())
      return Flag(fmt::format("tuner candidate: knob {} is not in the parent's plan", name));
    if (std::find(it->second.begin(), it->second.end(), value) == it->second.end())
      return Flag(
          fmt::format("tuner candidate: {}={} is not a value the parent allows", name, value));
  }
  return {};
}

ReviewVerdict ReviewRules(const ProblemSpec& spec, const std::string& candidate_source) {
  const std::string code = WithoutPlan(candidate_source);
  static const std::regex kTimer(R"(%globaltimer|%clock64|%clock\b|\bclock64\s*\(|\bclock\s*\()");
  if (std::regex_search(code, kTimer))
    return Flag("reads a clock or timer in device code");
  // A comparison of a symbol against one of the bench shapes' values: specializing on the
  // measured shapes, which the hidden shapes may not catch.
  for (const auto& shape : spec.bench_shapes) {
    for (const auto& [name, value] : shape.symbols) {
      if (value < 64)
        continue;
      std::regex cmp(
          fmt::format(R"(\b{0}\s*[=!<>]=?\s*{1}\b|\b{1}\s*[=!<>]=?\s*{0}\b)", name, value));
      if (std::regex_search(code, cmp))
        return Flag(
            fmt::format("compares {} with the bench value {}: may specialize on the "
                        "measured shapes",
                        name, value));
    }
  }
  return {};
}

Result<ReviewVerdict> ReviewWithLlm(LlmClient& client, const std::string& model,
                                    const ProblemSpec& spec, const std::string& parent_source,
                                    const std::string& candidate_source, int max_output_tokens,
                                    const CancelToken* cancel) {
  ChatRequest req;
  req.model = model;
  req.temperature = 0;
  req.max_output_tokens = max_output_tokens;
  req.messages.push_back({ChatMessage::Role::kSystem, ReviewerSystemPrompt(), {}, ""});
  req.messages.push_back({ChatMessage::Role::kUser,
                          ReviewerTaskPrompt(spec, parent_source, candidate_source),
                          {},
                          ""});
  WS_ASSIGN_OR_RETURN(ChatResponse r, client.Chat(req, cancel));
  ReviewVerdict v;
  v.usage = r.usage;
  static const std::regex kVerdict(R"(VERDICT:\s*(ok|flag)\s*:?\s*(.*))", std::regex::icase);
  std::smatch m;
  // The last verdict line counts, so a model that reasons first still answers.
  std::string text = r.message.content, last_kind, last_reason;
  for (std::sregex_iterator it(text.begin(), text.end(), kVerdict), end; it != end; ++it) {
    last_kind = (*it)[1].str();
    last_reason = (*it)[2].str();
  }
  if (last_kind.empty()) {
    v.flagged = true;
    v.reason = r.stop_reason == "length"
                   ? fmt::format("the reviewer's reply was cut at the output limit ({} tokens) "
                                 "before a verdict line (--max-output-tokens)",
                                 max_output_tokens)
                   : "the reviewer gave no verdict line";
  } else if (last_kind == "flag" || last_kind == "FLAG" || last_kind == "Flag") {
    v.flagged = true;
    v.reason = last_reason.empty() ? "flagged by the reviewer" : "reviewer: " + last_reason;
  }
  return v;
}

}  // namespace ws
