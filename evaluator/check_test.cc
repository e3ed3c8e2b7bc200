#include <gtest/gtest.h>

#include "evaluator/internal.h"

namespace ws {
namespace {

TEST(CheckTest, EqualBuffersPass) {
  std::string a = "abcdef";
  EXPECT_EQ(CompareExact("q", {2, 3}, 1, a, a), "");
}

TEST(CheckTest, NamesTheFirstMismatchWithCoordinates) {
  std::string want(6, '\0'), got(6, '\0');
  got[4] = '\x7e';
  std::string msg = CompareExact("q", {2, 3}, 1, got, want);
  EXPECT_NE(msg.find("q[1, 1]: got 0x7e, expected 0x00"), std::string::npos) << msg;
  EXPECT_NE(msg.find("1 of 6 elements differ"), std::string::npos) << msg;
}

TEST(CheckTest, MultiByteElementsPrintMostSignificantFirst) {
  std::string want = std::string("\x80\x3f", 2), got = std::string("\x81\x3f", 2);
  std::string msg = CompareExact("x", {1}, 2, got, want);
  EXPECT_NE(msg.find("got 0x3f81, expected 0x3f80"), std::string::npos) << msg;
}

TEST(CheckTest, SizeMismatchFails) {
  EXPECT_NE(CompareExact("q", {4}, 1, "abc", "abcd"), "");
}

}  // namespace
}  // namespace ws
