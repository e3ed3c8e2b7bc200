// An incremental reader of server-sent events (the WHATWG EventSource wire format), as both LLM
// protocols stream them. Internal to agents/.
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace ws {

struct SseEvent {
  std::string event;  // the `event:` field; empty when the event named none ("message")
  std::string data;   // the `data:` lines joined with '\n'
  std::string id;
};

/// Turns bytes, split anywhere, into events. Handles "\n", "\r\n" and "\r" line ends, `:` comment
/// lines, multi-line `data:` and a leading byte-order mark. An event is dispatched at the blank
/// line that ends it; bytes after the last blank line stay buffered (`has_partial()`), as the
/// format says a cut stream's last event is dropped. Not thread-safe: one parser per stream.
class SseParser {
 public:
  /// Returns false to stop reading (Feed then returns false too).
  using Handler = std::function<bool(const SseEvent&)>;

  /// Feeds the next bytes; calls `on_event` for each event they complete, in order.
  bool Feed(std::string_view bytes, const Handler& on_event);
  /// True when a line or event has begun and not ended.
  bool has_partial() const { return !line_.empty() || has_fields_; }

 private:
  bool Line(const Handler& on_event);

  std::string line_;
  bool after_cr_ = false;    // the last byte was '\r': a following '\n' belongs to the same end
  bool started_ = false;     // past the optional byte-order mark
  bool has_fields_ = false;  // the current event has seen a field
  bool has_data_ = false;
  SseEvent cur_;
};

}  // namespace ws
