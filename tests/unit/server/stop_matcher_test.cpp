// StopMatcher: earliest match, hold-back of partial matches, and only new text searched.
#include "server/stop_matcher.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

TEST(StopMatcher, NoStopsReleasesEverything) {
  const StopMatcher m({});
  const auto s = m.scan("hello", 0);
  EXPECT_FALSE(s.match);
  EXPECT_EQ(s.safe_end, 5u);
  EXPECT_TRUE(m.empty());
}

TEST(StopMatcher, FindsTheEarliestMatchOfAnyStop) {
  const StopMatcher m({"world", "lo"});
  const auto s = m.scan("hello world", 0);
  ASSERT_TRUE(s.match);
  EXPECT_EQ(*s.match, 3u);  // "lo" at 3 comes before "world" at 6
}

TEST(StopMatcher, HoldsBackAProperPrefixAtTheEnd) {
  const StopMatcher m({"</s>"});
  auto s = m.scan("abc</", 0);
  EXPECT_FALSE(s.match);
  EXPECT_EQ(s.safe_end, 3u);
  s = m.scan("abc</x", 0);  // the prefix did not continue: release it all
  EXPECT_FALSE(s.match);
  EXPECT_EQ(s.safe_end, 6u);
}

TEST(StopMatcher, HoldsBackFromTheEarliestPossibleStart) {
  const StopMatcher m({"aaab"});
  // No suffix of "xaab" starts "aaab" ("aab" differs at its third byte): release everything.
  const auto s = m.scan("xaab", 0);
  EXPECT_FALSE(s.match);
  EXPECT_EQ(s.safe_end, 4u);
  // "aaa", "aa" and "a" all start "aaab": hold back from the earliest of them.
  const auto t = m.scan("xaaa", 0);
  EXPECT_EQ(t.safe_end, 1u);
}

TEST(StopMatcher, SearchesOnlyFromTheReleasedOffset) {
  const StopMatcher m({"ab"});
  // "ab" at 0 was (hypothetically) released: only offsets >= 2 are searched.
  const auto s = m.scan("abxab", 2);
  ASSERT_TRUE(s.match);
  EXPECT_EQ(*s.match, 3u);
}

TEST(StopMatcher, MatchSpanningChunksIsFound) {
  const StopMatcher m({"STOP"});
  std::string text = "go ST";
  auto s = m.scan(text, 0);
  EXPECT_EQ(s.safe_end, 3u);
  text += "OP now";
  s = m.scan(text, s.safe_end);
  ASSERT_TRUE(s.match);
  EXPECT_EQ(*s.match, 3u);
}

TEST(StopMatcher, MultiByteStopsCutOnCharacterBoundaries) {
  const StopMatcher m({"\xE4\xBD\xA0\xE5\xA5\xBD"});  // 你好
  const std::string text = "a\xE4\xBD\xA0";           // a你
  const auto s = m.scan(text, 0);
  EXPECT_EQ(s.safe_end, 1u);  // before 你, never inside it
}

}  // namespace
}  // namespace novaserve
