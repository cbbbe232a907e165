#include "loadgen/load_runner.h"

#include <algorithm>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <cmath>
#include <csignal>
#include <optional>
#include <thread>

#include "loadgen/arrivals.h"
#include "loadgen/http_get.h"

namespace novaserve {
namespace {

namespace net = boost::asio;

std::chrono::nanoseconds to_ns(double seconds) {
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(seconds * 1e9)));
}

// All scheduling state lives on one strand (control_), so it needs no lock: timers fire there
// and finished requests are posted there.
class LoadRun {
 public:
  LoadRun(const LoadOptions& options, const Workload& workload)
      : options_(options),
        workload_(workload),
        control_(net::make_strand(ioc_)),
        arrival_timer_(control_),
        sample_timer_(control_) {
    if (options_.qps > 0) arrivals_.emplace(options_.qps, options_.seed);
  }

  LoadResult run() {
    start_ = LoadClock::now();
    end_ = start_ + to_ns(options_.duration_s);
    drain_deadline_ = end_ + to_ns(options_.drain_timeout_s);
    options_.request.run_start = start_;
    net::post(control_, [this] {
      if (arrivals_) {
        schedule_arrival();
      } else {
        for (int32_t i = 0; i < options_.concurrency; ++i) launch(0);
        issuing_ = false;  // closed loop: further requests start only as others end
      }
      if (options_.sample_interval_s > 0) schedule_sample(start_);
      if (options_.stop_on_signal) {
        signals_.emplace(control_, SIGINT, SIGTERM);
        signals_->async_wait([this](boost::system::error_code ec, int) {
          if (!ec) stop_early();
        });
      }
    });
    std::vector<std::thread> threads;
    for (int32_t i = 1; i < options_.client_threads; ++i)
      threads.emplace_back([this] { ioc_.run(); });
    ioc_.run();
    for (auto& t : threads) t.join();
    std::sort(result_.records.begin(), result_.records.end(),
              [](const RequestRecord& a, const RequestRecord& b) { return a.index < b.index; });
    if (!result_.records.empty()) result_.wall_s = seconds_between(start_, last_end_);
    return std::move(result_);
  }

 private:
  void schedule_arrival() {
    const double t = arrivals_->next();
    if (t >= options_.duration_s) {
      issuing_ = false;
      maybe_finish();
      return;
    }
    arrival_timer_.expires_at(start_ + to_ns(t));
    arrival_timer_.async_wait([this, t](boost::system::error_code ec) {
      if (ec) return;
      launch(t);
      schedule_arrival();
    });
  }

  // Starts request next_index_ (on the control strand); `scheduled_s` is its planned time.
  void launch(double scheduled_s) {
    RequestRecord record;
    record.index = next_index_++;
    record.scheduled_s = scheduled_s;
    const LoadClock::time_point timeout = LoadClock::now() + to_ns(options_.request_timeout_s);
    const bool drain = drain_deadline_ < timeout;
    ++in_flight_;
    start_stream_request(ioc_.get_executor(), options_.request,
                         workload_.request(options_.index_base + record.index), std::move(record),
                         drain ? drain_deadline_ : timeout, drain, [this](RequestRecord r) {
                           net::post(control_,
                                     [this, r = std::move(r)]() mutable { on_done(std::move(r)); });
                         });
  }

  // The first SIGINT/SIGTERM: start nothing new, let running requests end, then report. The
  // handlers are removed, so a second signal ends the process as usual.
  void stop_early() {
    result_.interrupted = true;
    result_.interrupted_at_s = seconds_between(start_, LoadClock::now());
    end_ = LoadClock::now();
    arrival_timer_.cancel();
    issuing_ = false;
    release_signals();
    maybe_finish();
  }

  void release_signals() {
    if (!signals_) return;
    boost::system::error_code ignored;
    signals_->cancel(ignored);
    signals_->clear(ignored);
  }

  void on_done(RequestRecord r) {
    const LoadClock::time_point now = LoadClock::now();
    last_end_ = std::max(last_end_, now);
    --in_flight_;
    result_.records.push_back(std::move(r));
    if (!arrivals_ && now < end_) launch(seconds_between(start_, now));
    maybe_finish();
  }

  void maybe_finish() {
    if (issuing_ || in_flight_ > 0 || finished_) return;
    finished_ = true;
    sample_timer_.cancel();
    release_signals();
  }

  void schedule_sample(LoadClock::time_point at) {
    sample_timer_.expires_at(at);
    sample_timer_.async_wait([this, at](boost::system::error_code ec) {
      if (ec || finished_) return;
      auto sample = std::make_shared<ServerSample>();
      sample->t_s = seconds_between(start_, LoadClock::now());
      if (options_.server_pid > 0) sample->rss_bytes = process_rss_bytes(options_.server_pid);
      const auto timeout = std::chrono::milliseconds(
          std::clamp<int64_t>(std::llround(options_.sample_interval_s * 1e3), 100, 10000));
      async_http_get(ioc_.get_executor(), options_.request.target, options_.request.endpoints,
                     options_.request.target.path("/metrics"), "", timeout,
                     [this, sample](Result<HttpReply> reply) {
                       if (!reply.ok()) {
                         sample->scrape_error = reply.error().message;
                       } else if (reply->status != 200) {
                         sample->scrape_error =
                             "/metrics answered " + std::to_string(reply->status);
                       } else {
                         parse_server_metrics(reply->body, *sample);
                       }
                       net::post(control_, [this, sample] {
                         result_.samples.push_back(*sample);
                         if (options_.on_sample)
                           options_.on_sample(*sample, result_.records.size());
                       });
                     });
      schedule_sample(at + to_ns(options_.sample_interval_s));
    });
  }

  LoadOptions options_;
  const Workload& workload_;
  net::io_context ioc_;
  net::strand<net::io_context::executor_type> control_;
  net::steady_timer arrival_timer_;
  net::steady_timer sample_timer_;
  std::optional<PoissonArrivals> arrivals_;
  std::optional<net::signal_set> signals_;
  LoadClock::time_point start_, end_, drain_deadline_, last_end_;
  uint64_t next_index_ = 0;
  int64_t in_flight_ = 0;
  bool issuing_ = true;
  bool finished_ = false;
  LoadResult result_;
};

}  // namespace

std::vector<RequestRecord> run_warmup(const LoadOptions& options, const Workload& workload,
                                      int32_t count) {
  std::vector<RequestRecord> out;
  StreamRequestConfig config = options.request;
  for (int32_t k = 0; k < count; ++k) {
    net::io_context ioc;
    config.run_start = LoadClock::now();
    RequestRecord record;
    record.index = kWarmupIndexBase + static_cast<uint64_t>(k);
    start_stream_request(ioc.get_executor(), config, workload.request(record.index),
                         std::move(record), config.run_start + to_ns(options.request_timeout_s),
                         false, [&out](RequestRecord r) { out.push_back(std::move(r)); });
    ioc.run();
    if (!out.back().ok()) break;
  }
  return out;
}

Result<LoadResult> run_load(const LoadOptions& options, const Workload& workload) {
  if ((options.qps > 0) == (options.concurrency > 0)) {
    return Err(ErrorCode::kInvalidInput, "give exactly one of --qps and --concurrency");
  }
  if (!(options.qps >= 0) || !std::isfinite(options.qps)) {
    return Err(ErrorCode::kInvalidInput, "--qps must be a positive number");
  }
  if (!(options.duration_s > 0)) return Err(ErrorCode::kInvalidInput, "--duration must be > 0");
  if (options.client_threads < 1) {
    return Err(ErrorCode::kInvalidInput, "--client-threads must be >= 1");
  }
  if (!(options.request_timeout_s > 0) || options.drain_timeout_s < 0) {
    return Err(ErrorCode::kInvalidInput, "timeouts must be positive");
  }
  LoadRun run(options, workload);
  return run.run();
}

}  // namespace novaserve
