// A load trace for `governor simulate`: arrival rate over time, piecewise constant. Text, one
// point per line: "<start time, seconds> <arrival rate, requests/s>", ascending times; '#' starts
// a comment. The last point's rate lasts `end_seconds` (a line "end <seconds>"; default: one
// step of the previous spacing). bench/traces/diurnal.txt is a sample (a day in 24 minutes).
#pragma once

#include <string>
#include <vector>

#include "common/result.h"

namespace novaserve {

struct LoadTrace {
  std::vector<double> start_seconds;  ///< ascending, first 0
  std::vector<double> rate_per_second;
  double end_seconds = 0;

  /// The rate in force at time `t` (0 outside the trace).
  double rate_at(double t) const;
};

/// Parses a trace. Errors: kNotFound for a missing file, kInvalidInput naming the line
/// (non-numeric, negative rate, times not ascending, no point).
Result<LoadTrace> read_load_trace(const std::string& path);
Result<LoadTrace> parse_load_trace(const std::string& text);

}  // namespace novaserve
