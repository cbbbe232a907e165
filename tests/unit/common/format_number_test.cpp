#include "common/format_number.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace novaserve {
namespace {

TEST(FormatNumber, PrintsValuesAsAUserWouldTypeThem) {
  EXPECT_EQ(format_number(1.5), "1.5");
  EXPECT_EQ(format_number(0.001), "0.001");
  EXPECT_EQ(format_number(-3), "-3");
  EXPECT_EQ(format_number(90), "90");
  EXPECT_EQ(format_number(1e30), "1e+30");
  EXPECT_EQ(format_number(1.0 / 3.0), "0.333333");  // 6 significant digits
}

TEST(FormatNumber, NonFiniteValuesAreNamed) {
  EXPECT_EQ(format_number(std::numeric_limits<double>::infinity()), "inf");
  EXPECT_EQ(format_number(-std::numeric_limits<double>::infinity()), "-inf");
  EXPECT_EQ(format_number(std::nan("")), "nan");
}

}  // namespace
}  // namespace novaserve
