// novaserve bench's runner and report formats on the default model (a tiny grid).
#include "tools/bench/bench_runner.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "../engine/cpu_runner_factory.h"
#include "../gguf/gguf_test_util.h"
#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"
#include "tools/bench/bench_report.h"

namespace novaserve {
namespace {

TEST(BenchRunnerTest, TinyGridMeasuresEveryPoint) {
  const std::shared_ptr<const GgufFile> gguf = testing::open_default_model();
  if (!gguf) GTEST_SKIP() << testing::kNoDefaultModel;
  auto tok = Tokenizer::from_gguf(*gguf);
  ASSERT_TRUE(tok.ok());
  EngineOptions o;
  o.make_runner = cpu_runner_factory(2);
  o.kv_cache_memory = uint64_t{64} << 20;
  const std::vector<BenchPoint> points = {{1, 8, 4}, {3, 20, 5}};
  int seen = 0;
  auto r = run_bench(gguf, **tok, o, points, [&](const BenchResult&) { ++seen; });
  ASSERT_TRUE(r.ok()) << r.error().message;
  ASSERT_EQ(r->size(), 2u);
  EXPECT_EQ(seen, 2);
  for (const BenchResult& x : *r) {
    EXPECT_GT(x.prefill_tok_s, 0);
    EXPECT_GT(x.decode_tok_s, 0);
    // The aggregate is the sum of the per-sequence rates.
    EXPECT_NEAR(x.decode_tok_s, x.decode_tok_s_per_seq * x.point.batch, 1e-6 * x.decode_tok_s);
    EXPECT_GT(x.itl_mean_s, 0);
    EXPECT_GE(x.itl_p99_s, x.itl_mean_s * 0.5);
    EXPECT_LE(x.ttft_mean_s, x.ttft_max_s);
    EXPECT_LE(x.ttft_max_s, x.wall_s);
    EXPECT_GT(x.peak_rss_bytes, 0);
  }
  // 1 token rows: gen - 1 gaps per sequence, so the mean ITL times (gen - 1) is at most the
  // time from the first to the last token.
  EXPECT_LE((*r)[0].itl_mean_s * 3, (*r)[0].wall_s);
  // One sequence: its generation phase starts at its first token, so both rates count the
  // same gen - 1 tokens over the same time.
  EXPECT_NEAR((*r)[0].decode_phase_tok_s, (*r)[0].decode_tok_s, 1e-9 * (*r)[0].decode_tok_s);
  EXPECT_GT((*r)[1].decode_phase_tok_s, 0);
  // One sequence decodes alone from its first token to its last: the full-batch window is the
  // same. With three, the window ends when the first finishes; it may be empty (0) when the
  // engine took the first request before the others arrived and finished it before the last
  // one's first token, which depends on thread timing, so only the bound is checked.
  EXPECT_NEAR((*r)[0].full_batch_tok_s, (*r)[0].decode_tok_s, 1e-9 * (*r)[0].decode_tok_s);
  EXPECT_GE((*r)[1].full_batch_tok_s, 0);
  EXPECT_LE((*r)[1].full_batch_tok_s, 1.5 * (*r)[1].decode_tok_s);

  auto bad = run_bench(gguf, **tok, o, {{0, 8, 4}}, {});
  EXPECT_FALSE(bad.ok());
  auto too_long = run_bench(gguf, **tok, o, {{1, 9000, 4}}, {});
  EXPECT_FALSE(too_long.ok());
}

BenchResult result(int32_t batch, int32_t prompt, double tok_s, double itl_s) {
  BenchResult r;
  r.point = {batch, prompt, 16};
  r.decode_tok_s = tok_s;
  r.decode_tok_s_per_seq = tok_s / batch;
  r.itl_mean_s = itl_s;
  return r;
}

TEST(BenchReportTest, RecommendsTheLargestBatchMeetingTheSlo) {
  const std::vector<BenchResult> rs = {result(1, 128, 50, 0.020), result(8, 128, 200, 0.040),
                                       result(32, 128, 300, 0.100), result(1, 2048, 40, 0.060)};
  const auto rec = recommend_batches(rs, 0.050);
  ASSERT_EQ(rec.size(), 2u);
  EXPECT_EQ(rec[0], std::make_pair(128, 8));
  EXPECT_EQ(rec[1], std::make_pair(2048, 0));  // none meets it
  // A point that measured no ITL (one generated token) meets no SLO.
  const auto none = recommend_batches({result(4, 16, 100, 0.0)}, 0.050);
  ASSERT_EQ(none.size(), 1u);
  EXPECT_EQ(none[0], std::make_pair(16, 0));
}

TEST(BenchReportTest, FormatsHaveOneRowPerPoint) {
  const std::vector<BenchResult> rs = {result(1, 128, 50, 0.02), result(8, 128, 200, 0.04),
                                       result(8, 512, 150, 0.05)};
  const std::string csv = bench_csv(rs);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 4);
  EXPECT_EQ(csv.rfind("batch,prompt,gen,", 0), 0u);
  const std::string table = bench_table(rs);
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 5);
  const auto j = nlohmann::json::parse(bench_json(rs, {{"model", "m"}}));
  EXPECT_EQ(j["model"], "m");
  ASSERT_EQ(j["results"].size(), 3u);
  EXPECT_EQ(j["results"][1]["batch"], 8);
  EXPECT_DOUBLE_EQ(j["results"][1]["decode_tok_s"], 200.0);
  const std::string svg = bench_svg(rs, "a <title>");
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("a &lt;title&gt;"), std::string::npos);
  // One line per prompt length, one marker per point.
  size_t paths = 0, circles = 0;
  for (size_t i = svg.find("<path"); i != std::string::npos; i = svg.find("<path", i + 1)) ++paths;
  for (size_t i = svg.find("<circle"); i != std::string::npos; i = svg.find("<circle", i + 1)) {
    ++circles;
  }
  EXPECT_EQ(paths, 2u);
  EXPECT_EQ(circles, 3u);
}

}  // namespace
}  // namespace novaserve
