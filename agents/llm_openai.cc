// OpenAI Chat Completions (POST {base}/chat/completions): OpenAI itself and the servers that copy
// it (vLLM, SGLang, llama.cpp's llama-server, Ollama's /v1).
#include <map>

#include "agents/llm_http.h"
#include "agents/llm_json.h"

namespace ws::llm {
namespace {

Usage ParseUsage(const json& u) {
  Usage out;
  out.input_tokens = Count(u, "prompt_tokens");
  out.output_tokens = Count(u, "completion_tokens");
  out.cached_input_tokens = Count(Obj(u, "prompt_tokens_details"), "cached_tokens");
  return out;
}

std::string NormalizeFinish(const std::string& finish, bool has_tool_calls) {
  if (finish == "function_call")
    return "tool_calls";
  if (!finish.empty())
    return finish;
  return has_tool_calls ? "tool_calls" : "stop";
}

// An error object, from an HTTP error body (status > 0) or inside a 200 reply or stream (0).
AttemptError ErrorFromJson(long status, const json& j, std::string_view raw) {
  std::string message, type, code, param;
  if (j.is_object() && j.contains("error") && j["error"].is_object()) {
    const json& e = j["error"];
    message = Str(e, "message");
    type = Str(e, "type");
    code = Str(e, "code");
    param = Str(e, "param");
    if (code.empty() && e.contains("code") && e["code"].is_number())
      code = e["code"].dump();
  } else if (j.is_object() && j.contains("error") && j["error"].is_string()) {
    message = j["error"].get<std::string>();  // llama.cpp and Ollama sometimes
  } else if (j.is_object() && Str(j, "object") == "error") {
    message = Str(j, "message");  // vLLM's older shape
    type = Str(j, "type");
  }
  ProviderError pe;
  pe.kind = !code.empty() ? code : type;
  pe.message = !message.empty() ? message : Snippet(raw);
  pe.quota = code == "insufficient_quota" || type == "insufficient_quota" ||
             code == "billing_hard_limit_reached" || code == "billing_not_active";
  pe.bad_key = type == "authentication_error" || code == "invalid_api_key";
  // Mid-reply errors are the server's trouble unless it says the request was bad.
  pe.retry_in_reply = type != "invalid_request_error";
  pe.param = param;
  return ClassifyError(status, pe, "error in reply");
}

class OpenAiStream final : public StreamAssembler {
 public:
  std::optional<AttemptError> OnEvent(const SseEvent& ev) override {
    if (ev.data == "[DONE]") {
      done_ = true;
      return std::nullopt;
    }
    json j;
    if (auto e = ParseReply(ev.data, &j))
      return e;
    if (!j.is_object())
      return Malformed("a chunk is not an object", ev.data);
    if (j.contains("error"))
      return ErrorFromJson(0, j, ev.data);
    if (j.contains("usage") && j["usage"].is_object())
      usage_ = ParseUsage(j["usage"]);
    if (!j.contains("choices") || !j["choices"].is_array())
      return std::nullopt;
    for (const json& choice : j["choices"]) {
      if (Int(choice, "index") != 0)
        continue;  // we ask for one choice
      const json& delta = Obj(choice, "delta");
      text_ += Str(delta, "content");
      if (delta.contains("tool_calls") && delta["tool_calls"].is_array()) {
        for (const json& tc : delta["tool_calls"]) AddToolDelta(tc);
      }
      if (std::string f = Str(choice, "finish_reason"); !f.empty())
        finish_ = f;
    }
    return std::nullopt;
  }

  Result<ChatResponse> Finish(AttemptError* err) override {
    // NOTE: [DONE] is optional on some compatible servers; a finish_reason also ends a reply.
    if (!done_ && finish_.empty()) {
      return Failed({"stream ended before the reply finished (no finish_reason, no [DONE])", true},
                    err);
    }
    ChatResponse resp;
    resp.message.role = ChatMessage::Role::kAssistant;
    resp.message.content = std::move(text_);
    resp.message.tool_calls = std::move(calls_);
    resp.stop_reason = NormalizeFinish(finish_, !resp.message.tool_calls.empty());
    resp.usage = usage_;
    return resp;
  }

  Usage usage() const override { return usage_; }

 private:
  void AddToolDelta(const json& tc) {
    int64_t index = tc.contains("index") ? Int(tc, "index") : static_cast<int64_t>(calls_.size());
    std::string id = Str(tc, "id");
    auto slot = slots_.find(index);
    // NOTE: some servers (Ollama) reuse index 0 for parallel calls and tell them apart by id.
    if (slot == slots_.end() ||
        (!id.empty() && !calls_[slot->second].id.empty() && calls_[slot->second].id != id)) {
      calls_.emplace_back();
      slot = slots_.insert_or_assign(index, calls_.size() - 1).first;
    }
    ToolCall& call = calls_[slot->second];
    if (!id.empty())
      call.id = id;
    const json& fn = Obj(tc, "function");
    if (std::string name = Str(fn, "name"); !name.empty() && call.name.empty())
      call.name = name;
    if (fn.contains("arguments")) {
      if (fn["arguments"].is_string()) {
        call.arguments_json += fn["arguments"].get<std::string>();
      } else if (!fn["arguments"].is_null()) {
        call.arguments_json = fn["arguments"].dump();
      }
    }
  }

  std::string text_;
  std::vector<ToolCall> calls_;
  std::map<int64_t, size_t> slots_;  // the stream's tool-call index -> calls_
  std::string finish_;
  Usage usage_;
  bool done_ = false;
};

class OpenAiProtocol final : public WireProtocol {
 public:
  OpenAiProtocol(std::string base_url, std::string api_key, bool official)
      : url_(base_url + "/chat/completions"), api_key_(std::move(api_key)), official_(official) {}

  std::string name() const override { return "openai"; }

  Result<HttpRequest> BuildRequest(const ChatRequest& req, bool stream) const override {
    json messages = json::array();
    for (const ChatMessage& m : req.messages) {
      switch (m.role) {
        case ChatMessage::Role::kSystem:
          messages.push_back({{"role", "system"}, {"content", m.content}});
          break;
        case ChatMessage::Role::kUser:
          messages.push_back({{"role", "user"}, {"content", m.content}});
          break;
        case ChatMessage::Role::kAssistant: {
          json msg = {{"role", "assistant"}};
          msg["content"] =
              m.content.empty() && !m.tool_calls.empty() ? json(nullptr) : json(m.content);
          if (!m.tool_calls.empty()) {
            json calls = json::array();
            for (const ToolCall& c : m.tool_calls) {
              calls.push_back({{"id", c.id},
                               {"type", "function"},
                               {"function", {{"name", c.name}, {"arguments", c.arguments_json}}}});
            }
            msg["tool_calls"] = std::move(calls);
          }
          messages.push_back(std::move(msg));
          break;
        }
        case ChatMessage::Role::kTool:
          messages.push_back(
              {{"role", "tool"}, {"tool_call_id", m.tool_call_id}, {"content", m.content}});
          break;
      }
    }
    json body = {{"model", req.model}, {"messages", std::move(messages)}};
    // NOTE: OpenAI's newer models reject max_tokens; compatible servers may not know the new name.
    body[official_ ? "max_completion_tokens" : "max_tokens"] = req.max_output_tokens;
    if (req.temperature >= 0)
      body["temperature"] = req.temperature;
    if (!req.tools.empty()) {
      json tools = json::array();
      for (const ToolSpec& t : req.tools) {
        WS_ASSIGN_OR_RETURN(json schema, ToolSchema(t));
        tools.push_back(
            {{"type", "function"},
             {"function",
              {{"name", t.name}, {"description", t.description}, {"parameters", schema}}}});
      }
      body["tools"] = std::move(tools);
    }
    if (stream) {
      body["stream"] = true;
      body["stream_options"] = {{"include_usage", true}};
    }
    std::vector<std::string> headers;
    if (!api_key_.empty())  // a local server may want none
      headers.push_back("Authorization: Bearer " + api_key_);
    return JsonPost(url_, std::move(headers), body, stream);
  }

  Result<ChatResponse> ParseBody(std::string_view body, AttemptError* err) const override {
    json j;
    if (auto e = ParseReply(body, &j))
      return Failed(std::move(*e), err);
    if (j.is_object() && (j.contains("error") || Str(j, "object") == "error"))
      return Failed(ErrorFromJson(0, j, body), err);
    if (!j.is_object() || !j.contains("choices") || !j["choices"].is_array() ||
        j["choices"].empty()) {
      return Failed(Malformed("no choices in the reply", body), err);
    }
    const json& choice = j["choices"][0];
    const json& msg = Obj(choice, "message");
    ChatResponse resp;
    resp.message.role = ChatMessage::Role::kAssistant;
    resp.message.content = Str(msg, "content");
    if (msg.contains("tool_calls") && msg["tool_calls"].is_array()) {
      for (const json& tc : msg["tool_calls"]) {
        ToolCall call;
        call.id = Str(tc, "id");
        const json& fn = Obj(tc, "function");
        call.name = Str(fn, "name");
        if (fn.contains("arguments")) {
          call.arguments_json = fn["arguments"].is_string() ? fn["arguments"].get<std::string>()
                                                            : fn["arguments"].dump();
        }
        resp.message.tool_calls.push_back(std::move(call));
      }
    }
    resp.stop_reason =
        NormalizeFinish(Str(choice, "finish_reason"), !resp.message.tool_calls.empty());
    resp.usage = ParseUsage(Obj(j, "usage"));
    return resp;
  }

  std::unique_ptr<StreamAssembler> NewStream() const override {
    return std::make_unique<OpenAiStream>();
  }

  AttemptError ClassifyHttpError(long status, std::string_view body) const override {
    return ErrorFromJson(status, ParseOrNull(body), body);
  }

 private:
  const std::string url_;
  const std::string api_key_;
  const bool official_;
};

}  // namespace

std::unique_ptr<WireProtocol> MakeOpenAiProtocol(const std::string& base_url,
                                                 const std::string& api_key,
                                                 bool official_endpoint) {
  return std::make_unique<OpenAiProtocol>(base_url, api_key, official_endpoint);
}

}  // namespace ws::llm
