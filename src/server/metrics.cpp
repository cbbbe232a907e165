#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>

namespace novaserve {
namespace {

using prometheus::Histogram;

// Bucket bounds (seconds) of vLLM's histograms of the same names, with finer low buckets for
// TTFT and ITL, where a small CPU model lands.
const Histogram::BucketBoundaries kTtftBuckets = {
    0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
    1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
const Histogram::BucketBoundaries kItlBuckets = {0.001, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1,
                                                 0.15,  0.2,   0.3,  0.4,   0.5,  0.75,  1.0,
                                                 2.5,   5.0,   7.5,  10.0,  20.0, 40.0,  80.0};
const Histogram::BucketBoundaries kRequestBuckets = {
    0.01, 0.05, 0.1,  0.3,  0.5,  0.8,  1.0,   1.5,   2.0,   2.5,   5.0,    10.0,
    15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};

Histogram* histogram(prometheus::Registry& r, const char* name, const char* help,
                     const Histogram::BucketBoundaries& b) {
  return &prometheus::BuildHistogram().Name(name).Help(help).Register(r).Add({}, b);
}

prometheus::Gauge* gauge(prometheus::Registry& r, const char* name, const char* help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Register(r).Add({});
}

prometheus::Counter* counter(prometheus::Registry& r, const char* name, const char* help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Register(r).Add({});
}

// Adds the growth of an engine-side monotonic counter since the last scrape.
void mirror(prometheus::Counter* c, double now, double before) {
  if (now > before) c->Increment(now - before);
}

}  // namespace

ServerMetrics::ServerMetrics() : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  ttft_ = histogram(r, "novaserve_time_to_first_token_seconds",
                    "Time from request arrival to its first generated token.", kTtftBuckets);
  itl_ = histogram(r, "novaserve_inter_token_latency_seconds",
                   "Time between consecutive generated tokens of a request.", kItlBuckets);
  e2e_ = histogram(r, "novaserve_e2e_request_latency_seconds",
                   "Time from request arrival to its last output.", kRequestBuckets);
  queue_ =
      histogram(r, "novaserve_request_queue_time_seconds",
                "Time a request waited before the engine first scheduled it.", kRequestBuckets);
  running_ = gauge(r, "novaserve_num_requests_running", "Sequences the engine is running.");
  waiting_ = gauge(r, "novaserve_num_requests_waiting", "Sequences waiting to be scheduled.");
  kv_usage_ = gauge(r, "novaserve_kv_cache_usage_perc",
                    "Fraction of KV cache blocks referenced by sequences (0 to 1).");
  prompt_tokens_ = counter(r, "novaserve_prompt_tokens_total", "Prompt tokens processed.");
  generation_tokens_ = counter(r, "novaserve_generation_tokens_total", "Tokens generated.");
  auto& success = prometheus::BuildCounter()
                      .Name("novaserve_request_success_total")
                      .Help("Finished requests (one per choice) by finish reason.")
                      .Register(r);
  finished_[static_cast<int>(FinishReason::kStop)] = &success.Add({{"finished_reason", "stop"}});
  finished_[static_cast<int>(FinishReason::kLength)] =
      &success.Add({{"finished_reason", "length"}});
  finished_[static_cast<int>(FinishReason::kAbort)] = &success.Add({{"finished_reason", "abort"}});
  finished_[static_cast<int>(FinishReason::kError)] = &success.Add({{"finished_reason", "error"}});
  auto& rejected = prometheus::BuildCounter()
                       .Name("novaserve_requests_rejected_total")
                       .Help("Requests refused with 503 (or an error event) by reason.")
                       .Register(r);
  for (int i = 0; i < kNumRejectReasons; ++i) {
    rejected_[i] = &rejected.Add({{"reason", reject_reason_name(static_cast<RejectReason>(i))}});
  }
  prefill_pending_ = gauge(r, "novaserve_prefill_tokens_pending",
                           "Prompt tokens queued or being prefilled, not yet computed.");
  prefill_rate_ = gauge(r, "novaserve_prefill_tokens_per_second",
                        "Measured prefill throughput while prompt work is queued (tokens/s).");
  preemptions_ =
      counter(r, "novaserve_num_preemptions_total", "Sequences preempted by the engine.");
  prefix_queries_ = counter(r, "novaserve_prefix_cache_queries_total",
                            "Prompt tokens looked up in the prefix cache.");
  prefix_hits_ =
      counter(r, "novaserve_prefix_cache_hits_total", "Prompt tokens found in the prefix cache.");
  steps_ = counter(r, "novaserve_engine_steps_total", "Engine steps that ran the model.");
  step_seconds_ = counter(r, "novaserve_engine_step_seconds_total",
                          "Wall time of engine steps (planning, forward pass, sampling, outputs).");
  forward_seconds_ = counter(r, "novaserve_engine_forward_seconds_total",
                             "Wall time of engine steps spent in the model's forward pass.");
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::observe_time_to_first_token(double s) {
  ttft_->Observe(s);
}
void ServerMetrics::observe_inter_token_latency(double s) {
  itl_->Observe(s);
}
void ServerMetrics::observe_e2e_latency(double s) {
  e2e_->Observe(s);
}
void ServerMetrics::observe_queue_time(double s) {
  queue_->Observe(s);
}
void ServerMetrics::add_prompt_tokens(int64_t n) {
  prompt_tokens_->Increment(static_cast<double>(n));
}
void ServerMetrics::add_generation_tokens(int64_t n) {
  generation_tokens_->Increment(static_cast<double>(n));
}
void ServerMetrics::count_finished(FinishReason reason) {
  finished_[static_cast<int>(reason)]->Increment();
}
void ServerMetrics::count_rejected(RejectReason reason) {
  rejected_[static_cast<int>(reason)]->Increment();
}

std::string ServerMetrics::scrape(const EngineStats* stats) {
  {
    std::lock_guard<std::mutex> lock(mirror_mu_);
    if (stats != nullptr) {
      running_->Set(stats->num_running);
      waiting_->Set(stats->num_waiting);
      kv_usage_->Set(stats->kv_cache_usage);
      prefill_pending_->Set(static_cast<double>(stats->prefill_tokens_pending));
      prefill_rate_->Set(stats->prefill_tokens_per_second);
      mirror(preemptions_, stats->num_preemptions, last_.num_preemptions);
      mirror(prefix_queries_, stats->prefix_cache_queries, last_.prefix_cache_queries);
      mirror(prefix_hits_, stats->prefix_cache_hits, last_.prefix_cache_hits);
      mirror(steps_, stats->num_steps, last_.num_steps);
      mirror(step_seconds_, stats->step_seconds, last_.step_seconds);
      mirror(forward_seconds_, stats->forward_seconds, last_.forward_seconds);
      last_ = *stats;
    }
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

}  // namespace novaserve
