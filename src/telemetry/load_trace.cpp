#include "telemetry/load_trace.h"

#include <fstream>
#include <sstream>

namespace novaserve {

double LoadTrace::rate_at(double t) const {
  if (start_seconds.empty() || t < 0 || t >= end_seconds) return 0;
  size_t i = 0;
  while (i + 1 < start_seconds.size() && start_seconds[i + 1] <= t) ++i;
  return rate_per_second[i];
}

Result<LoadTrace> parse_load_trace(const std::string& text) {
  LoadTrace trace;
  std::istringstream in(text);
  std::string line;
  int number = 0;
  double end = -1;
  while (std::getline(in, line)) {
    ++number;
    if (const size_t hash = line.find('#'); hash != std::string::npos) line.resize(hash);
    std::istringstream fields(line);
    std::string first;
    if (!(fields >> first)) continue;
    const auto bad = [&](const std::string& why) {
      return Err(ErrorCode::kInvalidInput, "trace line " + std::to_string(number) + ": " + why);
    };
    double a = 0, b = 0;
    if (first == "end") {
      if (!(fields >> end) || end < 0) return bad("'end' needs a time in seconds");
      continue;
    }
    try {
      a = std::stod(first);
    } catch (...) {
      return bad("expected '<seconds> <requests/s>', got '" + line + "'");
    }
    if (!(fields >> b)) return bad("expected '<seconds> <requests/s>', got '" + line + "'");
    if (b < 0) return bad("negative rate");
    if (!trace.start_seconds.empty() && a <= trace.start_seconds.back()) {
      return bad("times must ascend");
    }
    if (trace.start_seconds.empty() && a != 0) return bad("the first point must be at 0 s");
    trace.start_seconds.push_back(a);
    trace.rate_per_second.push_back(b);
  }
  if (trace.start_seconds.empty()) return Err(ErrorCode::kInvalidInput, "trace has no point");
  const size_t n = trace.start_seconds.size();
  const double step = n > 1 ? trace.start_seconds[n - 1] - trace.start_seconds[n - 2] : 60;
  trace.end_seconds = end >= 0 ? end : trace.start_seconds.back() + step;
  if (trace.end_seconds <= trace.start_seconds.back()) {
    return Err(ErrorCode::kInvalidInput, "trace 'end' must follow the last point");
  }
  return trace;
}

Result<LoadTrace> read_load_trace(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Err(ErrorCode::kNotFound, "cannot read trace file " + path);
  std::ostringstream s;
  s << in.rdbuf();
  auto t = parse_load_trace(s.str());
  if (!t.ok()) return Err(t.error().code, path + ": " + t.error().message);
  return t;
}

}  // namespace novaserve
