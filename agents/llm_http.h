// Internal to agents/: the HTTP transport (libcurl), the retry policy and the wire-protocol seam
// that the OpenAI and Anthropic clients fill in. Other components use agents/agents.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "agents/agents.h"
#include "agents/sse.h"

namespace ws::llm {

// ---- Transport ----------------------------------------------------------------------------------

struct HttpRequest {
  std::string url;
  std::vector<std::string> headers;  // "Name: value"
  std::string body;
  bool stream = false;  // asks for text/event-stream
};

struct HttpResponse {
  enum class Failure { kNone, kTransport, kStalled, kCancelled, kSinkStopped };
  Failure failure = Failure::kNone;
  std::string error;                           // what failed, for kTransport and kStalled
  long status = 0;                             // 0 when no response came
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;                            // unless it went to the sink
  bool streamed = false;                       // the body went to the sink
  double retry_after_s = -1;                   // retry-after-ms / retry-after; -1 when absent
};

struct HttpOptions {
  double connect_timeout_s = 20;
  double stall_timeout_s = 120;  // no bytes for this long cuts the transfer (kStalled)
  double total_timeout_s = 900;
};

/// Receives a 2xx text/event-stream body as it arrives. Returns false to stop the transfer.
using BodySink = std::function<bool(std::string_view)>;

/// One POST on its own easy handle: thread-safe. Never throws; failures are in the response.
/// `cancel` is polled about every 20 ms.
HttpResponse HttpPost(const HttpRequest& req, const HttpOptions& opt, const CancelToken* cancel,
                      const BodySink& sink);

/// curl_global_init, once per process.
void InitCurlOnce();

// ---- Protocols ----------------------------------------------------------------------------------

/// Why one attempt failed, and whether another may succeed.
struct AttemptError {
  std::string message;
  bool retryable = false;
  bool malformed = false;  // the server's JSON did not parse: retried once only
  double retry_after_s = -1;
  /// A request parameter the server refused by name (OpenAI's error.param on a 400), e.g.
  /// "temperature" for the reasoning models, which take only their default.
  std::string rejected_param = "";
};

/// Assembles one streamed reply from its events.
class StreamAssembler {
 public:
  virtual ~StreamAssembler() = default;
  /// An error ends the attempt (an `error` event, unparseable data).
  virtual std::optional<AttemptError> OnEvent(const SseEvent& ev) = 0;
  /// After the transfer ends cleanly: the reply, or an error when the stream stopped early.
  virtual Result<ChatResponse> Finish(AttemptError* err) = 0;
  /// Tokens the server reported so far (counted even when the attempt fails).
  virtual Usage usage() const = 0;
};

/// One wire format. Implementations are stateless and thread-safe.
class WireProtocol {
 public:
  virtual ~WireProtocol() = default;
  virtual std::string name() const = 0;
  /// Errors here are the caller's (a bad tool schema): final, not retried.
  virtual Result<HttpRequest> BuildRequest(const ChatRequest& req, bool stream) const = 0;
  /// A non-streamed 2xx body.
  virtual Result<ChatResponse> ParseBody(std::string_view body, AttemptError* err) const = 0;
  virtual std::unique_ptr<StreamAssembler> NewStream() const = 0;
  /// A non-2xx reply: retryable or final, and the provider's message.
  virtual AttemptError ClassifyHttpError(long status, std::string_view body) const = 0;
};

std::unique_ptr<WireProtocol> MakeOpenAiProtocol(const std::string& base_url,
                                                 const std::string& api_key,
                                                 bool official_endpoint);
std::unique_ptr<WireProtocol> MakeAnthropicProtocol(const std::string& base_url,
                                                    const std::string& api_key);

/// The client over any protocol: retries, backoff, usage and cost.
std::unique_ptr<LlmClient> MakeHttpClient(const LlmConfig& cfg,
                                          std::unique_ptr<WireProtocol> protocol);

// ---- Helpers shared by the protocols ------------------------------------------------------------

/// Cost of `u` at `p`; cached input tokens are part of input_tokens and priced apart.
double CostUsd(const Usage& u, const Prices& p);

/// Retry policy for an HTTP status with no more specific knowledge.
bool RetryableStatus(long status);

/// Shortens a server body for an error message.
std::string Snippet(std::string_view body, size_t max = 300);

/// A reply that is not the JSON it should be (retried once only).
AttemptError Malformed(std::string_view what, std::string_view raw);

/// Stores `e` in `*err` and returns its message as a Status: how ParseBody and Finish fail.
Status Failed(AttemptError e, AttemptError* err);

/// A provider's error object, as its protocol reads it.
struct ProviderError {
  std::string kind;  // its type or code; "" when it has none
  std::string message;
  bool quota = false;          // the quota or credit is spent: final
  bool bad_key = false;        // rejected key or permission (besides HTTP 401 and 403): final
  bool retry_in_reply = true;  // whether an error inside a 2xx reply or stream is retried
  std::string param;           // the request parameter a 400 refused by name
};

/// `e` as one attempt's error, from an HTTP error (status > 0) or from inside a reply (status 0,
/// labelled `in_reply`): "HTTP 429 kind: message", with why it is final when it is.
AttemptError ClassifyError(long status, const ProviderError& e, std::string_view in_reply);

}  // namespace ws::llm
