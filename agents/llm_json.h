// Internal to agents/: tolerant reads of provider JSON (fields may be absent or null), and the
// JSON steps both wire protocols take alike.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "agents/llm_http.h"

namespace ws::llm {

using nlohmann::json;

/// The string at `key`, or "" when absent, null or not a string.
inline std::string Str(const json& j, const char* key) {
  if (!j.is_object())
    return "";
  auto it = j.find(key);
  return it != j.end() && it->is_string() ? it->get<std::string>() : "";
}

/// The integer at `key`, or 0 when absent, not a number, or outside int64_t (a float inside it is
/// truncated). Converting an out-of-range float would be undefined behaviour, and a server may
/// send any number.
inline int64_t Int(const json& j, const char* key) {
  if (!j.is_object())
    return 0;
  auto it = j.find(key);
  if (it == j.end() || !it->is_number())
    return 0;
  if (it->is_number_unsigned()) {
    const uint64_t u = it->get<uint64_t>();
    return u <= static_cast<uint64_t>(INT64_MAX) ? static_cast<int64_t>(u) : 0;
  }
  if (it->is_number_integer())
    return it->get<int64_t>();
  const double d = it->get<double>();
  return d > -9.2e18 && d < 9.2e18 ? static_cast<int64_t>(d) : 0;  // false for NaN
}

/// A token count at `key`: Int clamped to [0, 2^50], so no reply lowers the spend or overflows
/// a sum of counts.
inline int64_t Count(const json& j, const char* key) {
  return std::clamp<int64_t>(Int(j, key), 0, int64_t{1} << 50);
}

/// The object at `key`, or an empty object.
inline const json& Obj(const json& j, const char* key) {
  static const json kEmpty = json::object();
  if (!j.is_object())
    return kEmpty;
  auto it = j.find(key);
  return it != j.end() && it->is_object() ? *it : kEmpty;
}

/// `text` parsed, or null when it is not JSON (error bodies are often HTML or plain text).
inline json ParseOrNull(std::string_view text) {
  json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
  return j.is_discarded() ? json(nullptr) : j;
}

/// A reply or stream event parsed into `*out`; the malformed-reply error when it is not JSON.
inline std::optional<AttemptError> ParseReply(std::string_view text, json* out) {
  try {
    *out = json::parse(text);
  } catch (const json::exception& e) {
    return Malformed(e.what(), text);
  }
  return std::nullopt;
}

/// A tool's schema text as JSON; an empty schema is an object with no properties.
inline bool ParseSchema(const std::string& text, json* out, std::string* why) {
  if (text.empty()) {
    *out = {{"type", "object"}, {"properties", json::object()}};
    return true;
  }
  try {
    *out = json::parse(text);
  } catch (const json::exception& e) {
    *why = e.what();
    return false;
  }
  if (!out->is_object()) {
    *why = "not a JSON object";
    return false;
  }
  return true;
}

/// The tool's schema as JSON; a bad one is the caller's error.
inline Result<json> ToolSchema(const ToolSpec& t) {
  json schema;
  std::string why;
  if (!ParseSchema(t.parameters_schema, &schema, &why))
    return Status::Error("tool '{}': parameters_schema is not a JSON object: {}", t.name, why);
  return schema;
}

/// A POST of `body`; invalid UTF-8 in the conversation is replaced rather than thrown on.
inline HttpRequest JsonPost(std::string url, std::vector<std::string> headers, const json& body,
                            bool stream) {
  HttpRequest http;
  http.url = std::move(url);
  http.headers = std::move(headers);
  http.body = body.dump(-1, ' ', false, json::error_handler_t::replace);
  http.stream = stream;
  return http;
}

}  // namespace ws::llm
