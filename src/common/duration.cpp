#include "common/duration.h"

#include <cctype>
#include <cstdio>

namespace novaserve {

// Hand-written: CLI11 has no duration type that keeps units like ms (its AsNumberWithUnit
// transform turns "500ms" into a bare number through a table we would supply, but accepts no
// compound "1h30m" and reports failures with generic validator text), and std::chrono gains a
// parser (chrono::parse) only in GCC 14, newer than the GCC 12 we build with.
Result<double> parse_duration(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Err(ErrorCode::kInvalidInput, "invalid duration '" + std::string(text) + "': " + why +
                                             " (examples: 500ms, 2s, 1.5s, 3m, 1h30m)");
  };
  if (text.empty()) return bad("empty");
  double total = 0;
  size_t i = 0;
  while (i < text.size()) {
    const size_t num_start = i;
    double value = 0;
    bool any_digit = false;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
      value = value * 10 + (text[i] - '0');
      any_digit = true;
      ++i;
    }
    if (i < text.size() && text[i] == '.') {
      ++i;
      double scale = 0.1;
      while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) {
        value += (text[i] - '0') * scale;
        scale /= 10;
        any_digit = true;
        ++i;
      }
    }
    if (!any_digit) {
      return bad("expected a number at '" + std::string(text.substr(num_start)) + "'");
    }
    const size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    const std::string_view unit = text.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit == "ms") {
      scale = 1e-3;
    } else if (unit == "s") {
      scale = 1;
    } else if (unit == "m") {
      scale = 60;
    } else if (unit == "h") {
      scale = 3600;
    } else if (unit.empty()) {
      return bad("a unit (ms, s, m, h) is required");
    } else {
      return bad("unknown unit '" + std::string(unit) + "' (use ms, s, m or h)");
    }
    total += value * scale;
    if (total > 1e9) return bad("longer than 10^9 s");
  }
  return total;
}

std::string format_duration(double seconds) {
  char buf[64];
  if (seconds < 1) {
    std::snprintf(buf, sizeof(buf), "%.4g ms", seconds * 1e3);
  } else if (seconds < 120) {
    std::snprintf(buf, sizeof(buf), "%.4g s", seconds);
  } else if (seconds < 7200) {
    std::snprintf(buf, sizeof(buf), "%.4g m", seconds / 60);
  } else {
    std::snprintf(buf, sizeof(buf), "%.4g h", seconds / 3600);
  }
  return buf;
}

}  // namespace novaserve
