// libFuzzer target: what an LLM endpoint sends back (agents/llm_openai.cc, llm_anthropic.cc,
// sse.cc). The first byte picks the protocol and the path: a whole body, an error body, or a
// stream cut into pieces at the following bytes' values. Every reply must end in a response or
// an error.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string_view>

#include "agents/llm_http.h"
#include "agents/sse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t mode = data[0];
  std::string_view rest(reinterpret_cast<const char*>(data + 1), size - 1);
  static const std::unique_ptr<ws::llm::WireProtocol> kProtocols[] = {
      ws::llm::MakeOpenAiProtocol("https://api.openai.com/v1", "k", true),
      ws::llm::MakeOpenAiProtocol("http://127.0.0.1:1/v1", "", false),
      ws::llm::MakeAnthropicProtocol("https://api.anthropic.com", "k")};
  const ws::llm::WireProtocol& p = *kProtocols[mode % 3];
  switch ((mode / 3) % 3) {
    case 0: {
      ws::llm::AttemptError err;
      (void)p.ParseBody(rest, &err);
      break;
    }
    case 1:
      (void)p.ClassifyHttpError(400 + mode % 200, rest);
      break;
    default: {
      // Cut points: every piece is as long as its first byte says (1-64), so one stream is fed
      // in the ragged pieces a network gives.
      auto stream = p.NewStream();
      ws::SseParser parser;
      bool stopped = false;
      while (!rest.empty() && !stopped) {
        const size_t n = std::min<size_t>(rest.size(), 1 + static_cast<uint8_t>(rest[0]) % 64);
        stopped = !parser.Feed(rest.substr(0, n), [&](const ws::SseEvent& ev) {
          return !stream->OnEvent(ev).has_value();
        });
        rest.remove_prefix(n);
      }
      ws::llm::AttemptError err;
      (void)stream->Finish(&err);
      (void)stream->usage();
      break;
    }
  }
  return 0;
}
