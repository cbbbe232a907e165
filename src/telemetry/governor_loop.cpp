#include "telemetry/governor_loop.h"

#include <cmath>
#include <cstdio>

#include "common/exit_hooks.h"

namespace novaserve {
namespace {

std::string ms(double seconds) {
  if (!std::isfinite(seconds)) return "-";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f ms", seconds * 1e3);
  return buf;
}

Result<std::vector<double>> ladder_of(const GovernorLoopOptions& o, Smi& smi) {
  NOVASERVE_RETURN_IF_ERROR(validate(o.config));
  if (smi.device_count() < 1) {
    return Err(ErrorCode::kUnsupported, "governor: " + smi.name() + " sees no GPU");
  }
  auto supported = smi.supported_sm_clocks(0);
  if (!supported.ok()) {
    return Err(supported.error().code, "governor: " + supported.error().message);
  }
  return clock_ladder(supported.value(), o.config);
}

}  // namespace

Status GovernorLoop::check(const GovernorLoopOptions& options, Smi& smi) {
  auto ladder = ladder_of(options, smi);
  if (!ladder.ok()) return ladder.error();
  return {};
}

Result<std::unique_ptr<GovernorLoop>> GovernorLoop::start(const GovernorLoopOptions& o,
                                                          std::unique_ptr<Smi> smi,
                                                          LatencySource& source) {
  auto ladder = ladder_of(o, *smi);
  if (!ladder.ok()) return ladder.error();
  std::vector<ClockCapState> found;
  if (o.actuate) {
    for (int i = 0; i < smi->device_count(); ++i) {
      auto cap = smi->clock_cap(i);
      if (!cap.ok()) return Err(cap.error().code, "governor: " + cap.error().message);
      found.push_back(cap.value());
    }
  }
  Governor g(o.config, std::move(ladder.value()));
  return std::unique_ptr<GovernorLoop>(
      new GovernorLoop(o, std::move(smi), source, std::move(g), std::move(found)));
}

GovernorLoop::GovernorLoop(const GovernorLoopOptions& options, std::unique_ptr<Smi> smi,
                           LatencySource& source, Governor governor,
                           std::vector<ClockCapState> found)
    : options_(options),
      smi_(std::move(smi)),
      source_(source),
      governor_(std::move(governor)),
      log_filter_(options_.config.headroom),
      found_(std::move(found)) {
  status_.target_hertz = governor_.target_hertz();
  status_.actuating = options_.actuate;
  std::fprintf(stderr,
               "%s: governor: %s, SM clock ladder %.0f..%.0f MHz in %zu levels, every %.1f s, "
               "up after %d violating window(s), down after %d below %.2f x SLO\n",
               options_.log_prefix.c_str(),
               options_.actuate ? "ACTUATING (restores on exit)" : "dry-run (changes nothing)",
               governor_.ladder().front() / 1e6, governor_.ladder().back() / 1e6,
               governor_.ladder().size(), options_.interval.count() / 1e3,
               options_.config.up_windows, options_.config.down_windows, options_.config.headroom);
  if (options_.actuate) exit_hook_id_ = register_exit_hook([this] { restore(); });
  thread_ = std::thread([this] { run(); });
}

GovernorLoop::~GovernorLoop() {
  stop();
}

void GovernorLoop::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  restore();
  if (exit_hook_id_ != 0) {
    unregister_exit_hook(exit_hook_id_);
    exit_hook_id_ = 0;
  }
}

void GovernorLoop::run() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!cv_.wait_for(lock, options_.interval, [this] { return stop_; })) {
    lock.unlock();
    const LatencyWindow w = source_.take_window();
    const GovernorDecision d = governor_.on_window(w);
    ++status_.decisions[static_cast<int>(d.direction)];
    status_.target_hertz = d.to_hertz;
    if (log_filter_.should_log(d, DecisionLogFilter::Clock::now())) {
      const std::string skipped =
          log_filter_.skipped() > 0
              ? "; " + std::to_string(log_filter_.skipped()) + " hold(s) since the last line"
              : "";
      std::fprintf(stderr,
                   "%s: governor: %s %s %.0f -> %.0f MHz (%s; TTFT P95 %s n=%lld, ITL P95 %s "
                   "n=%lld%s)\n",
                   options_.log_prefix.c_str(), options_.actuate ? "actuate" : "dry-run",
                   direction_name(d.direction), d.from_hertz / 1e6, d.to_hertz / 1e6,
                   d.reason.c_str(), ms(w.ttft_p95_seconds).c_str(),
                   static_cast<long long>(w.ttft_count), ms(w.itl_p95_seconds).c_str(),
                   static_cast<long long>(w.itl_count), skipped.c_str());
    }
    if (options_.actuate && d.direction != GovernorDirection::kHold) apply(d);
    lock.lock();
  }
}

void GovernorLoop::apply(const GovernorDecision& d) {
  std::lock_guard<std::mutex> lock(device_mu_);
  if (restored_) return;
  for (int i = 0; i < smi_->device_count(); ++i) {
    changed_ = true;
    if (auto st = smi_->set_sm_clock_cap(i, d.to_hertz); !st.ok()) {
      std::fprintf(stderr, "%s: governor: GPU %d: %s\n", options_.log_prefix.c_str(), i,
                   st.error().message.c_str());
    }
  }
}

void GovernorLoop::restore() {
  std::lock_guard<std::mutex> lock(device_mu_);
  restored_ = true;
  if (!changed_) return;
  changed_ = false;
  for (int i = 0; i < smi_->device_count() && i < static_cast<int>(found_.size()); ++i) {
    auto st = smi_->restore_clock_cap(i, found_[static_cast<size_t>(i)]);
    std::fprintf(stderr, "%s: governor: GPU %d: %s\n", options_.log_prefix.c_str(), i,
                 st.ok() ? "clock cap restored" : st.error().message.c_str());
  }
}

}  // namespace novaserve
