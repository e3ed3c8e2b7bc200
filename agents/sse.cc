#include "agents/sse.h"

namespace ws {

bool SseParser::Feed(std::string_view bytes, const Handler& on_event) {
  for (char c : bytes) {
    if (!started_) {
      // NOTE: the UTF-8 byte-order mark may arrive split across chunks; hold its bytes in line_.
      static constexpr std::string_view kBom = "\xEF\xBB\xBF";
      line_.push_back(c);
      if (kBom.substr(0, line_.size()) == line_) {
        if (line_.size() == kBom.size()) {
          line_.clear();
          started_ = true;
        }
        continue;
      }
      started_ = true;
      std::string held;
      held.swap(line_);
      if (!Feed(held, on_event))
        return false;
      continue;
    }
    if (c == '\n' && after_cr_) {
      after_cr_ = false;
      continue;
    }
    after_cr_ = (c == '\r');
    if (c == '\r' || c == '\n') {
      if (!Line(on_event))
        return false;
      continue;
    }
    line_.push_back(c);
  }
  return true;
}

bool SseParser::Line(const Handler& on_event) {
  std::string line;
  line.swap(line_);
  if (line.empty()) {  // the blank line: dispatch
    bool dispatch = has_data_;
    SseEvent ev;
    std::swap(ev, cur_);
    has_fields_ = has_data_ = false;
    if (!dispatch)
      return true;
    if (!ev.data.empty() && ev.data.back() == '\n')
      ev.data.pop_back();
    return on_event(ev);
  }
  if (line[0] == ':')
    return true;  // a comment (servers send them as keep-alives)
  has_fields_ = true;
  std::string_view field = line, value;
  if (auto colon = line.find(':'); colon != std::string::npos) {
    field = std::string_view(line).substr(0, colon);
    value = std::string_view(line).substr(colon + 1);
    if (!value.empty() && value[0] == ' ')
      value.remove_prefix(1);
  }
  if (field == "data") {
    cur_.data.append(value);
    cur_.data.push_back('\n');
    has_data_ = true;
  } else if (field == "event") {
    cur_.event = value;
  } else if (field == "id") {
    if (value.find('\0') == std::string_view::npos)
      cur_.id = value;
  }
  // `retry` and unknown fields are ignored.
  return true;
}

}  // namespace ws
