// Durations on the command line (loadgen, serve SLO flags) ("500ms", "30s", "3m", "1h", "1h30m").
#pragma once

#include <string>
#include <string_view>

#include "common/result.h"

namespace novaserve {

/// Parses a duration: one or more `<number><unit>` terms (number: decimal, optionally with a
/// fraction; unit: ms, s, m, h), summed, e.g. "2s", "1.5s", "500ms", "3m", "1h30m". A bare
/// number is refused (is "100" seconds or milliseconds?). Returns seconds (>= 0).
/// Errors: kInvalidInput naming the text for an empty string, a missing or unknown unit, a
/// malformed number or a total beyond 10^9 s.
Result<double> parse_duration(std::string_view text);

/// Formats seconds for humans with one unit: "250 ms", "2.5 s", "3 m", "1.5 h".
std::string format_duration(double seconds);

}  // namespace novaserve
