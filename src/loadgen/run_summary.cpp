#include "loadgen/run_summary.h"

#include <algorithm>
#include <limits>

namespace novaserve {

RunSummary summarize_run(const std::vector<RequestRecord>& records, double wall_s,
                         const SloSpec& slo) {
  constexpr double kInf = std::numeric_limits<double>::infinity();
  RunSummary s;
  s.requests = records.size();
  s.wall_s = wall_s;
  std::vector<double> ttft, itl, e2e, ttft_slo, itl_slo;
  double prompt_sum = 0, prompt_sum_with_usage = 0, server_prompt_sum = 0;
  size_t server_prompt_n = 0;
  double ttft_limit = kInf;
  if (slo.ttft_p95_s) ttft_limit = std::min(ttft_limit, *slo.ttft_p95_s);
  if (slo.ttft_p99_s) ttft_limit = std::min(ttft_limit, *slo.ttft_p99_s);
  for (const RequestRecord& r : records) {
    prompt_sum += r.prompt_tokens;
    s.max_start_lag_s = std::max(s.max_start_lag_s, r.start_s - r.scheduled_s);
    if (!r.ok()) {
      ++s.failed;
      ++s.errors[r.error];
      s.error_examples.emplace(r.error, r.error_message);
      ttft_slo.push_back(kInf);
      itl_slo.push_back(kInf);
      continue;
    }
    ++s.succeeded;
    ttft.push_back(r.ttft_s);
    e2e.push_back(r.e2e_s);
    ttft_slo.push_back(r.ttft_s);
    std::vector<double> own(r.itl_s.begin(), r.itl_s.end());
    itl.insert(itl.end(), own.begin(), own.end());
    itl_slo.insert(itl_slo.end(), own.begin(), own.end());
    s.output_tokens += r.output_tokens;
    if (!r.usage_reported) ++s.usage_missing;
    if (r.output_tokens < r.max_tokens) ++s.short_outputs;
    if (r.server_prompt_tokens >= 0) {
      prompt_sum_with_usage += r.prompt_tokens;
      server_prompt_sum += r.server_prompt_tokens;
      ++server_prompt_n;
    }
    bool good = r.ttft_s <= ttft_limit;
    if (slo.itl_p95_s && !own.empty()) {
      std::sort(own.begin(), own.end());
      good = good && percentile_sorted(own, 95) <= *slo.itl_p95_s;
    }
    if (good) ++s.good_requests;
  }
  s.ttft_s = summarize(std::move(ttft));
  s.itl_s = summarize(std::move(itl));
  s.e2e_s = summarize(std::move(e2e));
  if (!records.empty()) s.prompt_tokens_mean = prompt_sum / static_cast<double>(records.size());
  if (server_prompt_n > 0) {
    // Both means over the same requests, so they compare the workload's count to the server's.
    s.prompt_tokens_mean = prompt_sum_with_usage / static_cast<double>(server_prompt_n);
    s.server_prompt_tokens_mean = server_prompt_sum / static_cast<double>(server_prompt_n);
  }
  if (wall_s > 0) {
    s.request_rate = static_cast<double>(s.succeeded) / wall_s;
    s.output_tok_rate = static_cast<double>(s.output_tokens) / wall_s;
    s.goodput = static_cast<double>(s.good_requests) / wall_s;
  }
  std::sort(ttft_slo.begin(), ttft_slo.end());
  std::sort(itl_slo.begin(), itl_slo.end());
  const auto check = [&](const char* name, const std::optional<double>& limit,
                         const std::vector<double>& sorted, double p) {
    if (!limit) return;
    SloCheck c{name, *limit, percentile_sorted(sorted, p), false};
    // A run with no request (or, for ITL, no gap) has nothing that met the objective.
    c.met = !sorted.empty() && c.value_s <= c.limit_s;
    s.slo_met = s.slo_met && c.met;
    s.slo_checks.push_back(c);
  };
  check("TTFT p95", slo.ttft_p95_s, ttft_slo, 95);
  check("TTFT p99", slo.ttft_p99_s, ttft_slo, 99);
  check("ITL p95", slo.itl_p95_s, itl_slo, 95);
  return s;
}

}  // namespace novaserve
