// `novaserve loadgen`: load tests an OpenAI-compatible server (src/loadgen/).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include "cli/commands.h"
#include "cli/not_negative.h"
#include "loadgen/loadgen_app.h"
#include "loadgen/loadgen_flags.h"

namespace novaserve {

void register_loadgen(CLI::App& app, int& exit_code) {
  auto* cmd = app.add_subcommand(
      "loadgen",
      "load test an OpenAI-compatible server: TTFT/ITL/E2E percentiles, throughput, "
      "goodput under SLOs, max QPS search, soak sampling");
  auto f = std::make_shared<LoadgenFlags>();
  cmd->add_option("--url", f->url, "server base URL, e.g. http://127.0.0.1:8080")->required();
  cmd->add_option("--api-key", f->api_key, "sent as Authorization: Bearer KEY");
  auto* qps = cmd->add_option("--qps", f->qps,
                              "open loop: Poisson arrivals at this rate (req/s); with "
                              "--find-max-qps the first probe (default 1)");
  auto* conc = cmd->add_option("--concurrency", f->concurrency,
                               "closed loop: keep this many requests in flight");
  cmd->add_option("--duration", f->duration,
                  "how long to send requests: 500ms, 30s, 5m, 2h (required; with --find-max-qps "
                  "each probe's length, default 30s)");
  cmd->add_option("--workload", f->workload, "fixed, fin-qa or chat-mix")->capture_default_str();
  auto* prompt = cmd->add_option("--prompt-tokens", f->prompt_tokens, "fixed: prompt length")
                     ->capture_default_str();
  auto* output = cmd->add_option("--output-tokens", f->output_tokens, "fixed: output length")
                     ->capture_default_str();
  auto* prefixes =
      cmd->add_option("--prefixes", f->prefixes,
                      "fin-qa: distinct shared reports, asked about round-robin (1-64)")
          ->capture_default_str();
  cmd->add_option("--tokenizer-model", f->tokenizer_model,
                  "GGUF whose tokenizer makes prompt token counts exact (default: estimate "
                  "~1 token per word)");
  cmd->add_option("--model", f->model, "the request's model (default: first of /v1/models)");
  cmd->add_option("--seed", f->seed, "seed of arrivals and request shapes")
      ->transform(not_negative())
      ->capture_default_str();
  cmd->add_option("--temperature", f->temperature, "sampling temperature")->capture_default_str();
  cmd->add_option("--slo-ttft-p95", f->slo_ttft_p95, "SLO: P95 time to first token, e.g. 2s");
  cmd->add_option("--slo-ttft-p99", f->slo_ttft_p99, "SLO: P99 time to first token");
  cmd->add_option("--slo-itl-p95", f->slo_itl_p95, "SLO: P95 inter-token latency, e.g. 100ms");
  const std::string confirmations = std::to_string(MaxQpsSearchOptions{}.max_confirmations);
  cmd->add_flag("--find-max-qps", f->find_max_qps,
                "bisect the highest --qps whose --duration run meets the SLOs, then confirm it "
                "with a run twice as long at that rate (a refuted rate is never reported: the "
                "search resumes below it, and makes at most " +
                    confirmations + " confirmation runs: when all " + confirmations +
                    " are refuted it stops, with none confirmed); a failed first probe, or a "
                    "failure below a rate that met, is re-probed once");
  cmd->add_option("--qps-tolerance", f->qps_tolerance, "find-max-qps: relative precision")
      ->capture_default_str();
  cmd->add_option("--max-qps", f->max_qps, "find-max-qps: highest rate probed")
      ->capture_default_str();
  cmd->add_flag("--soak", f->soak, "sample the server's /metrics (and RSS) during the run");
  auto* interval =
      cmd->add_option("--sample-interval", f->sample_interval, "soak: time between samples")
          ->capture_default_str();
  cmd->add_option("--server-pid", f->server_pid, "soak: local server process whose RSS to sample");
  cmd->add_option("--json", f->json, "write the full report as JSON");
  cmd->add_option("--svg", f->svg, "write a latency-over-time chart");
  cmd->add_option("--request-timeout", f->request_timeout, "a request's time limit")
      ->capture_default_str();
  cmd->add_option("--drain-timeout", f->drain_timeout,
                  "after --duration, how long running requests may finish")
      ->capture_default_str();
  cmd->add_option("--client-threads", f->client_threads, "client I/O threads")
      ->capture_default_str();
  cmd->add_option("--warmup-requests", f->warmup_requests,
                  "requests sent one by one before measuring (not counted)")
      ->capture_default_str();
  cmd->add_option("--warmup-duration", f->warmup_duration,
                  "then a load of this length at the (first) --qps or --concurrency, not "
                  "counted (default 10s with --find-max-qps, else 0s)");
  cmd->callback([f, qps, conc, prompt, output, prefixes, interval, &exit_code] {
    f->has_qps = qps->count() > 0;
    f->has_concurrency = conc->count() > 0;
    f->has_prompt_tokens = prompt->count() > 0;
    f->has_output_tokens = output->count() > 0;
    f->has_prefixes = prefixes->count() > 0;
    f->has_sample_interval = interval->count() > 0;
    auto config = validate_loadgen_flags(*f);
    if (!config.ok()) {
      std::string msg = config.error().message;
      std::replace(msg.begin(), msg.end(), '\n', ' ');
      std::fprintf(stderr, "novaserve loadgen: error: %s\n", msg.c_str());
      exit_code = 2;
      return;
    }
    exit_code = run_loadgen(*config);
  });
}

}  // namespace novaserve
