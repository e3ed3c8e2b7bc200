// MakeLlmClient: picks the wire protocol, the endpoint and the key.
#include <cmath>
#include <cstdlib>
#include <string>

#include "agents/agents.h"
#include "agents/llm_http.h"

namespace ws {
namespace {

constexpr char kOpenAiBase[] = "https://api.openai.com/v1";
constexpr char kAnthropicBase[] = "https://api.anthropic.com";

std::string StripSlashes(std::string url) {
  while (!url.empty() && url.back() == '/') url.pop_back();
  return url;
}

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

}  // namespace

Result<std::unique_ptr<LlmClient>> MakeLlmClient(const LlmConfig& cfg) {
  if (cfg.provider == "openai") {
    std::string base = StripSlashes(cfg.base_url.empty() ? kOpenAiBase : cfg.base_url);
    bool official = base == kOpenAiBase;
    std::string key = cfg.api_key.empty() ? Env("OPENAI_API_KEY") : cfg.api_key;
    if (key.empty() && official) {
      return Status::Error(
          "openai: no API key: set OPENAI_API_KEY (or give a base_url for a local server)");
    }
    return llm::MakeHttpClient(cfg, llm::MakeOpenAiProtocol(base, key, official));
  }
  if (cfg.provider == "anthropic") {
    std::string base = StripSlashes(cfg.base_url.empty() ? kAnthropicBase : cfg.base_url);
    std::string key = cfg.api_key.empty() ? Env("ANTHROPIC_API_KEY") : cfg.api_key;
    if (key.empty())
      return Status::Error("anthropic: no API key: set ANTHROPIC_API_KEY");
    return llm::MakeHttpClient(cfg, llm::MakeAnthropicProtocol(base, key));
  }
  return Status::Error("unknown LLM provider '{}' (known: openai, anthropic)", cfg.provider);
}

Result<Prices> ParsePrices(std::string_view text) {
  double v[4] = {0, 0, 0, 0};
  int n = 0;
  size_t pos = 0;
  while (pos <= text.size()) {
    const size_t comma = text.find(',', pos);
    const std::string item(
        text.substr(pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos));
    pos = comma == std::string_view::npos ? text.size() + 1 : comma + 1;
    char* end = nullptr;
    const double x = std::strtod(item.c_str(), &end);
    if (n == 4 || item.empty() || *end != '\0' || !std::isfinite(x) || x < 0) {
      return Status::Error(
          "prices '{}': expected IN,OUT[,CACHE_READ[,CACHE_WRITE]], non-negative USD per million "
          "tokens",
          text);
    }
    v[n++] = x;
  }
  if (n < 2) {
    return Status::Error("prices '{}': give at least the input and output prices (IN,OUT)", text);
  }
  return Prices{v[0], v[1], v[2], v[3]};
}

bool IsFinalLlmError(const Status& s) {
  return !s.ok() && s.message().find(": final: ") != std::string::npos;
}

}  // namespace ws
