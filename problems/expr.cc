// The shape/cost expression language: a recursive-descent parser that evaluates as it parses.

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "problems/problems.h"

namespace ws {
namespace {

// Precedence, loosest first: || && (== !=) (< <= > >=) (+ -) (* / %) unary.
class Parser {
 public:
  // `symbols` null: parse only, collecting identifiers.
  Parser(std::string_view expr, const SymbolTable* symbols) : expr_(expr), symbols_(symbols) {}

  Result<int64_t> Run() {
    int64_t v = 0;
    WS_RETURN_IF_ERROR(Or(symbols_ != nullptr, &v));
    SkipSpace();
    if (pos_ < expr_.size())
      return Fail(pos_, "unexpected '{}'", expr_[pos_]);
    return v;
  }
  std::vector<std::string>& identifiers() { return identifiers_; }

 private:
  template <typename... Args>
  Status Fail(size_t at, fmt::format_string<Args...> f, Args&&... args) const {
    return Status::Error("expression '{}' at column {}: {}", expr_, at + 1,
                         fmt::format(f, std::forward<Args>(args)...));
  }

  void SkipSpace() {
    while (pos_ < expr_.size() && std::isspace(static_cast<unsigned char>(expr_[pos_]))) ++pos_;
  }
  // Consumes `op` if it comes next (and is not the prefix of a longer operator in `not_before`).
  bool Accept(std::string_view op, char not_before = '\0') {
    SkipSpace();
    if (expr_.substr(pos_, op.size()) != op)
      return false;
    if (not_before != '\0' && pos_ + op.size() < expr_.size() &&
        expr_[pos_ + op.size()] == not_before) {
      return false;
    }
    pos_ += op.size();
    return true;
  }

  // `live` false: a short-circuited operand; parse it but compute nothing.
  Status Or(bool live, int64_t* out) {
    WS_RETURN_IF_ERROR(And(live, out));
    while (Accept("||")) {
      int64_t rhs = 0;
      const bool rhs_live = live && *out == 0;
      WS_RETURN_IF_ERROR(And(rhs_live, &rhs));
      if (live)
        *out = (*out != 0 || rhs != 0) ? 1 : 0;
    }
    return Status::Ok();
  }
  Status And(bool live, int64_t* out) {
    WS_RETURN_IF_ERROR(Equality(live, out));
    while (Accept("&&")) {
      int64_t rhs = 0;
      const bool rhs_live = live && *out != 0;
      WS_RETURN_IF_ERROR(Equality(rhs_live, &rhs));
      if (live)
        *out = (*out != 0 && rhs != 0) ? 1 : 0;
    }
    return Status::Ok();
  }
  Status Equality(bool live, int64_t* out) {
    WS_RETURN_IF_ERROR(Relational(live, out));
    for (;;) {
      bool eq;
      if (Accept("==")) {
        eq = true;
      } else if (Accept("!=")) {
        eq = false;
      } else {
        return Status::Ok();
      }
      int64_t rhs = 0;
      WS_RETURN_IF_ERROR(Relational(live, &rhs));
      *out = ((*out == rhs) == eq) ? 1 : 0;
    }
  }
  Status Relational(bool live, int64_t* out) {
    WS_RETURN_IF_ERROR(Additive(live, out));
    for (;;) {
      int op;
      if (Accept("<=")) {
        op = 0;
      } else if (Accept(">=")) {
        op = 1;
      } else if (Accept("<")) {
        op = 2;
      } else if (Accept(">")) {
        op = 3;
      } else {
        return Status::Ok();
      }
      int64_t rhs = 0;
      WS_RETURN_IF_ERROR(Additive(live, &rhs));
      const int64_t a = *out;
      const bool r = op == 0 ? a <= rhs : op == 1 ? a >= rhs : op == 2 ? a < rhs : a > rhs;
      *out = r ? 1 : 0;
    }
  }
  Status Additive(bool live, int64_t* out) {
    WS_RETURN_IF_ERROR(Multiplicative(live, out));
    for (;;) {
      const size_t at = (SkipSpace(), pos_);
      bool add;
      if (Accept("+")) {
        add = true;
      } else if (Accept("-")) {
        add = false;
      } else {
        return Status::Ok();
      }
      int64_t rhs = 0;
      WS_RETURN_IF_ERROR(Multiplicative(live, &rhs));
      if (!live)
        continue;
      const bool overflow =
          add ? __builtin_add_overflow(*out, rhs, out) : __builtin_sub_overflow(*out, rhs, out);
      if (overflow)
        return Fail(at, "overflow in '{}'", add ? '+' : '-');
    }
  }
  Status Multiplicative(bool live, int64_t* out) {
    WS_RETURN_IF_ERROR(Unary(live, out));
    for (;;) {
      const size_t at = (SkipSpace(), pos_);
      char op;
      if (Accept("*")) {
        op = '*';
      } else if (Accept("/")) {
        op = '/';
      } else if (Accept("%")) {
        op = '%';
      } else {
        return Status::Ok();
      }
      int64_t rhs = 0;
      WS_RETURN_IF_ERROR(Unary(live, &rhs));
      if (!live)
        continue;
      if (op == '*') {
        if (__builtin_mul_overflow(*out, rhs, out))
          return Fail(at, "overflow in '*'");
        continue;
      }
      if (rhs == 0)
        return Fail(at, "division by zero");
      if (*out == std::numeric_limits<int64_t>::min() && rhs == -1) {
        return Fail(at, "overflow in '{}'", op);
      }
      *out = op == '/' ? *out / rhs : *out % rhs;
    }
  }
  Status Unary(bool live, int64_t* out) {
    const size_t at = (SkipSpace(), pos_);
    // NOTE: every nesting level (a parenthesis, a call argument, a unary operator) recurses
    // through here; plans come from untrusted candidates, so the depth is capped well before the
    // stack could overflow. Real expressions nest a handful of levels.
    struct DepthGuard {
      int& d;
      ~DepthGuard() { --d; }
    } guard{++depth_};
    if (depth_ > kMaxDepth)
      return Fail(at, "nested more than {} levels deep", kMaxDepth);
    if (Accept("-")) {
      WS_RETURN_IF_ERROR(Unary(live, out));
      if (live && __builtin_sub_overflow(int64_t{0}, *out, out)) {
        return Fail(at, "overflow in unary '-'");
      }
      return Status::Ok();
    }
    if (Accept("!", '=')) {
      WS_RETURN_IF_ERROR(Unary(live, out));
      *out = *out == 0 ? 1 : 0;
      return Status::Ok();
    }
    if (Accept("+"))
      return Unary(live, out);
    return Primary(live, out);
  }
  Status Primary(bool live, int64_t* out) {
    SkipSpace();
    const size_t at = pos_;
    if (at >= expr_.size())
      return Fail(at, "unexpected end of expression");
    const char c = expr_[at];
    if (Accept("(")) {
      WS_RETURN_IF_ERROR(Or(live, out));
      if (!Accept(")"))
        return Fail(pos_, "expected ')'");
      return Status::Ok();
    }
    if (std::isdigit(static_cast<unsigned char>(c))) {
      int64_t v = 0;
      while (pos_ < expr_.size() && std::isdigit(static_cast<unsigned char>(expr_[pos_]))) {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
            __builtin_add_overflow(v, int64_t{expr_[pos_] - '0'}, &v)) {
          return Fail(at, "integer literal too large");
        }
        ++pos_;
      }
      if (pos_ < expr_.size() && IsIdentChar(expr_[pos_])) {
        return Fail(pos_, "unexpected '{}' after number", expr_[pos_]);
      }
      *out = v;
      return Status::Ok();
    }
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      while (pos_ < expr_.size() && IsIdentChar(expr_[pos_])) ++pos_;
      const std::string_view name = expr_.substr(at, pos_ - at);
      if (Accept("("))
        return Call(name, at, live, out);
      identifiers_.emplace_back(name);
      *out = 0;
      if (symbols_ == nullptr)
        return Status::Ok();
      const auto it = symbols_->find(name);
      if (it == symbols_->end())
        return Fail(at, "unknown name '{}'", name);
      *out = it->second;
      return Status::Ok();
    }
    return Fail(at, "unexpected '{}'", c);
  }

  Status Call(std::string_view name, size_t at, bool live, int64_t* out) {
    const int arity = name == "pow2" || name == "log2_floor" ? 1
                      : name == "ceil_div" || name == "round_up" || name == "min" || name == "max"
                          ? 2
                          : 0;
    if (arity == 0)
      return Fail(at, "unknown function '{}'", name);
    int64_t args[2] = {0, 0};
    for (int i = 0; i < arity; ++i) {
      if (i > 0 && !Accept(","))
        return Fail(pos_, "'{}' takes {} arguments", name, arity);
      WS_RETURN_IF_ERROR(Or(live, &args[i]));
    }
    if (!Accept(")"))
      return Fail(pos_, "'{}' takes {} argument(s); expected ')'", name, arity);
    *out = 0;
    if (!live)
      return Status::Ok();
    const int64_t a = args[0], b = args[1];
    if (name == "min") {
      *out = std::min(a, b);
    } else if (name == "max") {
      *out = std::max(a, b);
    } else if (name == "pow2") {
      if (a < 0 || a > 62)
        return Fail(at, "pow2({}) out of range [0, 62]", a);
      *out = int64_t{1} << a;
    } else if (name == "log2_floor") {
      if (a < 1)
        return Fail(at, "log2_floor({}) needs a positive argument", a);
      *out = 63 - __builtin_clzll(static_cast<uint64_t>(a));
    } else {  // ceil_div, round_up
      if (b == 0)
        return Fail(at, "division by zero in {}", name);
      if (a == std::numeric_limits<int64_t>::min() && b == -1) {
        return Fail(at, "overflow in {}", name);
      }
      int64_t q = a / b;
      if (a % b != 0 && ((a < 0) == (b < 0)))
        ++q;  // C truncates; ceil goes up when positive
      *out = q;
      if (name == "round_up" && __builtin_mul_overflow(q, b, out)) {
        return Fail(at, "overflow in round_up");
      }
    }
    return Status::Ok();
  }

  static bool IsIdentChar(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
  }

  static constexpr int kMaxDepth = 100;

  std::string_view expr_;
  const SymbolTable* symbols_;
  size_t pos_ = 0;
  int depth_ = 0;
  std::vector<std::string> identifiers_;
};

}  // namespace

Result<int64_t> EvalExpr(std::string_view expr, const SymbolTable& symbols) {
  Parser p(expr, &symbols);
  return p.Run();
}

Result<std::vector<std::string>> ExprIdentifiers(std::string_view expr) {
  Parser p(expr, nullptr);
  WS_RETURN_IF_ERROR(p.Run().status());
  std::vector<std::string> ids = std::move(p.identifiers());
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

}  // namespace ws
