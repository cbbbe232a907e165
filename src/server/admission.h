// Admission control for inference requests (docs/api.md, "Admission and overload"): a request
// is refused at once, with 503 and Retry-After, when the sequences waiting for a slot would
// exceed --max-queued-requests, or when a TTFT SLO is set and the prefill work queued ahead of
// it would make it wait past that SLO. Everything admitted is then bounded by --max-queue-time in
// the engine (the scheduler expires what waited too long).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>

#include "engine/request.h"
#include "server/http_message.h"

namespace novaserve {

/// Why a request was refused (the `reason` label of novaserve_requests_rejected_total).
enum class RejectReason {
  kQueueFull,     ///< --max-queued-requests sequences already wait for a slot
  kSloTtft,       ///< the expected wait exceeds the TTFT SLO
  kQueueTimeout,  ///< admitted, but it waited past --max-queue-time (expired by the engine)
  kShuttingDown,  ///< the server is draining
};
inline constexpr int kNumRejectReasons = 4;

/// The label value of `r`: "queue_full", "slo_ttft", "queue_timeout", "shutting_down".
const char* reject_reason_name(RejectReason r);

/// Admission settings (serve flags).
struct AdmissionConfig {
  int32_t max_queued_requests = 1024;  ///< --max-queued-requests: sequences waiting for a slot
  /// The TTFT bound of the SLO-aware refusal: --slo-ttft-p95, else --slo-ttft-p99; 0 = off.
  std::chrono::milliseconds slo_ttft{0};
  /// --max-queue-time (0 = never): the engine expires requests waiting for a slot past it; the
  /// server refuses, before tokenizing, a request that waited that long for the tokenize pool.
  std::chrono::milliseconds max_queue_time{0};
};

/// A refusal: the 503 response to send and the metric reason.
struct Refusal {
  RejectReason reason;
  HttpResponse response;
};

/// The expected wait for a first token of a request of `prompt_tokens` whose last sequence has
/// `slots_ahead` sequences before it in the queue for a slot (<= 0: a slot is free), in
/// seconds: the larger of
///   - the prefill backlog: (prompt tokens pending + its own) / prefill rate, and
///   - the slot wait: slots_ahead / departure rate + its own tokens / prefill rate
/// (each term only once the engine has measured its rate). nullopt when the prefill rate is
/// unknown.
std::optional<double> expected_wait(const EngineStats& stats, int64_t slots_ahead,
                                    int64_t prompt_tokens);

/// Counts the sequences admitted and not yet finished, and decides admission. Thread-safe
/// (I/O threads admit, engine outputs release).
class Admission {
 public:
  explicit Admission(AdmissionConfig config = {}) : config_(config) {}

  /// Reserves `n` >= 1 sequences (a request's choices) with `prompt_tokens` in all, or returns
  /// the refusal. `stats` is the engine's current snapshot (max_num_seqs, the prefill backlog
  /// and rate). The queue count is exact: sequences beyond the engine's max_num_seqs slots,
  /// over everything admitted here and not yet released.
  std::optional<Refusal> try_admit(const EngineStats& stats, int32_t n, int64_t prompt_tokens);

  /// Enters a request into the tokenize pool's queue, or refuses it (queue_full) when
  /// max_queued_requests + `max_num_seqs` requests (what the engine can run or queue) are already
  /// waiting for or in the pool: each holds its body (up to --max-body-bytes) until it is
  /// tokenized. Pair each success with left_pool().
  std::optional<Refusal> try_enter_pool(int32_t max_num_seqs);
  void left_pool() { preparing_.fetch_sub(1, std::memory_order_relaxed); }

  /// Ends `n` sequences reserved by try_admit (each choice's final output, or a failed submit).
  void release(int32_t n);

  /// Sequences admitted and not yet released.
  int64_t outstanding() const { return outstanding_.load(std::memory_order_relaxed); }
  const AdmissionConfig& config() const { return config_; }
  /// Replaces the settings (before serving starts; not synchronized with try_admit).
  void set_config(const AdmissionConfig& config) { config_ = config; }

 private:
  AdmissionConfig config_;
  std::atomic<int64_t> outstanding_{0};
  std::atomic<int64_t> preparing_{0};
};

}  // namespace novaserve
