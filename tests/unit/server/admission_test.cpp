// Admission control (issue 12): the queue limit counts only sequences waiting for a slot, the
// SLO-aware refusal uses the pending prefill work over the measured prefill rate.
#include "server/admission.h"

#include <gtest/gtest.h>

#include <atomic>
#include <nlohmann/json.hpp>
#include <thread>
#include <vector>

namespace novaserve {
namespace {

EngineStats engine_with_slots(int32_t slots) {
  EngineStats s;
  s.max_num_seqs = slots;
  return s;
}

std::string header(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

TEST(AdmissionTest, BurstOf40With32SlotsAndQueueOf4RefusesExactly4) {
  AdmissionConfig c;
  c.max_queued_requests = 4;
  Admission a(c);
  const EngineStats stats = engine_with_slots(32);
  int refused = 0;
  for (int i = 0; i < 40; ++i) {
    if (auto r = a.try_admit(stats, 1, 10)) {
      ++refused;
      EXPECT_EQ(r->reason, RejectReason::kQueueFull);
      EXPECT_EQ(r->response.status, 503);
      EXPECT_EQ(header(r->response, "Retry-After"), "1");
      EXPECT_EQ(nlohmann::json::parse(r->response.body)["error"]["code"], "queue_full");
    }
  }
  EXPECT_EQ(refused, 4);
  EXPECT_EQ(a.outstanding(), 36);
  // A finished sequence frees a place: the next request gets in.
  a.release(1);
  EXPECT_FALSE(a.try_admit(stats, 1, 10));
  EXPECT_TRUE(a.try_admit(stats, 1, 10));
}

TEST(AdmissionTest, ChoicesCountAsSequencesAndARefusalReservesNothing) {
  AdmissionConfig c;
  c.max_queued_requests = 2;
  Admission a(c);
  const EngineStats stats = engine_with_slots(4);
  EXPECT_FALSE(a.try_admit(stats, 4, 10));  // fills the slots
  EXPECT_TRUE(a.try_admit(stats, 3, 10));   // 3 would wait: over 2
  EXPECT_EQ(a.outstanding(), 4);
  EXPECT_FALSE(a.try_admit(stats, 2, 10));
  EXPECT_EQ(a.outstanding(), 6);
}

TEST(AdmissionTest, ConcurrentAdmissionsNeverExceedTheLimit) {
  AdmissionConfig c;
  c.max_queued_requests = 10;
  Admission a(c);
  const EngineStats stats = engine_with_slots(50);
  std::atomic<int> admitted{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 100; ++i) {
        if (!a.try_admit(stats, 1, 1)) ++admitted;
      }
    });
  }
  for (auto& t : threads) t.join();
  EXPECT_EQ(admitted.load(), 60);
  EXPECT_EQ(a.outstanding(), 60);
}

TEST(AdmissionTest, ExpectedWaitOverTheTtftSloIsRefusedAtOnce) {
  AdmissionConfig c;
  c.slo_ttft = std::chrono::milliseconds(500);
  Admission a(c);
  EngineStats stats = engine_with_slots(32);
  stats.prefill_tokens_per_second = 1000.0;
  stats.prefill_tokens_pending = 300;
  // (300 + 100) / 1000 = 0.4 s: within the SLO.
  ASSERT_EQ(expected_wait(stats, /*slots_ahead=*/-31, 100).value(), 0.4);
  EXPECT_FALSE(a.try_admit(stats, 1, 100));
  // (300 + 400) / 1000 = 0.7 s: over it, refused, and nothing reserved.
  const auto r = a.try_admit(stats, 1, 400);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, RejectReason::kSloTtft);
  EXPECT_EQ(r->response.status, 503);
  EXPECT_EQ(nlohmann::json::parse(r->response.body)["error"]["code"], "slo_ttft");
  EXPECT_EQ(header(r->response, "Retry-After"), "1");
  EXPECT_EQ(a.outstanding(), 1);
  // A deep backlog asks the client to come back when it has drained to the SLO.
  stats.prefill_tokens_pending = 10000;
  EXPECT_EQ(header(a.try_admit(stats, 1, 0)->response, "Retry-After"), "10");
}

TEST(AdmissionTest, TheWaitForASlotCountsWhenSlotsAreTheBottleneck) {
  AdmissionConfig c;
  c.slo_ttft = std::chrono::milliseconds(500);
  Admission a(c);
  EngineStats stats = engine_with_slots(4);
  stats.prefill_tokens_per_second = 10000.0;  // prefill is no bottleneck: 0.01 s for 100
  stats.sequences_finished_per_second = 2.0;
  for (int i = 0; i < 4; ++i) EXPECT_FALSE(a.try_admit(stats, 1, 100));  // the slots
  // 5th: 1 ahead at 2/s = 0.5 s + 0.01 s of its own prefill: over the SLO.
  EXPECT_EQ(expected_wait(stats, 1, 100).value(), 0.5 + 0.01);
  const auto r = a.try_admit(stats, 1, 100);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, RejectReason::kSloTtft);
  EXPECT_NE(nlohmann::json::parse(r->response.body)["error"]["message"].get<std::string>().find(
                "1 sequences ahead for a slot"),
            std::string::npos);
  // Departures measured faster: it fits.
  stats.sequences_finished_per_second = 4.0;
  EXPECT_FALSE(a.try_admit(stats, 1, 100));
  // Without a measured departure rate only the prefill backlog counts.
  stats.sequences_finished_per_second = 0.0;
  EXPECT_EQ(expected_wait(stats, 3, 100).value(), 0.01);
}

TEST(AdmissionTest, NoSloOrNoMeasuredRateNeverRefusesForTheWait) {
  Admission no_slo;
  EngineStats stats = engine_with_slots(32);
  stats.prefill_tokens_per_second = 1.0;
  stats.prefill_tokens_pending = 1000000;
  EXPECT_FALSE(no_slo.try_admit(stats, 1, 100));
  AdmissionConfig c;
  c.slo_ttft = std::chrono::milliseconds(100);
  Admission unmeasured(c);
  stats.prefill_tokens_per_second = 0.0;
  EXPECT_FALSE(expected_wait(stats, 0, 100));
  EXPECT_FALSE(unmeasured.try_admit(stats, 1, 100));
}

TEST(AdmissionTest, TheTokenizePoolHoldsAtMostTheQueueLimitPlusTheSlots) {
  AdmissionConfig c;
  c.max_queued_requests = 3;
  Admission a(c);
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(a.try_enter_pool(/*max_num_seqs=*/2));
  const auto r = a.try_enter_pool(2);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->reason, RejectReason::kQueueFull);
  EXPECT_EQ(r->response.status, 503);
  a.left_pool();
  EXPECT_FALSE(a.try_enter_pool(2));
}

TEST(AdmissionTest, ReasonNamesAreTheMetricLabels) {
  EXPECT_STREQ(reject_reason_name(RejectReason::kQueueFull), "queue_full");
  EXPECT_STREQ(reject_reason_name(RejectReason::kSloTtft), "slo_ttft");
  EXPECT_STREQ(reject_reason_name(RejectReason::kQueueTimeout), "queue_timeout");
  EXPECT_STREQ(reject_reason_name(RejectReason::kShuttingDown), "shutting_down");
}

}  // namespace
}  // namespace novaserve
