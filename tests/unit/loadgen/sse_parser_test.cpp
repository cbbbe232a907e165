#include "loadgen/sse_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace novaserve {
namespace {

std::vector<std::string> parse_in_pieces(const std::string& stream,
                                         const std::vector<size_t>& cuts) {
  SseParser p;
  std::vector<std::string> events;
  size_t at = 0;
  for (size_t cut : cuts) {
    p.feed(std::string_view(stream).substr(at, cut - at),
           [&](std::string_view d) { events.emplace_back(d); });
    at = cut;
  }
  p.feed(std::string_view(stream).substr(at), [&](std::string_view d) { events.emplace_back(d); });
  return events;
}

const std::string kStream =
    "data: {\"choices\":[{\"text\":\"Hello\"}]}\n\n"
    ": keep-alive comment\n\n"
    "data: {\"choices\":[{\"text\":\" world\"}]}\r\n\r\n"
    "event: message\nid: 7\ndata: {\"usage\":{}}\r\r"
    "data: [DONE]\n\n";
const std::vector<std::string> kEvents = {"{\"choices\":[{\"text\":\"Hello\"}]}",
                                          "{\"choices\":[{\"text\":\" world\"}]}", "{\"usage\":{}}",
                                          "[DONE]"};

TEST(SseParser, WholeStreamAtOnce) {
  EXPECT_EQ(parse_in_pieces(kStream, {}), kEvents);
}

TEST(SseParser, SplitAtEveryPosition) {
  for (size_t cut = 0; cut <= kStream.size(); ++cut) {
    ASSERT_EQ(parse_in_pieces(kStream, {cut}), kEvents) << "cut at " << cut;
  }
}

TEST(SseParser, OneByteAtATime) {
  std::vector<size_t> cuts;
  for (size_t i = 1; i < kStream.size(); ++i) cuts.push_back(i);
  EXPECT_EQ(parse_in_pieces(kStream, cuts), kEvents);
}

TEST(SseParser, CrLfSplitBetweenCrAndLfIsOneLineEnd) {
  // "\r" ends a piece, "\n" starts the next: still one line end, so no spurious blank line
  // dispatches the event early.
  const std::string s = "data: a\r\ndata: b\r\n\r\n";
  const size_t cr = s.find('\r');
  EXPECT_EQ(parse_in_pieces(s, {cr + 1}), std::vector<std::string>{"a\nb"});
}

TEST(SseParser, MultiLineDataAndSpaceRules) {
  // Only one space after the colon is dropped; "data" without a colon is an empty line of data.
  EXPECT_EQ(parse_in_pieces("data:x\ndata:  y\ndata\n\n", {}), std::vector<std::string>{"x\n y\n"});
}

TEST(SseParser, NoEventUntilTheBlankLine) {
  SseParser p;
  int n = 0;
  p.feed("data: {\"a\":1}\n", [&](std::string_view) { ++n; });
  EXPECT_EQ(n, 0);
  EXPECT_GT(p.pending_bytes(), 0u);
  p.feed("\n", [&](std::string_view d) {
    ++n;
    EXPECT_EQ(d, "{\"a\":1}");
  });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(p.pending_bytes(), 0u);
}

TEST(SseParser, BlankLinesWithoutDataDispatchNothing) {
  EXPECT_TRUE(parse_in_pieces("\n\n: hi\n\nevent: x\n\n", {}).empty());
}

}  // namespace
}  // namespace novaserve
