// Anthropic Messages (POST {base}/v1/messages, anthropic-version 2023-06-01).
#include <map>

#include "agents/llm_http.h"
#include "agents/llm_json.h"

namespace ws::llm {
namespace {

// Anthropic's input_tokens leaves out cache reads and writes; ours is the whole input.
Usage ParseUsage(const json& u, Usage into = {}) {
  if (u.contains("input_tokens") || u.contains("cache_read_input_tokens")) {
    into.cached_input_tokens = Count(u, "cache_read_input_tokens");
    into.cache_write_input_tokens = Count(u, "cache_creation_input_tokens");
    into.input_tokens =
        Count(u, "input_tokens") + into.cache_write_input_tokens + into.cached_input_tokens;
  }
  if (u.contains("output_tokens"))
    into.output_tokens = Count(u, "output_tokens");
  return into;
}

std::string NormalizeStop(const std::string& s) {
  if (s == "end_turn" || s == "stop_sequence")
    return "stop";
  if (s == "tool_use")
    return "tool_calls";
  if (s == "max_tokens")
    return "length";
  return s.empty() ? "stop" : s;
}

AttemptError ErrorFromJson(long status, const json& j, std::string_view raw) {
  const json& e = Obj(j, "error");
  ProviderError pe;
  pe.kind = Str(e, "type");
  const std::string& type = pe.kind;
  pe.message = Str(e, "message");
  if (pe.message.empty())
    pe.message = Snippet(raw);
  pe.quota = Str(Obj(e, "details"), "error_code") == "enforced_spend_limit_reached" ||
             pe.message.find("credit balance") != std::string::npos;
  pe.bad_key = type == "authentication_error" || type == "permission_error";
  pe.retry_in_reply = type == "overloaded_error" || type == "api_error" ||
                      type == "rate_limit_error" || type == "timeout_error" || type.empty();
  return ClassifyError(status, pe, "error event");
}

class AnthropicStream final : public StreamAssembler {
 public:
  std::optional<AttemptError> OnEvent(const SseEvent& ev) override {
    if (ev.event == "ping")
      return std::nullopt;
    json j;
    if (auto e = ParseReply(ev.data, &j))
      return e;
    if (!j.is_object())
      return Malformed("an event is not an object", ev.data);
    std::string type = ev.event.empty() ? Str(j, "type") : ev.event;
    if (type == "error")
      return ErrorFromJson(0, j, ev.data);
    if (type == "message_start") {
      usage_ = ParseUsage(Obj(Obj(j, "message"), "usage"));
    } else if (type == "content_block_start") {
      const json& block = Obj(j, "content_block");
      Block& b = blocks_[Int(j, "index")];
      b.type = Str(block, "type");
      if (b.type == "text") {
        text_ += Str(block, "text");
      } else if (b.type == "tool_use") {
        b.call = calls_.size();
        calls_.push_back({Str(block, "id"), Str(block, "name"), ""});
      }
    } else if (type == "content_block_delta") {
      const json& delta = Obj(j, "delta");
      std::string kind = Str(delta, "type");
      auto b = blocks_.find(Int(j, "index"));
      if (kind == "text_delta") {
        text_ += Str(delta, "text");
      } else if (kind == "input_json_delta" && b != blocks_.end() && b->second.type == "tool_use") {
        calls_[b->second.call].arguments_json += Str(delta, "partial_json");
      }
      // thinking_delta and signature_delta are not kept.
    } else if (type == "message_delta") {
      if (std::string s = Str(Obj(j, "delta"), "stop_reason"); !s.empty())
        stop_ = s;
      usage_ = ParseUsage(Obj(j, "usage"), usage_);  // cumulative counts
    } else if (type == "message_stop") {
      done_ = true;
    }
    return std::nullopt;
  }

  Result<ChatResponse> Finish(AttemptError* err) override {
    if (!done_)
      return Failed({"stream ended before message_stop", true}, err);
    ChatResponse resp;
    resp.message.role = ChatMessage::Role::kAssistant;
    resp.message.content = std::move(text_);
    for (ToolCall& c : calls_) {
      if (c.arguments_json.empty())
        c.arguments_json = "{}";  // a tool with no parameters
    }
    resp.message.tool_calls = std::move(calls_);
    resp.stop_reason = NormalizeStop(stop_);
    resp.usage = usage_;
    return resp;
  }

  Usage usage() const override { return usage_; }

 private:
  struct Block {
    std::string type;
    size_t call = 0;
  };
  std::map<int64_t, Block> blocks_;
  std::string text_;
  std::vector<ToolCall> calls_;
  std::string stop_;
  Usage usage_;
  bool done_ = false;
};

class AnthropicProtocol final : public WireProtocol {
 public:
  AnthropicProtocol(const std::string& base_url, std::string api_key)
      : url_(base_url + "/v1/messages"), api_key_(std::move(api_key)) {}

  std::string name() const override { return "anthropic"; }

  Result<HttpRequest> BuildRequest(const ChatRequest& req, bool stream) const override {
    std::string system;
    json messages = json::array();
    // Consecutive turns of one role merge into one message: tool results for parallel calls go
    // back together, as blocks of one user message.
    auto append = [&](const char* role, json block) {
      if (!messages.empty() && messages.back()["role"] == role) {
        messages.back()["content"].push_back(std::move(block));
      } else {
        messages.push_back({{"role", role}, {"content", json::array({std::move(block)})}});
      }
    };
    for (const ChatMessage& m : req.messages) {
      switch (m.role) {
        case ChatMessage::Role::kSystem:
          system += (system.empty() ? "" : "\n\n") + m.content;
          break;
        case ChatMessage::Role::kUser:
          append("user", {{"type", "text"}, {"text", m.content}});
          break;
        case ChatMessage::Role::kAssistant:
          if (!m.content.empty() || m.tool_calls.empty()) {
            append("assistant", {{"type", "text"}, {"text", m.content}});
          }
          for (const ToolCall& c : m.tool_calls) {
            json input;
            try {
              input = c.arguments_json.empty() ? json::object() : json::parse(c.arguments_json);
            } catch (const json::exception&) {
              input = nullptr;
            }
            // NOTE: `input` must be an object; a model's broken arguments are kept as text so the
            // model sees what it sent next to the error the tool returned.
            if (!input.is_object())
              input = {{"_unparsed_arguments", c.arguments_json}};
            append("assistant",
                   {{"type", "tool_use"}, {"id", c.id}, {"name", c.name}, {"input", input}});
          }
          break;
        case ChatMessage::Role::kTool:
          append(
              "user",
              {{"type", "tool_result"}, {"tool_use_id", m.tool_call_id}, {"content", m.content}});
          break;
      }
    }
    // Cache breakpoints: the system prompt (the same across a worker's attempts), and the end of
    // the conversation, so the next turn reads everything before it from the cache.
    const json ephemeral = {{"type", "ephemeral"}};
    if (req.cache_prompt && !messages.empty())
      messages.back()["content"].back()["cache_control"] = ephemeral;
    json body = {{"model", req.model},
                 {"max_tokens", req.max_output_tokens},
                 {"messages", std::move(messages)}};
    if (!system.empty() && req.cache_prompt) {
      body["system"] =
          json::array({{{"type", "text"}, {"text", system}, {"cache_control", ephemeral}}});
    } else if (!system.empty()) {
      body["system"] = system;
    }
    if (req.temperature >= 0)
      body["temperature"] = std::min(req.temperature, 1.0);
    if (!req.tools.empty()) {
      json tools = json::array();
      for (const ToolSpec& t : req.tools) {
        WS_ASSIGN_OR_RETURN(json schema, ToolSchema(t));
        tools.push_back(
            {{"name", t.name}, {"description", t.description}, {"input_schema", schema}});
      }
      body["tools"] = std::move(tools);
    }
    if (stream)
      body["stream"] = true;
    return JsonPost(url_, {"x-api-key: " + api_key_, "anthropic-version: 2023-06-01"}, body,
                    stream);
  }

  Result<ChatResponse> ParseBody(std::string_view body, AttemptError* err) const override {
    json j;
    if (auto e = ParseReply(body, &j))
      return Failed(std::move(*e), err);
    if (Str(j, "type") == "error")
      return Failed(ErrorFromJson(0, j, body), err);
    if (!j.is_object() || !j.contains("content") || !j["content"].is_array())
      return Failed(Malformed("no content in the reply", body), err);
    ChatResponse resp;
    resp.message.role = ChatMessage::Role::kAssistant;
    for (const json& block : j["content"]) {
      std::string type = Str(block, "type");
      if (type == "text") {
        resp.message.content += Str(block, "text");
      } else if (type == "tool_use") {
        ToolCall call{Str(block, "id"), Str(block, "name"), "{}"};
        if (block.contains("input")) {
          // A string is not what Anthropic sends, but a proxy might: pass it on as it came.
          call.arguments_json = block["input"].is_string() ? block["input"].get<std::string>()
                                                           : block["input"].dump();
        }
        resp.message.tool_calls.push_back(std::move(call));
      }
    }
    resp.stop_reason = NormalizeStop(Str(j, "stop_reason"));
    resp.usage = ParseUsage(Obj(j, "usage"));
    return resp;
  }

  std::unique_ptr<StreamAssembler> NewStream() const override {
    return std::make_unique<AnthropicStream>();
  }

  AttemptError ClassifyHttpError(long status, std::string_view body) const override {
    return ErrorFromJson(status, ParseOrNull(body), body);
  }

 private:
  const std::string url_;
  const std::string api_key_;
};

}  // namespace

std::unique_ptr<WireProtocol> MakeAnthropicProtocol(const std::string& base_url,
                                                    const std::string& api_key) {
  return std::make_unique<AnthropicProtocol>(base_url, api_key);
}

}  // namespace ws::llm
