#include "agents/worker.h"

#include <algorithm>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "agents/prompts.h"

namespace ws {
namespace {

using json = nlohmann::json;

constexpr const char* kElidedOutput = "[older tool output elided to fit the context window]";
constexpr const char* kElidedReply = "[older reply elided to fit the context window]";
constexpr const char* kElidedArgs = R"({"source": "[elided to fit the context window]"})";
constexpr size_t kElideAbove = 200;  // shorter messages are not worth eliding

struct ParsedCall {
  WorkerTools::Action action;
  std::string source;
  KnobSetting knobs;
};

Result<WorkerTools::Action> ActionFor(const std::string& name) {
  static const std::pair<const char*, WorkerTools::Action> kNames[] = {
      {"compile", WorkerTools::Action::kCompile},
      {"check", WorkerTools::Action::kCheck},
      {"time", WorkerTools::Action::kTime},
      {"resource_report", WorkerTools::Action::kResourceReport},
      {"sass_summary", WorkerTools::Action::kSassSummary},
      {"submit", WorkerTools::Action::kSubmit},
  };
  for (const auto& [n, a] : kNames) {
    if (name == n)
      return a;
  }
  return Status::Error(
      "unknown tool '{}'; the tools are compile, check, time, resource_report, "
      "sass_summary and submit",
      name);
}

// Parses a tool call's arguments; the error text goes back to the model.
Result<ParsedCall> ParseCall(const ToolCall& call) {
  WS_ASSIGN_OR_RETURN(WorkerTools::Action action, ActionFor(call.name));
  json args = json::parse(call.arguments_json, nullptr, /*allow_exceptions=*/false);
  if (args.is_discarded() || !args.is_object()) {
    return Status::Error(
        "the arguments of {} are not a JSON object; send "
        "{{\"source\": \"<the whole .cu>\", \"knobs\": {{...}}}}",
        call.name);
  }
  ParsedCall p{action, {}, {}};
  auto src = args.find("source");
  if (src == args.end() || !src->is_string() || src->get<std::string>().empty()) {
    return Status::Error("{} needs \"source\": the whole candidate .cu as a string", call.name);
  }
  p.source = src->get<std::string>();
  auto knobs = args.find("knobs");
  if (knobs != args.end() && !knobs->is_null()) {
    if (!knobs->is_object())
      return Status::Error("\"knobs\" must be an object of integers");
    for (const auto& [k, v] : knobs->items()) {
      if (!v.is_number_integer())
        return Status::Error("knob {} must be an integer", k);
      p.knobs[k] = v.get<int64_t>();
    }
  }
  return p;
}

void AddUsage(Usage& sum, const Usage& u) {
  sum.input_tokens += u.input_tokens;
  sum.output_tokens += u.output_tokens;
  sum.cached_input_tokens += u.cached_input_tokens;
  sum.cost_usd += u.cost_usd;
}

}  // namespace

int64_t EstimateTokens(const std::vector<ChatMessage>& messages) {
  int64_t chars = 0;
  for (const auto& m : messages) {
    chars += static_cast<int64_t>(m.content.size()) + 16;
    for (const auto& c : m.tool_calls)
      chars += static_cast<int64_t>(c.arguments_json.size() + c.name.size()) + 16;
  }
  return chars / 4;
}

void FitContext(std::vector<ChatMessage>& messages, int64_t budget_tokens, size_t keep_recent) {
  if (EstimateTokens(messages) <= budget_tokens)
    return;
  const size_t first = 2;  // the system prompt and the task stay
  const size_t end = messages.size() > keep_recent ? messages.size() - keep_recent : 0;
  // Pass 1: old tool outputs. Pass 2: old sources in tool calls and old replies.
  for (int pass = 1; pass <= 2; ++pass) {
    for (size_t i = first; i < end; ++i) {
      ChatMessage& m = messages[i];
      if (pass == 1 && m.role == ChatMessage::Role::kTool && m.content.size() > kElideAbove) {
        m.content = kElidedOutput;
      } else if (pass == 2 && m.role == ChatMessage::Role::kAssistant) {
        for (auto& c : m.tool_calls) {
          if (c.arguments_json.size() > kElideAbove)
            c.arguments_json = kElidedArgs;
        }
        if (m.content.size() > kElideAbove)
          m.content = kElidedReply;
      } else if (pass == 2 && m.role == ChatMessage::Role::kUser &&
                 m.content.size() > kElideAbove) {
        m.content = kElidedOutput;  // feedback on an earlier plain answer
      } else {
        continue;
      }
      if (EstimateTokens(messages) <= budget_tokens)
        return;
    }
  }
}

std::optional<std::string> LastCudaBlock(const std::string& text) {
  std::optional<std::string> last;
  size_t pos = 0;
  while (true) {
    size_t open = text.find("```", pos);
    if (open == std::string::npos)
      break;
    size_t eol = text.find('\n', open);
    if (eol == std::string::npos)
      break;
    std::string lang = text.substr(open + 3, eol - open - 3);
    lang.erase(
        std::remove_if(lang.begin(), lang.end(), [](char c) { return c == ' ' || c == '\r'; }),
        lang.end());
    size_t close = text.find("```", eol + 1);
    if (close == std::string::npos)
      break;
    if (lang == "cuda" || lang == "cu" || lang == "c++" || lang == "cpp")
      last = text.substr(eol + 1, close - eol - 1);
    pos = close + 3;
  }
  return last;
}

WorkerOutcome RunWorker(LlmClient& client, const WorkerOptions& opts, const WorkerBrief& brief,
                        WorkerTools& tools, const CancelToken* cancel) {
  WorkerOutcome out;
  std::vector<ChatMessage> messages;
  messages.push_back({ChatMessage::Role::kSystem, brief.system_prompt, {}, ""});
  messages.push_back({ChatMessage::Role::kUser, brief.task, {}, ""});
  const std::vector<ToolSpec> specs = WorkerToolSpecs();
  bool nudged = false;

  // Runs a submission (a submit call or a plain answer); true when the attempt is over.
  auto submit = [&](const std::string& source, const KnobSetting& knobs,
                    std::string* feedback) -> Result<bool> {
    WS_ASSIGN_OR_RETURN(ToolFeedback fb, tools.Run(WorkerTools::Action::kSubmit, source, knobs));
    *feedback = fb.text;
    if (fb.accepted) {
      out.status = "submitted";
      out.message = fb.verdict;
      out.submitted_evaluation_id = fb.evaluation_id;
      return true;
    }
    return false;
  };

  for (int turn = 0; turn < opts.max_turns; ++turn) {
    if (tools.ShouldStop() || (cancel != nullptr && cancel->cancelled.load())) {
      out.status = "stopped";
      out.message = "stopped before the model submitted (budget spent or stop requested)";
      return out;
    }
    FitContext(messages, std::max<int64_t>(opts.context_tokens - opts.max_output_tokens, 1024));
    ChatRequest req;
    req.model = opts.model;
    req.messages = messages;
    req.tools = specs;
    req.max_output_tokens = opts.max_output_tokens;
    req.temperature = opts.temperature;
    req.cache_prompt = true;  // the next turn repeats this one's messages
    Result<ChatResponse> r = client.Chat(req, cancel);
    if (!r.ok()) {
      out.status = "error";
      out.message =
          fmt::format("the {} endpoint failed: {}", client.provider(), r.status().message());
      return out;
    }
    ++out.turns;
    AddUsage(out.usage, r->usage);
    tools.RecordTurn(r->usage, r->stop_reason);
    ChatMessage reply = r->message;
    reply.role = ChatMessage::Role::kAssistant;
    messages.push_back(reply);

    // A reply cut at the output limit: a tool call's arguments may be incomplete, and the last
    // whole ```cuda block an earlier draft whose final version was cut.
    const bool cut = r->stop_reason == "length";
    const std::string cut_note = fmt::format(
        "your reply was cut off at the output limit ({} tokens); answer with less prose",
        opts.max_output_tokens);
    if (reply.tool_calls.empty() && cut) {
      messages.push_back({ChatMessage::Role::kUser,
                          "Nothing was submitted: " + cut_note +
                              ": a tool call, or the whole candidate in one ```cuda block.",
                          {},
                          ""});
      continue;
    }
    if (reply.tool_calls.empty()) {
      std::optional<std::string> block = LastCudaBlock(reply.content);
      if (!block) {
        if (nudged) {
          out.status = "no_submission";
          out.message = "the model answered without a tool call or a ```cuda block";
          return out;
        }
        nudged = true;
        messages.push_back({ChatMessage::Role::kUser,
                            "Call one of the tools, or answer with the whole candidate in a "
                            "```cuda block.",
                            {},
                            ""});
        continue;
      }
      std::string feedback;
      Result<bool> done = submit(*block, {}, &feedback);
      if (!done.ok()) {
        out.status = "error";
        out.message = done.status().message();
        return out;
      }
      if (*done)
        return out;
      messages.push_back(
          {ChatMessage::Role::kUser,
           "Your candidate was rejected:\n" + feedback + "\nFix it and answer again.",
           {},
           ""});
      continue;
    }

    bool finished = false;
    for (const ToolCall& call : reply.tool_calls) {
      std::string text;
      if (finished) {
        text = "not run: the attempt ended with an accepted submission";
      } else if (Result<ParsedCall> p = ParseCall(call); !p.ok()) {
        text = "error: " + p.status().message() + (cut ? " (" + cut_note + ")" : "");
      } else if (p->action == WorkerTools::Action::kSubmit) {
        Result<bool> done = submit(p->source, p->knobs, &text);
        if (!done.ok()) {
          out.status = "error";
          out.message = done.status().message();
          return out;
        }
        finished = *done;
      } else {
        Result<ToolFeedback> fb = tools.Run(p->action, p->source, p->knobs);
        if (!fb.ok()) {
          out.status = "error";
          out.message = fb.status().message();
          return out;
        }
        text = fb->text;
      }
      messages.push_back({ChatMessage::Role::kTool, text, {}, call.id});
    }
    if (finished)
      return out;
  }
  out.status = "no_submission";
  out.message = fmt::format("no accepted submission in {} turns", opts.max_turns);
  return out;
}

}  // namespace ws
