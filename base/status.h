// Status and Result<T>: how fallible calls report failure. Shaped like std::expected; a candidate's
// failure is data (see evaluator::Verdict), a bug of ours is WS_CHECK.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <utility>
#include <variant>

#include <fmt/format.h>

namespace ws {

/// An outcome with a message. Cheap to copy; OK carries no message.
class Status {
 public:
  Status() = default;
  static Status Ok() { return Status(); }
  template <typename... Args>
  static Status Error(fmt::format_string<Args...> f, Args&&... args) {
    Status s;
    s.msg_ = fmt::format(f, std::forward<Args>(args)...);
    if (s.msg_->empty()) s.msg_ = "error";
    return s;
  }
  bool ok() const { return !msg_.has_value(); }
  const std::string& message() const {
    static const std::string kOk = "ok";
    return msg_ ? *msg_ : kOk;
  }
  /// Prefixes the message with context ("loading spec: ...").
  Status Context(std::string_view what) const {
    if (ok()) return *this;
    Status s;
    s.msg_ = fmt::format("{}: {}", what, *msg_);
    return s;
  }

 private:
  std::optional<std::string> msg_;
};

/// A value or a failed Status.
template <typename T>
class Result {
 public:
  Result(T value) : v_(std::move(value)) {}  // NOLINT: implicit by design, like std::expected
  Result(Status status) : v_(std::move(status)) {  // NOLINT
    if (std::get<Status>(v_).ok()) v_ = Status::Error("Result built from an OK status");
  }
  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return check(), std::get<T>(v_); }
  const T& value() const& { return check(), std::get<T>(v_); }
  T&& value() && { return check(), std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  void check() const {
    if (!ok()) {
      std::fprintf(stderr, "Result::value() on error: %s\n", std::get<Status>(v_).message().c_str());
      std::abort();
    }
  }
  std::variant<T, Status> v_;
};

[[noreturn]] void CheckFailed(const char* file, int line, const char* expr);

}  // namespace ws

/// For bugs: logs file:line and aborts.
#define WS_CHECK(cond)                                              \
  do {                                                              \
    if (!(cond)) ::ws::CheckFailed(__FILE__, __LINE__, #cond);      \
  } while (0)

#define WS_CONCAT_INNER(a, b) a##b
#define WS_CONCAT(a, b) WS_CONCAT_INNER(a, b)

/// Returns the Status of a failing Status expression.
#define WS_RETURN_IF_ERROR(expr)                 \
  do {                                           \
    ::ws::Status ws_status_ = (expr);            \
    if (!ws_status_.ok()) return ws_status_;     \
  } while (0)

/// `WS_ASSIGN_OR_RETURN(auto x, MakeX());` declares x or returns the failure.
#define WS_ASSIGN_OR_RETURN(decl, expr) WS_ASSIGN_OR_RETURN_IMPL(WS_CONCAT(ws_r_, __LINE__), decl, expr)
#define WS_ASSIGN_OR_RETURN_IMPL(tmp, decl, expr) \
  auto tmp = (expr);                              \
  if (!tmp.ok()) return tmp.status();             \
  decl = std::move(tmp).value()
