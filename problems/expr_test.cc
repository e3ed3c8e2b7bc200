#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws {
namespace {

const SymbolTable kSymbols = {{"M", 131072},      {"K", 7168},          {"N", 0},
                              {"big", INT64_MAX}, {"small", INT64_MIN}, {"rounding", 1}};

TEST(EvalExprTest, Values) {
  struct Case {
    const char* expr;
    int64_t want;
  };
  const Case cases[] = {
      {"42", 42},
      {"  7 ", 7},
      {"1 + 2 * 3", 7},
      {"(1 + 2) * 3", 9},
      {"10 - 4 - 3", 3},  // left associative
      {"100 / 10 / 5", 2},
      {"7 / 2", 3},
      {"-7 / 2", -3},  // C truncation
      {"-7 % 3", -1},
      {"7 % 3", 1},
      {"-3 * -2", 6},
      {"--3", 3},
      {"+5", 5},
      {"M * K * 2 + M * K + M * K / 32", 131072LL * 7168 * 3 + 131072LL * 7168 / 32},
      {"K / 32", 224},
      {"1 < 2", 1},
      {"2 <= 2", 1},
      {"3 > 4", 0},
      {"4 >= 5", 0},
      {"1 + 1 == 2", 1},
      {"1 < 2 == 1", 1},  // relational binds tighter than equality
      {"3 != 3", 0},
      {"!0", 1},
      {"!5", 0},
      {"!(1 == 1)", 0},
      {"1 && 0", 0},
      {"2 && 3", 1},
      {"0 || 7", 1},
      {"0 || 0", 0},
      {"1 || 0 && 0", 1},  // && binds tighter than ||
      {"K % 32 == 0 && M >= 1", 1},
      {"N == 0 || M / N > 1", 1},  // short circuit: M / N not evaluated
      {"N != 0 && M / N > 1", 0},
      {"ceil_div(10, 3)", 4},
      {"ceil_div(9, 3)", 3},
      {"ceil_div(-7, 2)", -3},
      {"ceil_div(7, -2)", -3},
      {"ceil_div(-7, -2)", 4},
      {"round_up(10, 8)", 16},
      {"round_up(16, 8)", 16},
      {"min(M, K)", 7168},
      {"max(M, K)", 131072},
      {"pow2(10)", 1024},
      {"pow2(0)", 1},
      {"pow2(62)", int64_t{1} << 62},
      {"log2_floor(1)", 0},
      {"log2_floor(1023)", 9},
      {"log2_floor(1024)", 10},
      {"max(min(3, 4), ceil_div(K, 1000))", 8},
      {"rounding", 1},
      {"9223372036854775807", INT64_MAX},
      {"big", INT64_MAX},
      {"small + 1", INT64_MIN + 1},
  };
  for (const Case& c : cases) {
    const Result<int64_t> r = EvalExpr(c.expr, kSymbols);
    ASSERT_TRUE(r.ok()) << c.expr << ": " << r.status().message();
    EXPECT_EQ(*r, c.want) << c.expr;
  }
}

TEST(EvalExprTest, Errors) {
  struct Case {
    const char* expr;
    const char* want;  // substring of the message
  };
  const Case cases[] = {
      {"", "column 1: unexpected end of expression"},
      {"1 +", "column 4: unexpected end of expression"},
      {"(1 + 2", "expected ')'"},
      {"1 + 2)", "column 6: unexpected ')'"},
      {"1 2", "unexpected '2'"},
      {"1 = 2", "unexpected '='"},
      {"1 & 2", "unexpected '&'"},
      {"3x", "after number"},
      {"M * $", "unexpected '$'"},
      {"X + 1", "column 1: unknown name 'X'"},
      {"N == 0 && X", "unknown name 'X'"},  // checked even where short-circuited
      {"foo(1)", "unknown function 'foo'"},
      {"min(1)", "'min' takes 2"},
      {"pow2(1, 2)", "'pow2' takes 1"},
      {"M / N", "column 3: division by zero"},
      {"M % N", "division by zero"},
      {"ceil_div(M, N)", "division by zero in ceil_div"},
      {"round_up(3, 0)", "division by zero in round_up"},
      {"big + 1", "overflow in '+'"},
      {"small - 1", "overflow in '-'"},
      {"M * M * M * M", "overflow in '*'"},
      {"small / -1", "overflow in '/'"},
      {"small % -1", "overflow in '%'"},
      {"-small", "overflow in unary '-'"},
      {"9223372036854775808", "integer literal too large"},
      {"pow2(63)", "out of range"},
      {"pow2(-1)", "out of range"},
      {"log2_floor(0)", "positive"},
      {"round_up(big, 2)", "overflow in round_up"},
  };
  for (const Case& c : cases) {
    const Result<int64_t> r = EvalExpr(c.expr, kSymbols);
    ASSERT_FALSE(r.ok()) << c.expr << " gave " << *r;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.expr << ": " << r.status().message();
    EXPECT_NE(r.status().message().find("'" + std::string(c.expr) + "'"), std::string::npos)
        << "message should quote the expression: " << r.status().message();
  }
}

TEST(ExprIdentifiersTest, CollectsSortedUniqueNames) {
  const auto r = ExprIdentifiers("M * K + ceil_div(M, BLOCK_M) / 0 + rounding");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(*r, (std::vector<std::string>{"BLOCK_M", "K", "M", "rounding"}));
}

TEST(ExprIdentifiersTest, ReportsSyntaxErrors) {
  EXPECT_FALSE(ExprIdentifiers("M * (K").ok());
  EXPECT_FALSE(ExprIdentifiers("bogus(M)").ok());
  EXPECT_FALSE(ExprIdentifiers("M K").ok());
  EXPECT_TRUE(ExprIdentifiers("42").ok());
}

}  // namespace
}  // namespace ws
