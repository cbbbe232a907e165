#include "server/metrics.h"

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>
#include <prometheus/text_serializer.h>

#include <sstream>
#include <tuple>

#include "server/gpu_metrics.h"
#include "server/replica_metrics.h"

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

// `l`: the constant labels of the family (model_name, when there is one).
Histogram* histogram(prometheus::Registry& r, const prometheus::Labels& l, const char* name,
                     const char* help, const Histogram::BucketBoundaries& b) {
  return &prometheus::BuildHistogram().Name(name).Help(help).Labels(l).Register(r).Add({}, b);
}

prometheus::Gauge* gauge(prometheus::Registry& r, const prometheus::Labels& l, const char* name,
                         const char* help) {
  return &prometheus::BuildGauge().Name(name).Help(help).Labels(l).Register(r).Add({});
}

prometheus::Counter* counter(prometheus::Registry& r, const prometheus::Labels& l, const char* name,
                             const char* help) {
  return &prometheus::BuildCounter().Name(name).Help(help).Labels(l).Register(r).Add({});
}

// Adds the growth of an engine-side monotonic counter since the last scrape.
void mirror(prometheus::Counter* c, double now, double before) {
  if (now > before) c->Increment(now - before);
}

}  // namespace

ServerMetrics::ServerMetrics(std::string model_name)
    : registry_(std::make_shared<prometheus::Registry>()) {
  auto& r = *registry_;
  gpu_ = std::make_unique<GpuMetrics>(r, model_name);
  replica_ = std::make_unique<ReplicaMetrics>(r, model_name);
  prometheus::Labels l;
  if (!model_name.empty()) l["model_name"] = model_name;
  ttft_ = histogram(r, l, "novaserve_time_to_first_token_seconds",
                    "Time from request arrival to its first generated token.", kTtftBuckets);
  itl_ = histogram(r, l, "novaserve_inter_token_latency_seconds",
                   "Time between consecutive generated tokens of a request.", kItlBuckets);
  e2e_ = histogram(r, l, "novaserve_e2e_request_latency_seconds",
                   "Time from request arrival to its last output.", kRequestBuckets);
  queue_ =
      histogram(r, l, "novaserve_request_queue_time_seconds",
                "Time a request waited before the engine first scheduled it.", kRequestBuckets);
  running_ = gauge(r, l, "novaserve_num_requests_running", "Sequences the engine is running.");
  waiting_ = gauge(r, l, "novaserve_num_requests_waiting", "Sequences waiting to be scheduled.");
  kv_usage_ = gauge(r, l, "novaserve_kv_cache_usage_perc",
                    "Fraction of KV cache blocks referenced by sequences (0 to 1).");
  prompt_tokens_ = counter(r, l, "novaserve_prompt_tokens_total", "Prompt tokens processed.");
  generation_tokens_ = counter(r, l, "novaserve_generation_tokens_total", "Tokens generated.");
  auto& success = prometheus::BuildCounter()
                      .Name("novaserve_request_success_total")
                      .Help("Finished requests (one per choice) by finish reason.")
                      .Labels(l)
                      .Register(r);
  finished_[static_cast<int>(FinishReason::kStop)] = &success.Add({{"finished_reason", "stop"}});
  finished_[static_cast<int>(FinishReason::kLength)] =
      &success.Add({{"finished_reason", "length"}});
  finished_[static_cast<int>(FinishReason::kAbort)] = &success.Add({{"finished_reason", "abort"}});
  finished_[static_cast<int>(FinishReason::kError)] = &success.Add({{"finished_reason", "error"}});
  auto& rejected = prometheus::BuildCounter()
                       .Name("novaserve_requests_rejected_total")
                       .Help("Requests refused with 503 (or an error event) by reason.")
                       .Labels(l)
                       .Register(r);
  for (int i = 0; i < kNumRejectReasons; ++i) {
    rejected_[i] = &rejected.Add({{"reason", reject_reason_name(static_cast<RejectReason>(i))}});
  }
  prefill_pending_ = gauge(r, l, "novaserve_prefill_tokens_pending",
                           "Prompt tokens queued or being prefilled, not yet computed.");
  prefill_rate_ = gauge(r, l, "novaserve_prefill_tokens_per_second",
                        "Measured prefill throughput while prompt work is queued (tokens/s).");
  preemptions_ =
      counter(r, l, "novaserve_num_preemptions_total", "Sequences preempted by the engine.");
  prefix_queries_ = counter(r, l, "novaserve_prefix_cache_queries_total",
                            "Prompt tokens looked up in the prefix cache.");
  prefix_hits_ = counter(r, l, "novaserve_prefix_cache_hits_total",
                         "Prompt tokens found in the prefix cache.");
  steps_ = counter(r, l, "novaserve_engine_steps_total", "Engine steps that ran the model.");
  step_seconds_ = counter(r, l, "novaserve_engine_step_seconds_total",
                          "Wall time of engine steps (planning, forward pass, sampling, outputs).");
  forward_seconds_ = counter(r, l, "novaserve_engine_forward_seconds_total",
                             "Wall time of engine steps spent in the model's forward pass.");
}

ServerMetrics::~ServerMetrics() = default;

void ServerMetrics::observe_time_to_first_token(double s) {
  ttft_->Observe(s);
  ttft_window_.observe(s);
}
void ServerMetrics::observe_inter_token_latency(double s) {
  itl_->Observe(s);
  itl_window_.observe(s);
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

std::string ServerMetrics::scrape(const EngineStats* stats,
                                  const std::vector<ReplicaStatus>& replicas) {
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
    replica_->update(replicas);
    if (gpu_source_) gpu_->update(gpu_source_());
    if (governor_ != nullptr) gpu_->update_governor(*governor_);
  }
  std::ostringstream out;
  prometheus::TextSerializer().Serialize(out, registry_->Collect());
  return out.str();
}

void ServerMetrics::attach_telemetry(std::function<std::vector<GpuSample>()> gpus,
                                     const GovernorStatus* governor) {
  std::lock_guard<std::mutex> lock(mirror_mu_);
  gpu_source_ = std::move(gpus);
  governor_ = governor;
}

void ServerMetrics::detach_telemetry() {
  std::lock_guard<std::mutex> lock(mirror_mu_);
  gpu_source_ = nullptr;
  governor_ = nullptr;
}

LatencyWindow ServerMetrics::take_window() {
  LatencyWindow w;
  std::tie(w.ttft_p95_seconds, w.ttft_count) = ttft_window_.take(0.95);
  std::tie(w.itl_p95_seconds, w.itl_count) = itl_window_.take(0.95);
  return w;
}

}  // namespace novaserve
