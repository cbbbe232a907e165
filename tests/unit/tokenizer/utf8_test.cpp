// UTF-8 helper tests. Expected values come from the Unicode Standard's Table 3-7 and its
// U+FFFD "maximal subpart" examples (Unicode 3.9.6, Table 3-8).
#include "common/utf8.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

using utf8::Step;

TEST(Utf8, SequenceLengthFromLeadByte) {
  EXPECT_EQ(utf8::sequence_length(0x41), 1);
  EXPECT_EQ(utf8::sequence_length(0xC3), 2);
  EXPECT_EQ(utf8::sequence_length(0xE2), 3);
  EXPECT_EQ(utf8::sequence_length(0xF0), 4);
  EXPECT_EQ(utf8::sequence_length(0x80), 0);  // continuation
  EXPECT_EQ(utf8::sequence_length(0xC0), 0);  // always overlong
  EXPECT_EQ(utf8::sequence_length(0xF5), 0);  // beyond U+10FFFF
}

TEST(Utf8, NextClassifiesCompleteIncompleteInvalid) {
  auto check = [](std::string_view s, Step::Kind kind, size_t len) {
    const Step st = utf8::next(s);
    EXPECT_EQ(st.kind, kind) << "input of " << s.size() << " bytes";
    EXPECT_EQ(st.length, len);
  };
  check("A", Step::kComplete, 1);
  check("\xC3\xA9", Step::kComplete, 2);          // é
  check("\xF0\x9F\xA6\x99", Step::kComplete, 4);  // 🦙
  check("\xF0\x9F", Step::kIncomplete, 2);
  check("\xE2", Step::kIncomplete, 1);
  check("\xE2\x41", Step::kInvalid, 1);          // cut by ASCII
  check("\xE0\x80\x80", Step::kInvalid, 1);      // overlong: E0 needs A0..BF next
  check("\xED\xA0\x80", Step::kInvalid, 1);      // surrogate D800
  check("\xF4\x90\x80\x80", Step::kInvalid, 1);  // above U+10FFFF
  check("\xF0\x9F\xA6\x41", Step::kInvalid, 3);  // maximal subpart is the 3 valid bytes
  check("\xFF", Step::kInvalid, 1);
}

TEST(Utf8, SanitizeReplacesEachMaximalSubpart) {
  // Table 3-8 example: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a,FFFD,FFFD,FFFD,b,FFFD,c,
  // FFFD,FFFD,d.
  const std::string in = "\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64";
  const std::string r(utf8::kReplacement);
  EXPECT_EQ(utf8::sanitize(in), "a" + r + r + r + "b" + r + "c" + r + r + "d");
  EXPECT_EQ(utf8::sanitize("ok \xC3\xA9"), "ok \xC3\xA9");
  EXPECT_EQ(utf8::sanitize("end\xF0\x9F"), "end" + r);
}

TEST(Utf8, IsValid) {
  EXPECT_TRUE(utf8::is_valid(""));
  EXPECT_TRUE(utf8::is_valid("plain \xE6\x9D\xB1\xE4\xBA\xAC"));  // 東京
  EXPECT_FALSE(utf8::is_valid("\xC3"));
  EXPECT_FALSE(utf8::is_valid("\xC0\xAF"));
}

TEST(Utf8, EncodeDecodeCodepoints) {
  for (uint32_t cp : {0x24u, 0xA2u, 0x20ACu, 0x10348u, 0x10FFFFu}) {
    std::string s;
    utf8::append_codepoint(s, cp);
    const Step st = utf8::next(s);
    ASSERT_EQ(st.kind, Step::kComplete);
    ASSERT_EQ(st.length, s.size());
    EXPECT_EQ(utf8::decode(s, st.length), cp);
  }
  std::string euro;
  utf8::append_codepoint(euro, 0x20AC);
  EXPECT_EQ(euro, "\xE2\x82\xAC");
}

}  // namespace
}  // namespace novaserve
