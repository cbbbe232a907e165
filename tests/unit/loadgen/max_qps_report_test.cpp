#include "loadgen/max_qps_report.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

// A run's summary that met the SLOs (or not), with `requests` successful requests.
RunSummary summary_of(bool met, size_t requests) {
  RunSummary s;
  s.requests = s.succeeded = requests;
  s.wall_s = 30;
  s.slo_met = met;
  return s;
}

MaxQpsReportSettings settings() {
  MaxQpsReportSettings s;
  s.probe_duration_s = 30;
  s.warmup_duration_s = 10;
  return s;  // the default search: tolerance 0.1, 3 confirmations
}

// A search whose probes met the SLOs at 1, 2 and 4 req/s and missed at 8, and whose every
// confirmation (at 4, then 2, then 1) was refuted; loadgen's measurements of those runs.
struct RefutedSearch {
  MaxQpsResult result;
  std::vector<MeasuredRun> probes, confirmations;
  RefutedSearch() {
    for (double q : {1.0, 2.0, 4.0, 8.0}) {
      result.probes.push_back({q, q < 8, false});
      probes.push_back({q, summary_of(q < 8, 7)});
    }
    for (double q : {4.0, 2.0, 1.0}) {
      result.confirmations.push_back({q, false, false});
      confirmations.push_back({q, summary_of(false, 11)});
    }
  }
};

TEST(LoadgenMaxQpsReport, NoConfirmedRateShowsNoSummary) {
  const RefutedSearch r;
  const std::string text = format_max_qps_outcome(r.result, r.confirmations, settings());
  EXPECT_EQ(text.rfind("max QPS meeting the SLOs: none confirmed (3 confirmation runs of 60 s "
                       "missed the SLOs at rates whose probes had met them; the search stops "
                       "after 3 confirmation runs)\n",
                       0),
            0u)
      << text;
  EXPECT_NE(text.find("no rate was confirmed"), std::string::npos) << text;
  // No run's numbers are shown as if they were a result.
  EXPECT_EQ(text.find("summary of"), std::string::npos) << text;
  EXPECT_EQ(text.find("not confirmed"), std::string::npos) << text;
  EXPECT_EQ(text.find("latency (ms)"), std::string::npos) << text;
  EXPECT_EQ(text.find("throughput"), std::string::npos) << text;

  EXPECT_TRUE(max_qps_summary_json(r.result, r.confirmations).is_null());
  const nlohmann::ordered_json j = max_qps_json(r.result, r.probes, r.confirmations, settings());
  EXPECT_TRUE(j["max_qps"].is_null()) << j["max_qps"];
  EXPECT_TRUE(j["summary_qps"].is_null()) << j["summary_qps"];
  EXPECT_EQ(j["max_confirmations"], 3);
  EXPECT_EQ(j["hit_max"], false);
  ASSERT_EQ(j["confirmations"].size(), 3u);
  EXPECT_EQ(j["confirmations"][2]["qps"], 1.0);
  EXPECT_EQ(j["confirmations"][2]["met"], false);
  EXPECT_EQ(j["confirmations"][2]["summary"]["requests"], 11);
  ASSERT_EQ(j["probes"].size(), 4u);
  EXPECT_EQ(j["probes"][3]["met"], false);
  EXPECT_EQ(j["probes"][3]["reprobe"], false);
}

TEST(LoadgenMaxQpsReport, SaysWhyNothingWasConfirmed) {
  // One confirmation refuted, no lower rate met: the budget was not what ended the search.
  MaxQpsResult one;
  one.probes = {{8, true, false}, {16, false, false}, {4, false, false}, {4, false, true}};
  one.confirmations = {{8, false, false}};
  const std::vector<MeasuredRun> refuted = {{8, summary_of(false, 3)}};
  const std::string after_one = format_max_qps_outcome(one, refuted, settings());
  EXPECT_EQ(after_one.rfind("max QPS meeting the SLOs: none confirmed (1 confirmation run of 60 s "
                            "missed the SLOs at a rate whose probe had met them; no lower rate "
                            "met them)\nsummary       none: ",
                            0),
            0u)
      << after_one;

  // No probe met the SLOs: nothing was confirmed, and the lowest rate is named.
  MaxQpsResult none;
  none.probes = {{1, false, false}, {1, false, true}, {0.5, false, false}, {0.25, false, false}};
  const std::string text = format_max_qps_outcome(none, {}, settings());
  EXPECT_EQ(text.rfind("max QPS meeting the SLOs: none confirmed (no probe met the SLOs, down "
                       "to 0.25 req/s)\n",
                       0),
            0u)
      << text;
  EXPECT_EQ(text.find("summary of"), std::string::npos) << text;
  EXPECT_TRUE(max_qps_summary_json(none, {}).is_null());
  const nlohmann::ordered_json j = max_qps_json(none, {}, {}, settings());
  EXPECT_TRUE(j["max_qps"].is_null());
  EXPECT_EQ(j["reprobes"], 1);
}

TEST(LoadgenMaxQpsReport, AConfirmedRateShowsItsConfirmationRun) {
  MaxQpsResult r;
  r.probes = {{2, true, false}, {4, true, false}};
  r.confirmations = {{4, true, false}};
  r.max_qps = 4;
  r.hit_max = true;
  const std::vector<MeasuredRun> confirmations = {{4, summary_of(true, 17)}};
  MaxQpsReportSettings s = settings();
  s.probe_duration_s = 1;
  const std::string text = format_max_qps_outcome(r, confirmations, s);
  EXPECT_EQ(text.rfind("max QPS meeting the SLOs: 4 req/s (the --max-qps cap) (2 probes of 1 s, "
                       "0 of them re-probes, within 10%; confirmed by a 2 s run at that rate, "
                       "after 0 refuted)\nsummary of the 4 req/s confirmation run:\nrequests      "
                       "17 started, 17 succeeded, 0 failed",
                       0),
            0u)
      << text;
  EXPECT_EQ(text.find("none confirmed"), std::string::npos) << text;
  const nlohmann::ordered_json summary = max_qps_summary_json(r, confirmations);
  ASSERT_TRUE(summary.is_object());
  EXPECT_EQ(summary["requests"], 17);
  const nlohmann::ordered_json j = max_qps_json(r, {}, confirmations, s);
  EXPECT_EQ(j["max_qps"], 4.0);
  EXPECT_EQ(j["summary_qps"], 4.0);
  EXPECT_EQ(j["confirmation_duration_s"], 2.0);
}

TEST(LoadgenMaxQpsReport, CountsAreSingularForOne) {
  MaxQpsResult r;
  r.probes = {{5, false, false}, {5, true, true}};
  r.confirmations = {{5, true, false}};
  r.max_qps = 5;
  r.hit_max = true;
  const std::string text = format_max_qps_outcome(r, {{5, summary_of(true, 9)}}, settings());
  EXPECT_NE(text.find("(2 probes of 30 s, 1 of them a re-probe, within 10%"), std::string::npos)
      << text;
  r.probes.resize(1);
  r.probes[0] = {5, true, false};
  const std::string one = format_max_qps_outcome(r, {{5, summary_of(true, 9)}}, settings());
  EXPECT_NE(one.find("(1 probe of 30 s, 0 of them re-probes"), std::string::npos) << one;
}

}  // namespace
}  // namespace novaserve
