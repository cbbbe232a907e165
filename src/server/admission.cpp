#include "server/admission.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "server/handler_common.h"

namespace novaserve {

const char* reject_reason_name(RejectReason r) {
  switch (r) {
    case RejectReason::kQueueFull:
      return "queue_full";
    case RejectReason::kSloTtft:
      return "slo_ttft";
    case RejectReason::kQueueTimeout:
      return "queue_timeout";
    case RejectReason::kShuttingDown:
      return "shutting_down";
  }
  return "unknown";
}

std::optional<double> expected_wait(const EngineStats& stats, int64_t slots_ahead,
                                    int64_t prompt_tokens) {
  if (!(stats.prefill_tokens_per_second > 0.0)) return std::nullopt;
  const double own = static_cast<double>(prompt_tokens) / stats.prefill_tokens_per_second;
  double wait = static_cast<double>(stats.prefill_tokens_pending) /
                    stats.prefill_tokens_per_second +
                own;
  if (slots_ahead > 0 && stats.sequences_finished_per_second > 0.0) {
    wait = std::max(wait,
                    static_cast<double>(slots_ahead) / stats.sequences_finished_per_second + own);
  }
  return wait;
}

std::optional<Refusal> Admission::try_admit(const EngineStats& stats, int32_t n,
                                            int64_t prompt_tokens) {
  if (config_.slo_ttft.count() > 0) {
    const double slo = static_cast<double>(config_.slo_ttft.count()) / 1000.0;
    const int64_t slots_ahead =
        outstanding_.load(std::memory_order_relaxed) + n - stats.max_num_seqs;
    if (const auto wait = expected_wait(stats, slots_ahead, prompt_tokens); wait && *wait > slo) {
      char msg[320];
      std::snprintf(msg, sizeof msg,
                    "the server is overloaded: the expected wait for a first token is %.2f s "
                    "(%lld prompt tokens queued at %.0f tokens/s, %lld sequences ahead for a slot "
                    "at %.1f/s), over the TTFT SLO of %.3f s; retry later",
                    *wait, static_cast<long long>(stats.prefill_tokens_pending),
                    stats.prefill_tokens_per_second,
                    static_cast<long long>(std::max<int64_t>(0, slots_ahead)),
                    stats.sequences_finished_per_second, slo);
      // By then the backlog ahead has drained to what the SLO allows.
      const auto retry = static_cast<int>(std::clamp(std::ceil(*wait - slo), 1.0, 3600.0));
      return Refusal{RejectReason::kSloTtft, unavailable(msg, "slo_ttft", retry)};
    }
  }
  // Reserve only if the result fits, so a request being refused never blocks another.
  int64_t before = outstanding_.load(std::memory_order_relaxed);
  while (std::max<int64_t>(0, before + n - stats.max_num_seqs) <= config_.max_queued_requests) {
    if (outstanding_.compare_exchange_weak(before, before + n, std::memory_order_relaxed)) {
      return std::nullopt;
    }
  }
  const int64_t waiting = std::max<int64_t>(0, before - stats.max_num_seqs);
  return Refusal{
      RejectReason::kQueueFull,
      unavailable("the server is overloaded: " + std::to_string(waiting) +
                      " sequences are waiting for one of the " +
                      std::to_string(stats.max_num_seqs) + " slots (--max-queued-requests " +
                      std::to_string(config_.max_queued_requests) + "); retry later",
                  "queue_full")};
}

std::optional<Refusal> Admission::try_enter_pool(int32_t max_num_seqs) {
  const int64_t limit = int64_t{config_.max_queued_requests} + std::max(max_num_seqs, 0);
  int64_t before = preparing_.load(std::memory_order_relaxed);
  while (before < limit) {
    if (preparing_.compare_exchange_weak(before, before + 1, std::memory_order_relaxed)) {
      return std::nullopt;
    }
  }
  return Refusal{RejectReason::kQueueFull,
                 unavailable("the server is overloaded: " + std::to_string(before) +
                                 " requests are waiting to be tokenized (--max-queued-requests " +
                                 std::to_string(config_.max_queued_requests) +
                                 " + --max-num-seqs " + std::to_string(max_num_seqs) +
                                 "); retry later",
                             "queue_full")};
}

void Admission::release(int32_t n) {
  outstanding_.fetch_sub(n, std::memory_order_relaxed);
}

}  // namespace novaserve
