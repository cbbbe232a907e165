#include "loadgen/loadgen_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace novaserve {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

std::string ms(double seconds) {
  return std::isinf(seconds) ? "inf" : fmt(seconds < 0.1 ? "%.2f" : "%.1f", seconds * 1e3);
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.insert(0, width - s.size(), ' ');
  return s;
}

constexpr size_t kLabelWidth = 14;

std::string latency_row(const char* name, const Percentiles& p) {
  std::string row = "  " + std::string(name);
  row.resize(kLabelWidth, ' ');
  for (double v : {p.mean, p.p50, p.p90, p.p95, p.p99, p.max}) row += pad(ms(v), 10);
  return row + "  (n=" + std::to_string(p.count) + ")\n";
}

nlohmann::ordered_json percentiles_json(const Percentiles& p) {
  return {{"count", p.count}, {"mean", p.mean}, {"p50", p.p50}, {"p90", p.p90},
          {"p95", p.p95},     {"p99", p.p99},   {"max", p.max}};
}

// JSON has no infinity; nlohmann would write null anyway, this says so on purpose.
nlohmann::ordered_json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::ordered_json(v) : nlohmann::ordered_json(nullptr);
}

}  // namespace

std::string format_summary(const RunSummary& s) {
  std::string out;
  out += "requests      " + std::to_string(s.requests) + " started, " +
         std::to_string(s.succeeded) + " succeeded, " + std::to_string(s.failed) + " failed in " +
         fmt("%.2f", s.wall_s) + " s\n";
  out += "throughput    " + fmt("%.2f", s.request_rate) + " req/s, " +
         fmt("%.1f", s.output_tok_rate) + " output tok/s (" + std::to_string(s.output_tokens) +
         " output tokens)\n";
  out += "prompt tokens " + fmt("%.0f", s.prompt_tokens_mean) + " mean sent by the workload";
  if (s.server_prompt_tokens_mean >= 0) {
    out += ", " + fmt("%.0f", s.server_prompt_tokens_mean) + " mean counted by the server";
  }
  std::string header = "\nlatency (ms)";
  header.resize(kLabelWidth + 1, ' ');
  for (const char* h : {"mean", "p50", "p90", "p95", "p99", "max"}) header += pad(h, 10);
  out += header + "\n";
  out += latency_row("TTFT", s.ttft_s);
  out += latency_row("ITL", s.itl_s);
  out += latency_row("E2E", s.e2e_s);
  if (!s.slo_checks.empty()) {
    out += "SLO          ";
    for (const SloCheck& c : s.slo_checks) {
      out += " " + c.name + " " + ms(c.value_s) + " ms " + (c.met ? "<=" : ">") + " " +
             ms(c.limit_s) + " ms " + (c.met ? "ok;" : "MISSED;");
    }
    out += s.slo_met ? " met\n" : " not met\n";
  }
  out += "goodput       " + fmt("%.2f", s.goodput) + " req/s (" + std::to_string(s.good_requests) +
         " of " + std::to_string(s.requests) + " requests within every SLO)\n";
  if (s.errors.empty()) {
    out += "errors        none\n";
  } else {
    for (const auto& [kind, count] : s.errors) {
      out += "errors        " + kind + ": " + std::to_string(count) + " (e.g. " +
             s.error_examples.at(kind) + ")\n";
    }
  }
  if (s.usage_missing > 0) {
    const bool one = s.usage_missing == 1;
    out += "note          " + std::to_string(s.usage_missing) +
           (one ? " request had no usage chunk: its" : " requests had no usage chunk: their") +
           " output tokens are counts of content chunks\n";
  }
  if (s.short_outputs > 0) {
    out += "note          " + std::to_string(s.short_outputs) +
           (s.short_outputs == 1 ? " request" : " requests") +
           " produced fewer tokens than max_tokens (does the server honour ignore_eos?)\n";
  }
  if (s.max_start_lag_s > 0.05) {
    out += "note          requests started up to " + ms(s.max_start_lag_s) +
           " ms after their arrival time: the client fell behind\n";
  }
  return out;
}

std::string format_probe_line(double qps, const RunSummary& s) {
  std::string out = "probe " + fmt("%.3g", qps) + " req/s: " + std::to_string(s.succeeded) +
                    " ok, " + std::to_string(s.failed) + " failed";
  if (!s.errors.empty()) {
    std::string kinds;
    for (const auto& [kind, count] : s.errors) {
      kinds += (kinds.empty() ? "" : ", ") + kind + " " + std::to_string(count);
    }
    out += " (" + kinds + ")";
  }
  if (s.succeeded > 0) {
    out += ", TTFT p95 " + ms(s.ttft_s.p95) + " ms p99 " + ms(s.ttft_s.p99) + " ms, ITL p95 " +
           ms(s.itl_s.p95) + " ms";
  }
  out += ", " + fmt("%.2f", s.request_rate) + " req/s, goodput " + fmt("%.2f", s.goodput);
  return out + (s.slo_met ? " -> meets the SLOs" : " -> misses the SLOs");
}

nlohmann::ordered_json summary_json(const RunSummary& s) {
  nlohmann::ordered_json j;
  j["requests"] = s.requests;
  j["succeeded"] = s.succeeded;
  j["failed"] = s.failed;
  j["wall_s"] = s.wall_s;
  j["request_rate"] = s.request_rate;
  j["output_tok_rate"] = s.output_tok_rate;
  j["output_tokens"] = s.output_tokens;
  j["goodput"] = s.goodput;
  j["good_requests"] = s.good_requests;
  j["ttft_s"] = percentiles_json(s.ttft_s);
  j["itl_s"] = percentiles_json(s.itl_s);
  j["e2e_s"] = percentiles_json(s.e2e_s);
  j["prompt_tokens_mean"] = s.prompt_tokens_mean;
  j["server_prompt_tokens_mean"] =
      finite_or_null(s.server_prompt_tokens_mean < 0 ? NAN : s.server_prompt_tokens_mean);
  j["usage_missing"] = s.usage_missing;
  j["short_outputs"] = s.short_outputs;
  j["max_start_lag_s"] = s.max_start_lag_s;
  j["errors"] = nlohmann::ordered_json::object();
  for (const auto& [kind, count] : s.errors) {
    j["errors"][kind] = {{"count", count}, {"example", s.error_examples.at(kind)}};
  }
  nlohmann::ordered_json checks = nlohmann::ordered_json::array();
  for (const SloCheck& c : s.slo_checks) {
    checks.push_back({{"name", c.name},
                      {"limit_s", c.limit_s},
                      {"value_s", finite_or_null(c.value_s)},
                      {"met", c.met}});
  }
  j["slo"] = {{"met", s.slo_met}, {"checks", checks}};
  return j;
}

nlohmann::ordered_json requests_json(const std::vector<RequestRecord>& records) {
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  for (const RequestRecord& r : records) {
    const auto time = [](double v) {
      return v < 0 ? nlohmann::ordered_json(nullptr) : nlohmann::ordered_json(v);
    };
    float itl_max = 0;
    for (float v : r.itl_s) itl_max = std::max(itl_max, v);
    rows.push_back({{"index", r.index},
                    {"scheduled_s", r.scheduled_s},
                    {"start_s", r.start_s},
                    {"ttft_s", time(r.ttft_s)},
                    {"e2e_s", time(r.e2e_s)},
                    {"prompt_tokens", r.prompt_tokens},
                    {"server_prompt_tokens", r.server_prompt_tokens < 0
                                                 ? nlohmann::ordered_json(nullptr)
                                                 : nlohmann::ordered_json(r.server_prompt_tokens)},
                    {"output_tokens", r.output_tokens},
                    {"max_tokens", r.max_tokens},
                    {"chunks", r.content_chunks},
                    {"itl_max_s", itl_max},
                    {"status", r.http_status},
                    {"error", r.error},
                    {"error_message", r.error_message}});
  }
  return rows;
}

nlohmann::ordered_json samples_json(const std::vector<ServerSample>& samples,
                                    const std::vector<RequestRecord>& records) {
  // Requests by end time, to cut them into the windows between samples.
  std::vector<const RequestRecord*> by_end;
  for (const RequestRecord& r : records) by_end.push_back(&r);
  const auto end_of = [](const RequestRecord* r) { return r->start_s + std::max(0.0, r->e2e_s); };
  std::sort(by_end.begin(), by_end.end(),
            [&](const RequestRecord* a, const RequestRecord* b) { return end_of(a) < end_of(b); });
  const auto opt = [](const auto& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  nlohmann::ordered_json rows = nlohmann::ordered_json::array();
  size_t next = 0;
  for (const ServerSample& s : samples) {
    std::vector<double> ttft, e2e;
    size_t ended = 0, failed = 0;
    for (; next < by_end.size() && end_of(by_end[next]) <= s.t_s; ++next, ++ended) {
      if (!by_end[next]->ok()) {
        ++failed;
        continue;
      }
      ttft.push_back(by_end[next]->ttft_s);
      e2e.push_back(by_end[next]->e2e_s);
    }
    const Percentiles t = summarize(std::move(ttft)), e = summarize(std::move(e2e));
    rows.push_back({{"t_s", s.t_s},
                    {"kv_cache_usage", opt(s.kv_cache_usage)},
                    {"requests_running", opt(s.requests_running)},
                    {"requests_waiting", opt(s.requests_waiting)},
                    {"rss_bytes", opt(s.rss_bytes)},
                    {"scrape_error", s.scrape_error},
                    {"window",
                     {{"ended", ended},
                      {"failed", failed},
                      {"ttft_p95_s", t.count ? nlohmann::ordered_json(t.p95) : nullptr},
                      {"e2e_p95_s", e.count ? nlohmann::ordered_json(e.p95) : nullptr}}}});
  }
  return rows;
}

}  // namespace novaserve
