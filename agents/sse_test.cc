#include "agents/sse.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace ws {
namespace {

std::vector<SseEvent> ParseInPieces(const std::string& bytes, size_t piece) {
  SseParser p;
  std::vector<SseEvent> out;
  for (size_t i = 0; i < bytes.size(); i += piece) {
    EXPECT_TRUE(p.Feed(std::string_view(bytes).substr(i, piece), [&](const SseEvent& e) {
      out.push_back(e);
      return true;
    }));
  }
  return out;
}

constexpr char kStream[] =
    "\xEF\xBB\xBF: a comment line\r\n"
    "event: message_start\r\n"
    "data: {\"a\":1}\r\n"
    "\r\n"
    "data: line one\n"
    "data:line two\n"
    "id: 7\n"
    "retry: 100\n"
    "\n"
    "event: ping\r"
    "data: {}\r"
    "\r"
    "event: lonely\n"
    "\n"
    "data: [DONE]\n\n";

TEST(SseParserTest, ParsesEveryLineEndingCommentAndMultiLineData) {
  auto events = ParseInPieces(kStream, sizeof(kStream));
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0].event, "message_start");
  EXPECT_EQ(events[0].data, "{\"a\":1}");
  EXPECT_EQ(events[1].event, "");
  EXPECT_EQ(events[1].data, "line one\nline two");
  EXPECT_EQ(events[1].id, "7");
  EXPECT_EQ(events[2].event, "ping");
  EXPECT_EQ(events[2].data, "{}");
  EXPECT_EQ(events[3].data, "[DONE]");  // the data-less "lonely" event was not dispatched
}

TEST(SseParserTest, SameEventsWhateverTheChunkSplits) {
  std::string stream = kStream;
  auto whole = ParseInPieces(stream, stream.size());
  for (size_t piece = 1; piece <= 17; ++piece) {
    auto split = ParseInPieces(stream, piece);
    ASSERT_EQ(split.size(), whole.size()) << "piece " << piece;
    for (size_t i = 0; i < whole.size(); ++i) {
      EXPECT_EQ(split[i].event, whole[i].event) << "piece " << piece;
      EXPECT_EQ(split[i].data, whole[i].data) << "piece " << piece;
    }
  }
  // Every single cut point, in two pieces.
  for (size_t cut = 0; cut <= stream.size(); ++cut) {
    SseParser p;
    std::vector<std::string> data;
    auto h = [&](const SseEvent& e) {
      data.push_back(e.data);
      return true;
    };
    p.Feed(std::string_view(stream).substr(0, cut), h);
    p.Feed(std::string_view(stream).substr(cut), h);
    ASSERT_EQ(data.size(), whole.size()) << "cut at " << cut;
    EXPECT_EQ(data[1], "line one\nline two") << "cut at " << cut;
  }
}

TEST(SseParserTest, AnUnfinishedEventIsHeldNotDispatched) {
  SseParser p;
  int n = 0;
  auto h = [&](const SseEvent&) { return ++n, true; };
  p.Feed("data: {\"partial\":", h);
  EXPECT_EQ(n, 0);
  EXPECT_TRUE(p.has_partial());
  p.Feed("true}\n", h);
  EXPECT_EQ(n, 0);
  p.Feed("\n", h);
  EXPECT_EQ(n, 1);
  EXPECT_FALSE(p.has_partial());
}

TEST(SseParserTest, HandlerCanStopTheStream) {
  SseParser p;
  int n = 0;
  EXPECT_FALSE(p.Feed("data: 1\n\ndata: 2\n\n", [&](const SseEvent&) { return ++n, false; }));
  EXPECT_EQ(n, 1);
}

}  // namespace
}  // namespace ws
