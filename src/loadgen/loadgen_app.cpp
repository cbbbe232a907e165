#include "loadgen/loadgen_app.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <memory>
#include <nlohmann/json.hpp>

#include "common/duration.h"
#include "gguf/gguf_file.h"
#include "loadgen/http_get.h"
#include "loadgen/latency_svg.h"
#include "loadgen/load_runner.h"
#include "loadgen/loadgen_report.h"
#include "loadgen/max_qps_report.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

int fail(std::string message) {
  std::replace(message.begin(), message.end(), '\n', ' ');
  std::fprintf(stderr, "novaserve loadgen: error: %s\n", message.c_str());
  return 2;
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary);
  out << text;
  return static_cast<bool>(out.flush());
}

std::string slo_text(const SloSpec& slo) {
  std::string s;
  const auto add = [&](const char* name, const std::optional<double>& v) {
    if (v) s += (s.empty() ? "" : ", ") + std::string(name) + " <= " + format_duration(*v);
  };
  add("TTFT p95", slo.ttft_p95_s);
  add("TTFT p99", slo.ttft_p99_s);
  add("ITL p95", slo.itl_p95_s);
  return s;
}

nlohmann::ordered_json config_json(const LoadgenConfig& c, const Workload& w) {
  const auto opt = [](const std::optional<double>& v) {
    return v ? nlohmann::ordered_json(*v) : nlohmann::ordered_json(nullptr);
  };
  return {
      {"url", c.target.url()},
      {"model", c.model},
      {"workload", workload_name(c.workload.kind)},
      {"workload_description", w.describe()},
      {"mode", c.find_max_qps ? "find-max-qps" : (c.concurrency > 0 ? "closed-loop" : "open-loop")},
      {"qps", c.qps},
      {"concurrency", c.concurrency},
      {"duration_s", c.duration_s},
      {"seed", c.workload.seed},
      {"prefixes", c.workload.prefixes},
      {"temperature", c.temperature},
      {"token_counts", c.tokenizer_model.empty() ? "estimated" : "exact"},
      {"tokenizer_model", c.tokenizer_model},
      {"slo",
       {{"ttft_p95_s", opt(c.slo.ttft_p95_s)},
        {"ttft_p99_s", opt(c.slo.ttft_p99_s)},
        {"itl_p95_s", opt(c.slo.itl_p95_s)}}},
      {"request_timeout_s", c.request_timeout_s},
      {"drain_timeout_s", c.drain_timeout_s},
      {"sample_interval_s", c.sample_interval_s},
      {"server_pid", c.server_pid},
      {"warmup_requests", c.warmup_requests},
      {"warmup_duration_s", c.warmup_duration_s}};
}

void print_sample(const ServerSample& s, size_t finished) {
  std::string line = "[" + std::to_string(static_cast<long long>(s.t_s)) + " s] " +
                     std::to_string(finished) + " requests finished";
  char buf[96];
  if (s.kv_cache_usage) {
    std::snprintf(buf, sizeof(buf), ", KV cache %.1f%%", *s.kv_cache_usage * 100);
    line += buf;
  }
  if (s.requests_running) line += ", running " + std::to_string(std::llround(*s.requests_running));
  if (s.requests_waiting) line += ", waiting " + std::to_string(std::llround(*s.requests_waiting));
  if (s.rss_bytes) line += ", RSS " + std::to_string(*s.rss_bytes >> 20) + " MiB";
  if (!s.scrape_error.empty()) line += " (/metrics: " + s.scrape_error + ")";
  std::fprintf(stderr, "%s\n", line.c_str());
}

}  // namespace

int run_loadgen(const LoadgenConfig& c) {
  std::unique_ptr<Tokenizer> tokenizer;
  if (!c.tokenizer_model.empty()) {
    auto gguf = GgufFile::open(c.tokenizer_model);
    if (!gguf.ok()) return fail("--tokenizer-model: " + gguf.error().message);
    auto tok = Tokenizer::from_gguf(**gguf);
    if (!tok.ok())
      return fail("--tokenizer-model " + c.tokenizer_model + ": " + tok.error().message);
    tokenizer = std::move(*tok);
  }
  for (const std::string* path : {&c.json_path, &c.svg_path}) {
    if (!path->empty() && !std::ofstream(*path, std::ios::app))
      return fail("cannot write " + *path);
  }
  if (c.server_pid > 0 && !std::filesystem::exists("/proc/" + std::to_string(c.server_pid))) {
    return fail("--server-pid " + std::to_string(c.server_pid) + " is not a running process");
  }
  auto endpoints = resolve_target(c.target);
  if (!endpoints.ok()) return fail(endpoints.error().message);
  // One GET before the run: it proves the server is up and the key works, and names the model
  // when --model is not given (OpenAI-compatible servers list theirs at /v1/models).
  auto models = http_get(c.target, *endpoints, c.target.path("/v1/models"), c.api_key,
                         std::chrono::seconds(30));
  if (!models.ok()) return fail("cannot reach " + c.target.url() + ": " + models.error().message);
  if (models->status == 401 || models->status == 403) {
    return fail(c.target.url() + "/v1/models answered " + std::to_string(models->status) +
                " (check --api-key)");
  }
  std::string model = c.model;
  if (model.empty() && models->status == 200) {
    const auto j = nlohmann::json::parse(models->body, nullptr, false);
    if (j.is_object() && j.contains("data") && j["data"].is_array() && !j["data"].empty() &&
        j["data"][0].is_object() && j["data"][0].contains("id") && j["data"][0]["id"].is_string()) {
      model = j["data"][0]["id"].get<std::string>();
    }
  }

  auto workload = Workload::create(c.workload, PromptText(tokenizer.get()));
  if (!workload.ok()) return fail(workload.error().message);
  LoadgenConfig shown = c;
  shown.model = model;
  std::printf("novaserve loadgen -> %s, model %s\nworkload      %s\n", c.target.url().c_str(),
              model.empty() ? "(not named)" : model.c_str(), workload->describe().c_str());

  LoadOptions o;
  o.request.target = c.target;
  o.request.endpoints = *endpoints;
  o.request.api_key = c.api_key;
  o.request.model = model;
  o.request.temperature = c.temperature;
  o.qps = c.qps;
  o.concurrency = c.concurrency;
  o.duration_s = c.duration_s;
  o.seed = c.workload.seed;
  o.request_timeout_s = c.request_timeout_s;
  o.drain_timeout_s = c.drain_timeout_s;
  o.client_threads = c.client_threads;
  if (c.soak) {
    o.sample_interval_s = c.sample_interval_s;
    o.server_pid = c.server_pid;
    o.on_sample = print_sample;
  }
  // A soak or a long run stopped with Ctrl-C still reports what it measured; the max-QPS
  // search has no meaningful partial answer, so a signal ends it as usual.
  o.stop_on_signal = !c.find_max_qps;

  if (c.warmup_requests > 0) {
    const auto t0 = LoadClock::now();
    const std::vector<RequestRecord> warm = run_warmup(o, *workload, c.warmup_requests);
    if (!warm.back().ok()) {
      return fail("warm-up request failed: " + warm.back().error + ": " +
                  warm.back().error_message);
    }
    std::printf("warm-up       %d request%s in %s (not counted)\n", c.warmup_requests,
                c.warmup_requests == 1 ? "" : "s",
                format_duration(seconds_between(t0, LoadClock::now())).c_str());
  }
  // The warm-up load: what the first measured run would otherwise pay on a cold server (a GPU
  // server's first batches of each size, its memory pools, the shared prefix in every cache).
  // Its prompts are its own (kWarmupLoadIndexBase), so it fills no cache the runs then hit.
  nlohmann::ordered_json warmup_json;
  if (c.warmup_duration_s > 0) {
    LoadOptions wo = o;
    wo.duration_s = c.warmup_duration_s;
    wo.seed = o.seed + 2;
    wo.index_base = kWarmupLoadIndexBase;
    wo.sample_interval_s = 0;
    wo.on_sample = nullptr;
    wo.stop_on_signal = false;
    char load[64];
    if (c.concurrency > 0) {
      std::snprintf(load, sizeof(load), "concurrency %d", c.concurrency);
    } else {
      std::snprintf(load, sizeof(load), "Poisson %.3g req/s", c.qps);
    }
    auto warm = run_load(wo, *workload);
    if (!warm.ok()) return fail("warm-up load: " + warm.error().message);
    const RunSummary ws = summarize_run(warm->records, warm->wall_s, c.slo);
    std::printf("warm-up load  %s for %s (not counted): %zu ok, %zu failed, %.2f req/s\n", load,
                format_duration(c.warmup_duration_s).c_str(), ws.succeeded, ws.failed,
                ws.request_rate);
    std::fflush(stdout);
    warmup_json = {
        {"load", load}, {"duration_s", c.warmup_duration_s}, {"summary", summary_json(ws)}};
  }

  nlohmann::ordered_json report;
  report["tool"] = "novaserve loadgen";
  report["version"] = NOVASERVE_VERSION;
  report["date"] = utc_now();
  report["config"] = config_json(shown, *workload);
  if (!warmup_json.is_null()) report["warmup_load"] = warmup_json;
  LoadResult shown_run;            // the run whose rows and samples the report and chart give
  double shown_qps = c.qps;        // its rate
  bool have_result = true;         // false: a search confirmed no rate, so no run is shown
  std::string summary_text;        // printed after the runs
  nlohmann::ordered_json summary;  // the report's "summary"
  if (c.find_max_qps) {
    std::printf(
        "load          --find-max-qps from %.3g req/s (Poisson, %s per probe, seed %llu), "
        "SLOs %s\n",
        c.qps, format_duration(c.duration_s).c_str(),
        static_cast<unsigned long long>(c.workload.seed), slo_text(c.slo).c_str());
    std::fflush(stdout);
    std::vector<MeasuredRun> probes, confirmations;
    uint64_t runs = 0;
    // One run at `qps` for `duration_s`. A confirmation that meets the SLOs is the run that the
    // summary, the rows and the chart then describe; no other run is shown as a result.
    const auto measure = [&](double qps, double duration_s, bool is_confirmation) -> Result<bool> {
      LoadOptions po = o;
      po.qps = qps;
      po.duration_s = duration_s;
      // The confirmation draws its own arrivals, so it is not a replay of the probe's first half.
      if (is_confirmation) po.seed = o.seed + 1;
      // Every run sends prompts of its own: a run that replayed an earlier one's unique
      // questions would find them in the server's prefix cache and have less to prefill.
      po.index_base = runs++ * kRunIndexStride;
      // The search probes a rate twice in a row only to re-probe a suspect failure.
      const bool reprobe = !is_confirmation && !probes.empty() && probes.back().qps == qps;
      auto run = run_load(po, *workload);
      if (!run.ok()) return run.error();
      RunSummary s = summarize_run(run->records, run->wall_s, c.slo);
      std::printf("%s%s\n", is_confirmation ? "confirm " : (reprobe ? "re-" : ""),
                  format_probe_line(qps, s).c_str());
      std::fflush(stdout);
      (is_confirmation ? confirmations : probes).push_back({qps, s});
      if (is_confirmation && s.slo_met) {
        shown_run = std::move(*run);
        shown_qps = qps;
      }
      return s.slo_met;
    };
    auto search = find_max_qps(
        c.search, [&](double qps) { return measure(qps, c.duration_s, false); },
        [&](double qps) { return measure(qps, 2 * c.duration_s, true); });
    if (!search.ok()) return fail(search.error().message);
    MaxQpsReportSettings settings;
    settings.search = c.search;
    settings.probe_duration_s = c.duration_s;
    settings.warmup_duration_s = c.warmup_duration_s;
    report["find_max_qps"] = max_qps_json(*search, probes, confirmations, settings);
    // Without a confirmed rate no run is shown as the result: no summary (null in the JSON),
    // and no rows, samples or chart points of any run.
    summary_text = format_max_qps_outcome(*search, confirmations, settings);
    summary = max_qps_summary_json(*search, confirmations);
    have_result = search->max_qps.has_value();
  } else {
    if (c.concurrency > 0) {
      std::printf("load          closed loop, concurrency %d for %s\n", c.concurrency,
                  format_duration(c.duration_s).c_str());
    } else {
      std::printf("load          open loop, Poisson %.3g req/s for %s, seed %llu\n", c.qps,
                  format_duration(c.duration_s).c_str(),
                  static_cast<unsigned long long>(c.workload.seed));
    }
    std::fflush(stdout);
    auto run = run_load(o, *workload);
    if (!run.ok()) return fail(run.error().message);
    shown_run = std::move(*run);
    const RunSummary s = summarize_run(shown_run.records, shown_run.wall_s, c.slo);
    if (shown_run.interrupted) {
      std::printf(
          "interrupted   by a signal after %s: the report covers the requests started "
          "until then\n",
          format_duration(shown_run.interrupted_at_s).c_str());
    }
    summary_text = format_summary(s);
    summary = summary_json(s);
  }
  std::fputs(summary_text.c_str(), stdout);
  std::fflush(stdout);

  report["interrupted"] = shown_run.interrupted;
  report["summary"] = summary;
  report["requests"] = requests_json(shown_run.records);
  report["samples"] = samples_json(shown_run.samples, shown_run.records);
  if (!c.json_path.empty() && !write_file(c.json_path, report.dump(1) + "\n")) {
    return fail("cannot write --json " + c.json_path);
  }
  char load[64];
  if (c.concurrency > 0) {
    std::snprintf(load, sizeof(load), "concurrency %d", c.concurrency);
  } else if (!have_result) {
    std::snprintf(load, sizeof(load), "no rate confirmed");
  } else {
    std::snprintf(load, sizeof(load), "%.3g req/s", shown_qps);
  }
  const std::string title = "novaserve loadgen: " + std::string(workload_name(c.workload.kind)) +
                            ", " + load + ", " + c.target.url();
  if (!c.svg_path.empty() &&
      !write_file(c.svg_path, latency_svg(shown_run.records, shown_run.samples, title))) {
    return fail("cannot write --svg " + c.svg_path);
  }
  return 0;
}

}  // namespace novaserve
