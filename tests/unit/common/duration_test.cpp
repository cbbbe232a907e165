#include "common/duration.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

TEST(ParseDuration, AcceptsEachUnit) {
  EXPECT_DOUBLE_EQ(parse_duration("2s").value(), 2.0);
  EXPECT_DOUBLE_EQ(parse_duration("500ms").value(), 0.5);
  EXPECT_DOUBLE_EQ(parse_duration("3m").value(), 180.0);
  EXPECT_DOUBLE_EQ(parse_duration("1h").value(), 3600.0);
}

TEST(ParseDuration, AcceptsFractionsAndCompoundTerms) {
  EXPECT_DOUBLE_EQ(parse_duration("1.5s").value(), 1.5);
  EXPECT_DOUBLE_EQ(parse_duration("0.25h").value(), 900.0);
  EXPECT_DOUBLE_EQ(parse_duration("1h30m").value(), 5400.0);
  EXPECT_DOUBLE_EQ(parse_duration("1m500ms").value(), 60.5);
  EXPECT_DOUBLE_EQ(parse_duration("0s").value(), 0.0);
}

TEST(ParseDuration, RejectsMalformedText) {
  for (const char* bad :
       {"", "100", "2", "s", "2 s", "-2s", "2sec", "2d", "1.5", "ms", "2s3", "1..5s", "2S"}) {
    auto r = parse_duration(bad);
    ASSERT_FALSE(r.ok()) << "'" << bad << "' parsed as " << *r;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find("invalid duration"), std::string::npos);
  }
}

TEST(ParseDuration, BareNumberAsksForAUnit) {
  auto r = parse_duration("100");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("unit"), std::string::npos) << r.error().message;
}

TEST(ParseDuration, RejectsAbsurdTotals) {
  EXPECT_FALSE(parse_duration("999999999h").ok());
}

TEST(FormatDuration, PicksAReadableUnit) {
  EXPECT_EQ(format_duration(0.25), "250 ms");
  EXPECT_EQ(format_duration(2.5), "2.5 s");
  EXPECT_EQ(format_duration(180), "3 m");
  EXPECT_EQ(format_duration(5400), "90 m");
  EXPECT_EQ(format_duration(9000), "2.5 h");
}

}  // namespace
}  // namespace novaserve
