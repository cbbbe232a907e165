#include "telemetry/governor.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/format_number.h"
namespace novaserve {

Status validate(const GovernorConfig& c) {
  const auto bad = [](const std::string& m) { return Err(ErrorCode::kInvalidInput, m); };
  if (!(c.slo_ttft_p95_seconds > 0) && !(c.slo_itl_p95_seconds > 0)) {
    return bad("--governor slo needs --slo-ttft-p95 or --slo-itl-p95");
  }
  if (!(c.headroom > 0 && c.headroom < 1)) {
    return bad("--governor-headroom must be in (0, 1), got " + format_number(c.headroom));
  }
  if (c.up_windows < 1) return bad("--governor-up-windows must be >= 1");
  if (c.down_windows < 1) return bad("--governor-down-windows must be >= 1");
  if (c.levels < 2) return bad("governor ladder needs at least 2 levels");
  if (!(c.floor_ratio > 0 && c.floor_ratio <= 1)) return bad("governor floor ratio outside (0, 1]");
  return {};
}

Result<std::vector<double>> clock_ladder(const std::vector<double>& supported,
                                         const GovernorConfig& c) {
  if (supported.empty()) return Err(ErrorCode::kInvalidInput, "the device lists no SM clocks");
  std::vector<double> s = supported;
  std::sort(s.begin(), s.end());
  const double top = s.back();
  const double floor = std::max(s.front(), c.floor_ratio * top);
  std::vector<double> ladder;
  for (int i = 0; i < c.levels; ++i) {
    const double want = floor + (top - floor) * i / (c.levels - 1);
    // The nearest supported clock at or above `want` keeps every level within the bounds.
    auto it = std::lower_bound(s.begin(), s.end(), want - 1e-3);
    ladder.push_back(it == s.end() ? top : *it);
  }
  ladder.erase(std::unique(ladder.begin(), ladder.end()), ladder.end());
  return ladder;
}

const char* direction_name(GovernorDirection d) {
  switch (d) {
    case GovernorDirection::kUp:
      return "up";
    case GovernorDirection::kDown:
      return "down";
    case GovernorDirection::kHold:
      break;
  }
  return "hold";
}

Governor::Governor(GovernorConfig config, std::vector<double> ladder)
    : config_(config), ladder_(std::move(ladder)), level_(static_cast<int>(ladder_.size()) - 1) {}

GovernorDecision Governor::on_window(const LatencyWindow& w) {
  GovernorDecision d;
  d.from_hertz = d.to_hertz = target_hertz();
  double worst = std::numeric_limits<double>::quiet_NaN();
  const auto consider = [&](double p95, double slo) {
    if (slo > 0 && std::isfinite(p95))
      worst = std::isnan(worst) ? p95 / slo : std::max(worst, p95 / slo);
  };
  consider(w.ttft_p95_seconds, config_.slo_ttft_p95_seconds);
  consider(w.itl_p95_seconds, config_.slo_itl_p95_seconds);
  d.worst_ratio = worst;
  char buf[96];
  if (std::isnan(worst)) {
    d.reason = "no requests in the window";
    return d;
  }
  std::snprintf(buf, sizeof buf, "P95/SLO %.2f", worst);
  d.reason = buf;
  if (worst > 1.0) {
    relaxed_ = 0;
    if (++violating_ >= config_.up_windows && level_ + 1 < static_cast<int>(ladder_.size())) {
      ++level_;
      violating_ = 0;
      d.direction = GovernorDirection::kUp;
    }
  } else if (worst < config_.headroom) {
    violating_ = 0;
    if (++relaxed_ >= config_.down_windows && level_ > 0) {
      --level_;
      relaxed_ = 0;
      d.direction = GovernorDirection::kDown;
    }
  } else {
    // Between headroom x SLO and the SLO: the band that keeps it from oscillating.
    violating_ = 0;
    relaxed_ = 0;
  }
  d.to_hertz = target_hertz();
  return d;
}

}  // namespace novaserve
