#include "agents/llm_http.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <mutex>
#include <random>
#include <thread>

#include <curl/curl.h>

namespace ws::llm {
namespace {

using Clock = std::chrono::steady_clock;

constexpr size_t kMaxBody = 64 << 20;  // a reply larger than this is not an LLM reply

struct Transfer {
  HttpResponse* resp;
  const BodySink* sink;
  const CancelToken* cancel;
  CURL* easy;
  Clock::time_point last_bytes;
  bool decided = false;  // whether the body goes to the sink, decided at its first byte
  bool to_sink = false;
  bool sink_stopped = false;
  bool too_large = false;
};

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return std::tolower(c); });
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() &&
         (s.back() == ' ' || s.back() == '\t' || s.back() == '\r' || s.back() == '\n'))
    s.remove_suffix(1);
  return s;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view line(data, size * n);
  t->last_bytes = Clock::now();
  if (line.rfind("HTTP/", 0) == 0) {
    t->resp->headers.clear();  // a new response (after a 100 Continue or an interim reply)
    return size * n;
  }
  if (auto colon = line.find(':'); colon != std::string_view::npos) {
    t->resp->headers[Lower(Trim(line.substr(0, colon)))] =
        std::string(Trim(line.substr(colon + 1)));
  }
  return size * n;
}

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* t = static_cast<Transfer*>(user);
  std::string_view bytes(data, size * n);
  t->last_bytes = Clock::now();
  if (!t->decided) {
    t->decided = true;
    long status = 0;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    auto ct = t->resp->headers.find("content-type");
    bool event_stream = ct != t->resp->headers.end() &&
                        Lower(ct->second).find("text/event-stream") != std::string::npos;
    // NOTE: errors and servers that ignore `stream` answer with plain JSON: keep that whole.
    t->to_sink = *t->sink && status >= 200 && status < 300 && event_stream;
    t->resp->streamed = t->to_sink;
  }
  if (t->to_sink) {
    if (!(*t->sink)(bytes)) {
      t->sink_stopped = true;
      return 0;  // aborts the transfer with CURLE_WRITE_ERROR
    }
    return bytes.size();
  }
  if (t->resp->body.size() + bytes.size() > kMaxBody) {
    t->too_large = true;
    return 0;
  }
  t->resp->body.append(bytes);
  return bytes.size();
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* t = static_cast<Transfer*>(user);
  return t->cancel && t->cancel->cancelled.load() ? 1 : 0;
}

// Seconds from a retry-after value that is a number (curl parses only whole seconds and dates).
std::optional<double> ParseSeconds(const std::string& v) {
  if (v.empty())
    return std::nullopt;
  char* end = nullptr;
  double s = std::strtod(v.c_str(), &end);
  if (end == v.c_str() || !Trim(end).empty() || !std::isfinite(s) || s < 0)
    return std::nullopt;
  return s;
}

double Jitter01() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return std::uniform_real_distribution<double>(0, 1)(rng);
}

}  // namespace

void InitCurlOnce() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

HttpResponse HttpPost(const HttpRequest& req, const HttpOptions& opt, const CancelToken* cancel,
                      const BodySink& sink) {
  InitCurlOnce();
  HttpResponse resp;
  char errbuf[CURL_ERROR_SIZE] = {0};  // declared first: it outlives the easy handle
  std::unique_ptr<CURL, decltype(&curl_easy_cleanup)> easy(curl_easy_init(), &curl_easy_cleanup);
  std::unique_ptr<CURLM, decltype(&curl_multi_cleanup)> multi(curl_multi_init(),
                                                              &curl_multi_cleanup);
  if (!easy || !multi) {
    resp.failure = HttpResponse::Failure::kTransport;
    resp.error = "curl: out of memory";
    return resp;
  }
  curl_slist* headers = nullptr;
  for (const auto& h : req.headers) headers = curl_slist_append(headers, h.c_str());
  headers = curl_slist_append(headers, "Content-Type: application/json");
  headers = curl_slist_append(
      headers, req.stream ? "Accept: text/event-stream" : "Accept: application/json");
  // NOTE: without this, curl waits up to a second for "100 Continue" before sending a large body.
  headers = curl_slist_append(headers, "Expect:");
  std::unique_ptr<curl_slist, decltype(&curl_slist_free_all)> header_list(headers,
                                                                          &curl_slist_free_all);

  Transfer t{&resp, &sink, cancel, easy.get(), Clock::now()};
  CURL* e = easy.get();
  curl_easy_setopt(e, CURLOPT_URL, req.url.c_str());
  curl_easy_setopt(e, CURLOPT_POST, 1L);
  curl_easy_setopt(e, CURLOPT_POSTFIELDS, req.body.data());
  curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "warpsmith/0.1");
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);  // threads: no SIGALRM for DNS timeouts
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, &OnHeader);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, &t);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, &OnBody);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, &t);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, &OnProgress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, &t);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(opt.connect_timeout_s * 1000));
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, static_cast<long>(opt.total_timeout_s * 1000));
  // The low-speed limit works in whole seconds; the loop below also cuts sub-second stalls.
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_LIMIT, 1L);
  curl_easy_setopt(e, CURLOPT_LOW_SPEED_TIME,
                   std::max(1L, static_cast<long>(std::ceil(opt.stall_timeout_s))));
  curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);

  curl_multi_add_handle(multi.get(), e);
  CURLcode code = CURLE_OK;
  bool done = false;
  while (!done) {
    int running = 0;
    CURLMcode mc = curl_multi_perform(multi.get(), &running);
    if (mc != CURLM_OK) {
      resp.failure = HttpResponse::Failure::kTransport;
      resp.error = std::string("curl: ") + curl_multi_strerror(mc);
      break;
    }
    int left = 0;
    while (CURLMsg* m = curl_multi_info_read(multi.get(), &left)) {
      if (m->msg == CURLMSG_DONE) {
        code = m->data.result;
        done = true;
      }
    }
    if (done)
      break;
    if (cancel && cancel->cancelled.load()) {
      resp.failure = HttpResponse::Failure::kCancelled;
      break;
    }
    double idle = std::chrono::duration<double>(Clock::now() - t.last_bytes).count();
    if (idle > opt.stall_timeout_s) {
      resp.failure = HttpResponse::Failure::kStalled;
      resp.error = fmt::format("stalled: no bytes for {:.1f} s", idle);
      break;
    }
    curl_multi_poll(multi.get(), nullptr, 0, 20, nullptr);
  }
  curl_multi_remove_handle(multi.get(), e);

  curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &resp.status);
  if (resp.failure == HttpResponse::Failure::kNone && code != CURLE_OK) {
    if (t.sink_stopped) {
      resp.failure = HttpResponse::Failure::kSinkStopped;
    } else if (code == CURLE_ABORTED_BY_CALLBACK) {
      resp.failure = HttpResponse::Failure::kCancelled;
    } else if (code == CURLE_OPERATION_TIMEDOUT && resp.status != 0 &&
               std::string_view(errbuf).find("too slow") != std::string_view::npos) {
      resp.failure = HttpResponse::Failure::kStalled;
      resp.error = fmt::format("stalled: {}", errbuf);
    } else {
      resp.failure = HttpResponse::Failure::kTransport;
      resp.error = fmt::format("{}{}{}", curl_easy_strerror(code), errbuf[0] ? ": " : "", errbuf);
      if (t.too_large)
        resp.error = "reply larger than 64 MiB";
    }
  }
  auto ms = resp.headers.find("retry-after-ms");
  auto ra = resp.headers.find("retry-after");
  if (ms != resp.headers.end() && ParseSeconds(ms->second)) {
    resp.retry_after_s = *ParseSeconds(ms->second) / 1000;
  } else if (ra != resp.headers.end()) {
    if (auto s = ParseSeconds(ra->second)) {
      resp.retry_after_s = *s;
    } else {
      curl_off_t after = -1;  // curl turns an HTTP date into seconds from now
      if (curl_easy_getinfo(e, CURLINFO_RETRY_AFTER, &after) == CURLE_OK && after >= 0)
        resp.retry_after_s = static_cast<double>(after);
    }
  }
  return resp;
}

double CostUsd(const Usage& u, const Prices& p) {
  const int64_t cached = std::clamp<int64_t>(u.cached_input_tokens, 0, u.input_tokens);
  const int64_t written =
      std::clamp<int64_t>(u.cache_write_input_tokens, 0, u.input_tokens - cached);
  const auto or_input = [&](double price) { return price > 0 ? price : p.input_per_mtok; };
  return (static_cast<double>(u.input_tokens - cached - written) * p.input_per_mtok +
          static_cast<double>(cached) * or_input(p.cached_input_per_mtok) +
          static_cast<double>(written) * or_input(p.cache_write_per_mtok) +
          static_cast<double>(u.output_tokens) * p.output_per_mtok) /
         1e6;
}

bool RetryableStatus(long status) {
  return status == 408 || status == 409 || status == 429 || status >= 500;
}

std::string Snippet(std::string_view body, size_t max) {
  std::string s(Trim(body));
  for (char& c : s)
    if (c == '\n' || c == '\r')
      c = ' ';
  if (s.size() > max)
    s = s.substr(0, max) + "...";
  return s;
}

AttemptError Malformed(std::string_view what, std::string_view raw) {
  AttemptError e;
  e.message = fmt::format("malformed JSON from server: {}; got: {}", what, Snippet(raw, 200));
  e.retryable = true;
  e.malformed = true;
  return e;
}

Status Failed(AttemptError e, AttemptError* err) {
  *err = std::move(e);
  return Status::Error("{}", err->message);
}

AttemptError ClassifyError(long status, const ProviderError& e, std::string_view in_reply) {
  AttemptError err;
  err.message =
      fmt::format("{}{}{}: {}", status ? fmt::format("HTTP {}", status) : std::string(in_reply),
                  e.kind.empty() ? "" : " ", e.kind, e.message);
  if (e.quota) {
    err.message += " (quota exhausted)";
    err.retryable = false;
  } else if (status == 401 || status == 403 || e.bad_key) {
    err.message += " (check the API key)";
    err.retryable = false;
  } else if (status) {
    err.retryable = RetryableStatus(status);
    if (status == 400)
      err.rejected_param = e.param;
  } else {
    err.retryable = e.retry_in_reply;
  }
  return err;
}

namespace {

void Add(Usage& into, const Usage& u) {
  into.input_tokens += u.input_tokens;
  into.output_tokens += u.output_tokens;
  into.cached_input_tokens += u.cached_input_tokens;
  into.cache_write_input_tokens += u.cache_write_input_tokens;
}

class HttpClient final : public LlmClient {
 public:
  HttpClient(const LlmConfig& cfg, std::unique_ptr<WireProtocol> protocol)
      : cfg_(cfg), protocol_(std::move(protocol)) {
    http_.connect_timeout_s = cfg.connect_timeout_s;
    http_.stall_timeout_s = cfg.stall_timeout_s;
    http_.total_timeout_s = cfg.total_timeout_s;
  }

  std::string provider() const override { return protocol_->name(); }

  Result<ChatResponse> Chat(const ChatRequest& in, const CancelToken* cancel) override {
    const std::string who = protocol_->name();
    ChatRequest req = in;
    if (req.model.empty())
      req.model = cfg_.model;
    if (req.model.empty())
      return Status::Error("{}: final: no model named", who);
    if (no_temperature_.load())
      req.temperature = -1;
    auto http = protocol_->BuildRequest(req, cfg_.stream);
    if (!http.ok())
      return Status::Error("{}: final: {}", who, http.status().message());

    Usage spent;  // tokens reported by attempts that failed part-way
    int malformed = 0;
    const int max_attempts = std::max(1, cfg_.max_attempts);
    for (int attempt = 1;; ++attempt) {
      if (Cancelled(cancel))
        return Status::Error("{}: cancelled", who);
      AttemptError err;
      Usage partial;
      auto reply = Attempt(*http, cancel, &err, &partial);
      if (reply.ok()) {
        ChatResponse resp = std::move(reply).value();
        Add(resp.usage, spent);
        resp.usage.cost_usd = CostUsd(resp.usage, cfg_.prices);
        resp.attempts = attempt;
        return resp;
      }
      Add(spent, partial);
      if (err.message == "cancelled")
        return Status::Error("{}: cancelled", who);
      if (err.malformed && ++malformed >= 2) {
        return Status::Error("{}: final: {} (twice; attempt {})", who, err.message, attempt);
      }
      // A model that takes only its default temperature (OpenAI's reasoning models): the same
      // request without one, now and for the rest of this client's calls.
      if (err.rejected_param == "temperature" && req.temperature >= 0) {
        no_temperature_.store(true);
        req.temperature = -1;
        http = protocol_->BuildRequest(req, cfg_.stream);
        if (!http.ok())
          return Status::Error("{}: final: {}", who, http.status().message());
        continue;
      }
      if (!err.retryable)
        return Status::Error("{}: final: {}", who, err.message);
      if (attempt >= max_attempts) {
        return Status::Error("{}: {} (gave up after {} attempts)", who, err.message, attempt);
      }
      // Exponential backoff with jitter in [0.5, 1] of the step; retry-after is the minimum.
      double step =
          std::min(cfg_.max_backoff_s, cfg_.initial_backoff_s * std::pow(2.0, attempt - 1));
      double wait = step * (0.5 + 0.5 * Jitter01());
      // NOTE: a server asking for more than ten minutes is capped there; the call's budget is
      // the caller's business (it can cancel).
      if (err.retry_after_s >= 0)
        wait = std::max(wait, std::min(err.retry_after_s, 600.0));
      if (!Sleep(wait, cancel))
        return Status::Error("{}: cancelled", who);
    }
  }

 private:
  static bool Cancelled(const CancelToken* c) { return c && c->cancelled.load(); }

  static bool Sleep(double seconds, const CancelToken* cancel) {
    auto until = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                    std::chrono::duration<double>(seconds));
    while (Clock::now() < until) {
      if (Cancelled(cancel))
        return false;
      Clock::duration left = until - Clock::now();
      std::this_thread::sleep_for(std::min<Clock::duration>(left, std::chrono::milliseconds(10)));
    }
    return !Cancelled(cancel);
  }

  Result<ChatResponse> Attempt(const HttpRequest& http, const CancelToken* cancel,
                               AttemptError* err, Usage* partial) {
    SseParser parser;
    auto stream = protocol_->NewStream();
    std::optional<AttemptError> stream_err;
    BodySink sink;
    if (http.stream) {
      sink = [&](std::string_view bytes) {
        return parser.Feed(bytes, [&](const SseEvent& ev) {
          stream_err = stream->OnEvent(ev);
          return !stream_err;
        });
      };
    }
    HttpResponse r = HttpPost(http, http_, cancel, sink);
    *partial = stream->usage();
    auto fail = [&](AttemptError e) { return Failed(std::move(e), err); };
    using F = HttpResponse::Failure;
    if (r.failure == F::kCancelled)
      return fail({"cancelled", false});
    if (stream_err)
      return fail(*stream_err);
    if (r.failure == F::kStalled)
      return fail({r.error, true});
    if (r.failure != F::kNone) {
      // Connection refused, reset, dropped mid-body, timed out: all worth another try.
      return fail({fmt::format("connection: {}", r.error), true});
    }
    if (r.status < 200 || r.status >= 300) {
      AttemptError e = protocol_->ClassifyHttpError(r.status, r.body);
      e.retry_after_s = r.retry_after_s;
      if (auto x = r.headers.find("x-should-retry"); x != r.headers.end()) {
        if (x->second == "true")
          e.retryable = true;
        if (x->second == "false")
          e.retryable = false;
      }
      return fail(std::move(e));
    }
    AttemptError e;
    auto resp = r.streamed ? stream->Finish(&e) : protocol_->ParseBody(r.body, &e);
    if (!resp.ok())
      return fail(std::move(e));
    return resp;
  }

  const LlmConfig cfg_;
  const std::unique_ptr<WireProtocol> protocol_;
  HttpOptions http_;
  std::atomic<bool> no_temperature_{false};  // the model refused one (see Chat)
};

}  // namespace

std::unique_ptr<LlmClient> MakeHttpClient(const LlmConfig& cfg,
                                          std::unique_ptr<WireProtocol> protocol) {
  InitCurlOnce();
  return std::make_unique<HttpClient>(cfg, std::move(protocol));
}

}  // namespace ws::llm
