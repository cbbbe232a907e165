// draw_progress_bar: the exact text drawn, with and without a unit label.
#include "common/progress_bar.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>

namespace novaserve {
namespace {

// What draw_progress_bar(done, total, f, unit) writes to a fresh stream.
std::string drawn(uint64_t done, uint64_t total, std::string_view unit = {}) {
  std::FILE* f = std::tmpfile();
  if (f == nullptr) return "<tmpfile failed>";
  draw_progress_bar(done, total, f, unit);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  std::fclose(f);
  return s;
}

TEST(ProgressBar, PercentByDefault) {
  EXPECT_EQ(drawn(1, 4), "\r[==========" + std::string(30, ' ') + "]  25.0%");
  EXPECT_EQ(drawn(4, 4), "\r[" + std::string(40, '=') + "] 100.0%\n");
}

TEST(ProgressBar, UnitLabelShowsCounts) {
  EXPECT_EQ(drawn(42, 389, "windows"), "\r[====" + std::string(36, ' ') + "] 42/389 windows");
  EXPECT_EQ(drawn(389, 389, "windows"), "\r[" + std::string(40, '=') + "] 389/389 windows\n");
}

TEST(ProgressBar, ZeroTotalDrawsAFullFinishedBar) {
  EXPECT_EQ(drawn(0, 0, "windows"), "\r[" + std::string(40, '=') + "] 0/0 windows\n");
}

}  // namespace
}  // namespace novaserve
