// Agents: the roles that write kernels (planner, worker, reviewer) and their brains: LLM clients
// over HTTP (OpenAI-compatible Chat Completions, Anthropic Messages) and the tuner, which needs
// no network. This header is the seam between the campaign engine and the brains.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace ws {

// ---- Conversations ------------------------------------------------------------------------------

struct ToolCall {
  std::string id;              // as the provider named it; echoed back in the tool result
  std::string name;
  std::string arguments_json;  // the raw JSON text the model produced (may be malformed)
};

struct ChatMessage {
  enum class Role { kSystem, kUser, kAssistant, kTool };
  Role role = Role::kUser;
  std::string content;                 // text (for kTool: the tool's result)
  std::vector<ToolCall> tool_calls;    // kAssistant only
  std::string tool_call_id;            // kTool only: which call this answers
};

/// A tool the model may call. `parameters_schema` is a JSON Schema object, as text.
struct ToolSpec {
  std::string name;
  std::string description;
  std::string parameters_schema;
};

struct ChatRequest {
  std::string model;
  std::vector<ChatMessage> messages;   // a leading kSystem message is the system prompt
  std::vector<ToolSpec> tools;
  int max_output_tokens = 8192;
  double temperature = 0.7;
  /// Marks the prompt for the provider's cache (Anthropic's cache_control; OpenAI caches long
  /// prefixes by itself): worth its write price when the next request repeats this one's prefix,
  /// as a worker's turns do.
  bool cache_prompt = false;
};

struct Usage {
  int64_t input_tokens = 0;            // all of the prompt, cache reads and writes included
  int64_t output_tokens = 0;
  int64_t cached_input_tokens = 0;     // of input_tokens: read from the provider's prompt cache
  int64_t cache_write_input_tokens = 0;  // of input_tokens: written to it (Anthropic)
  double cost_usd = 0;                 // from the configured prices; 0 when unknown
};

struct ChatResponse {
  ChatMessage message;                 // role kAssistant
  Usage usage;
  std::string stop_reason;             // "stop", "tool_calls", "length", ... as normalized
  int attempts = 1;                    // HTTP attempts it took (retries included)
};

/// Cancels an in-flight call from another thread (a budget ran out, the user stopped).
struct CancelToken {
  std::atomic<bool> cancelled{false};
};

/// One chat turn against some model. Implementations are thread-safe: many agents share one.
class LlmClient {
 public:
  virtual ~LlmClient() = default;
  /// Sends one turn, retrying transient failures per the client's policy. An error Status says
  /// what failed and whether it is final (quota gone, bad key) in its message.
  virtual Result<ChatResponse> Chat(const ChatRequest& req, const CancelToken* cancel) = 0;
  virtual std::string provider() const = 0;  // "openai", "anthropic"
};

/// USD per million tokens. A cache price of 0 charges the input price.
struct Prices {
  double input_per_mtok = 0;
  double output_per_mtok = 0;
  double cached_input_per_mtok = 0;    // a prompt-cache read
  double cache_write_per_mtok = 0;     // a prompt-cache write (Anthropic: 1.25x input, 5 minutes)
};

/// "IN,OUT[,CACHE_READ[,CACHE_WRITE]]" in USD per million tokens, e.g. "3,15,0.3,3.75".
Result<Prices> ParsePrices(std::string_view text);

struct LlmConfig {
  std::string provider;                // "openai" or "anthropic"
  std::string model;
  std::string base_url;                // default: the provider's public endpoint
  std::string api_key;                 // default: $OPENAI_API_KEY / $ANTHROPIC_API_KEY
  Prices prices;
  int max_attempts = 6;
  double initial_backoff_s = 1.0;
  double max_backoff_s = 60.0;
  double connect_timeout_s = 20;
  double stall_timeout_s = 120;        // a stream that sends nothing this long is cut
  double total_timeout_s = 900;
  bool stream = true;                  // server-sent events
};

/// Makes a client for `cfg.provider`. Errors name the unknown provider or the missing key.
/// Keys: `cfg.api_key`, else $OPENAI_API_KEY / $ANTHROPIC_API_KEY; an `openai` client with a
/// base_url of its own (a local server) may have none. Clients retry 408, 409, 429, 5xx, 529,
/// connection errors, stalled streams and Anthropic's error event after HTTP 200, waiting at least
/// what `retry-after` asks; they do not retry a spent quota, a bad key or a rejected request.
/// `Usage` counts tokens the server reported on attempts that failed part-way, too.
Result<std::unique_ptr<LlmClient>> MakeLlmClient(const LlmConfig& cfg);

/// True when `s`, an error from LlmClient::Chat, says that retrying the call will not help: quota
/// gone, bad key, a request the server rejects, malformed replies twice. Its message then holds
/// "final". Transient failures that used up max_attempts and cancellations are not final.
bool IsFinalLlmError(const Status& s);

}  // namespace ws
