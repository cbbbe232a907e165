#include "loadgen/loadgen_report.h"

#include <gtest/gtest.h>

#include <iterator>
#include <sstream>

#include "loadgen/latency_svg.h"

namespace novaserve {
namespace {

std::vector<RequestRecord> sample_records() {
  std::vector<RequestRecord> out;
  for (int i = 0; i < 5; ++i) {
    RequestRecord r;
    r.index = static_cast<uint64_t>(i);
    r.start_s = r.scheduled_s = 0.5 * i;
    r.ttft_s = 0.1;
    r.e2e_s = 0.4;
    r.itl_s = {0.1f, 0.2f};
    r.output_tokens = r.max_tokens = 3;
    r.http_status = 200;
    r.usage_reported = true;
    out.push_back(r);
  }
  RequestRecord bad;
  bad.index = 5;
  bad.start_s = 2.6;
  bad.error = "HTTP 503";
  bad.error_message = "queue full";
  bad.http_status = 503;
  bad.e2e_s = 0.01;
  out.push_back(bad);
  return out;
}

TEST(LoadgenReport, SummaryTextHasTheTableAndErrors) {
  SloSpec slo;
  slo.ttft_p95_s = 2.0;
  const RunSummary s = summarize_run(sample_records(), 3.0, slo);
  const std::string text = format_summary(s);
  EXPECT_NE(text.find("6 started, 5 succeeded, 1 failed"), std::string::npos) << text;
  const size_t row = text.find("\n  TTFT ");
  ASSERT_NE(row, std::string::npos) << text;
  std::istringstream cells(text.substr(row, text.find('\n', row + 1) - row));
  std::vector<std::string> got{std::istream_iterator<std::string>(cells), {}};
  EXPECT_EQ(got, (std::vector<std::string>{"TTFT", "100.0", "100.0", "100.0", "100.0", "100.0",
                                           "100.0", "(n=5)"}));
  EXPECT_NE(text.find("HTTP 503: 1 (e.g. queue full)"), std::string::npos) << text;
  // One failure in six puts the TTFT P95 at infinity: the SLO is missed.
  EXPECT_NE(text.find("TTFT p95 inf ms > 2000.0 ms MISSED; not met"), std::string::npos) << text;
  const std::string probe = format_probe_line(2, s);
  EXPECT_EQ(probe.rfind("probe 2 req/s: 5 ok, 1 failed (HTTP 503 1), TTFT p95 100.0 ms", 0), 0u)
      << probe;
  EXPECT_NE(probe.find("-> misses the SLOs"), std::string::npos);
  // A probe where nothing succeeded shows no latencies (there are none), only the failures.
  RequestRecord gone;
  gone.error = "unfinished";
  const std::string all_failed = format_probe_line(1, summarize_run({gone, gone}, 90, slo));
  EXPECT_EQ(all_failed.find("TTFT"), std::string::npos) << all_failed;
  EXPECT_NE(all_failed.find("0 ok, 2 failed (unfinished 2)"), std::string::npos) << all_failed;
}

TEST(LoadgenReport, NotesCountOneRequestInTheSingular) {
  RunSummary s;
  s.usage_missing = 1;
  s.short_outputs = 1;
  std::string text = format_summary(s);
  EXPECT_NE(text.find("1 request had no usage chunk: its output tokens are counts"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("1 request produced fewer tokens than max_tokens"), std::string::npos)
      << text;
  s.usage_missing = s.short_outputs = 3;
  text = format_summary(s);
  EXPECT_NE(text.find("3 requests had no usage chunk: their output tokens are counts"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("3 requests produced fewer tokens"), std::string::npos) << text;
}

TEST(LoadgenReport, JsonCarriesSummaryRequestsAndSamples) {
  const auto records = sample_records();
  SloSpec slo;
  slo.ttft_p95_s = 2.0;
  const nlohmann::ordered_json j = summary_json(summarize_run(records, 3.0, slo));
  EXPECT_EQ(j["requests"], 6);
  EXPECT_EQ(j["errors"]["HTTP 503"]["count"], 1);
  EXPECT_DOUBLE_EQ(j["ttft_s"]["p50"].get<double>(), 0.1);
  EXPECT_TRUE(j["slo"]["checks"][0]["value_s"].is_null());  // infinite
  EXPECT_EQ(j["slo"]["met"], false);
  // Round trip through text: the dump is valid JSON.
  EXPECT_EQ(nlohmann::ordered_json::parse(j.dump()), j);

  const auto rows = requests_json(records);
  ASSERT_EQ(rows.size(), 6u);
  EXPECT_DOUBLE_EQ(rows[0]["itl_max_s"].get<double>(), 0.2f);
  EXPECT_TRUE(rows[5]["ttft_s"].is_null());
  EXPECT_EQ(rows[5]["status"], 503);

  ServerSample a, b;
  a.t_s = 1.0;  // requests 0 (ends 0.4) and 1 (ends 0.9)
  a.kv_cache_usage = 0.5;
  b.t_s = 3.0;  // requests 2-4 and the failure (ends 2.61)
  b.scrape_error = "connect: refused";
  const auto samples = samples_json({a, b}, records);
  ASSERT_EQ(samples.size(), 2u);
  EXPECT_EQ(samples[0]["window"]["ended"], 2);
  EXPECT_EQ(samples[1]["window"]["ended"], 4);
  EXPECT_EQ(samples[1]["window"]["failed"], 1);
  EXPECT_TRUE(samples[1]["kv_cache_usage"].is_null());
  EXPECT_DOUBLE_EQ(samples[0]["window"]["ttft_p95_s"].get<double>(), 0.1);
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(LatencySvg, DrawsBothSeriesFailuresAndSoakPanel) {
  const auto records = sample_records();
  const std::string plain = latency_svg(records, {}, "t <&>");
  EXPECT_EQ(plain.rfind("<svg", 0), 0u);
  EXPECT_NE(plain.find("</svg>\n"), std::string::npos);
  EXPECT_NE(plain.find("t &lt;&amp;&gt;"), std::string::npos);
  // Five successes: a TTFT and an E2E dot each, plus the two legend dots.
  EXPECT_EQ(count(plain, "<circle"), 12u);
  EXPECT_NE(plain.find("#d62728"), std::string::npos);  // the failure's cross
  EXPECT_EQ(plain.find("KV cache usage"), std::string::npos);

  ServerSample s1, s2;
  s1.t_s = 1;
  s1.kv_cache_usage = 0.2;
  s1.rss_bytes = 300ll << 20;
  s2.t_s = 2;
  s2.kv_cache_usage = 0.4;
  s2.rss_bytes = 310ll << 20;
  const std::string soak = latency_svg(records, {s1, s2}, "soak");
  EXPECT_NE(soak.find("KV cache usage"), std::string::npos);
  EXPECT_NE(soak.find("server RSS (MiB)"), std::string::npos);
  EXPECT_EQ(count(soak, "<path d=\"M"), 3u);  // failure crosses, KV line, RSS line
}

}  // namespace
}  // namespace novaserve
