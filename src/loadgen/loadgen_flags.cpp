#include "loadgen/loadgen_flags.h"

#include <cmath>

#include "common/duration.h"
#include "common/format_number.h"

namespace novaserve {
namespace {

Error invalid(std::string message) {
  return Err(ErrorCode::kInvalidInput, std::move(message));
}

// A duration flag, > 0 (or >= 0 with `zero_ok`); `flag` names it in errors. A sign is named as
// such: parse_duration() reads "-5s" only as a missing number.
Result<double> duration_flag(const std::string& flag, const std::string& text, bool zero_ok) {
  const char* const rule = zero_ok ? " must not be negative, got '" : " must be positive, got '";
  if (!text.empty() && text[0] == '-') return invalid(flag + rule + text + "'");
  auto d = parse_duration(text);
  if (!d.ok()) return invalid(flag + ": " + d.error().message);
  if (!(zero_ok ? *d >= 0 : *d > 0)) return invalid(flag + rule + text + "'");
  return *d;
}

}  // namespace

Result<LoadgenConfig> validate_loadgen_flags(const LoadgenFlags& f) {
  LoadgenConfig c;
  auto target = parse_http_url(f.url);
  if (!target.ok()) return target.error();
  c.target = *target;
  c.api_key = f.api_key;
  c.model = f.model;

  if (f.find_max_qps) {
    if (f.has_concurrency) return invalid("--find-max-qps searches over --qps; drop --concurrency");
  } else if (f.has_qps == f.has_concurrency) {
    return invalid("give exactly one of --qps (open loop) and --concurrency (closed loop)");
  }
  if (f.has_qps && !(f.qps > 0 && std::isfinite(f.qps))) {
    return invalid("--qps must be a positive number, got " + format_number(f.qps));
  }
  if (f.has_concurrency && f.concurrency < 1) {
    return invalid("--concurrency must be >= 1, got " + std::to_string(f.concurrency));
  }
  c.qps = f.has_qps ? f.qps : (f.find_max_qps ? 1.0 : 0.0);
  c.concurrency = f.has_concurrency ? f.concurrency : 0;

  // A search probes each rate for 30 s by default: a 12-s probe once accepted a rate that a
  // 30-s run at that rate missed (docs/benchmarks.md, issue 15).
  const std::string duration_text = f.duration.empty() && f.find_max_qps ? "30s" : f.duration;
  if (duration_text.empty()) return invalid("--duration is required (e.g. 30s, 5m, 2h)");
  auto duration = duration_flag("--duration", duration_text, false);
  if (!duration.ok()) return duration.error();
  c.duration_s = *duration;

  auto kind = parse_workload_kind(f.workload);
  if (!kind.ok()) return kind.error();
  c.workload.kind = *kind;
  if (*kind != WorkloadKind::kFixed && (f.has_prompt_tokens || f.has_output_tokens)) {
    return invalid("--prompt-tokens/--output-tokens apply only to --workload fixed");
  }
  if (f.prompt_tokens < 1) {
    return invalid("--prompt-tokens must be >= 1, got " + std::to_string(f.prompt_tokens));
  }
  if (f.output_tokens < 1) {
    return invalid("--output-tokens must be >= 1, got " + std::to_string(f.output_tokens));
  }
  c.workload.prompt_tokens = f.prompt_tokens;
  c.workload.output_tokens = f.output_tokens;
  if (f.has_prefixes && *kind != WorkloadKind::kFinQa) {
    return invalid("--prefixes applies only to --workload fin-qa");
  }
  if (f.prefixes < 1 || f.prefixes > 64) return invalid("--prefixes must be in [1, 64]");
  c.workload.prefixes = f.prefixes;
  c.workload.seed = f.seed;
  c.tokenizer_model = f.tokenizer_model;
  if (!(f.temperature >= 0)) return invalid("--temperature must be >= 0");
  c.temperature = f.temperature;

  const std::pair<const char*, const std::string*> slo_flags[] = {
      {"--slo-ttft-p95", &f.slo_ttft_p95},
      {"--slo-ttft-p99", &f.slo_ttft_p99},
      {"--slo-itl-p95", &f.slo_itl_p95}};
  std::optional<double>* slo_fields[] = {&c.slo.ttft_p95_s, &c.slo.ttft_p99_s, &c.slo.itl_p95_s};
  for (size_t i = 0; i < 3; ++i) {
    if (slo_flags[i].second->empty()) continue;
    auto d = duration_flag(slo_flags[i].first, *slo_flags[i].second, false);
    if (!d.ok()) return d.error();
    *slo_fields[i] = *d;
  }

  c.find_max_qps = f.find_max_qps;
  if (f.find_max_qps) {
    if (!c.slo.any()) return invalid("--find-max-qps needs at least one --slo-* flag");
    if (!(f.qps_tolerance > 0 && f.qps_tolerance < 1)) {
      return invalid("--qps-tolerance must be in (0, 1), got " + format_number(f.qps_tolerance));
    }
    if (!(f.max_qps > 0 && std::isfinite(f.max_qps))) {
      return invalid("--max-qps must be a positive number, got " + format_number(f.max_qps));
    }
    if (!(f.max_qps >= c.qps)) {
      return invalid("--max-qps must be >= the starting --qps " + format_number(c.qps) + ", got " +
                     format_number(f.max_qps));
    }
    c.search.start_qps = c.qps;
    c.search.tolerance = f.qps_tolerance;
    c.search.max_qps = f.max_qps;
    c.search.min_qps = std::min(c.search.min_qps, c.qps);
  }

  c.soak = f.soak;
  if (!f.soak && (f.has_sample_interval || f.server_pid != 0)) {
    return invalid("--sample-interval and --server-pid need --soak");
  }
  if (f.soak) {
    auto interval = duration_flag("--sample-interval", f.sample_interval, false);
    if (!interval.ok()) return interval.error();
    c.sample_interval_s = *interval;
  }
  if (f.server_pid < 0) return invalid("--server-pid must be a process id");
  c.server_pid = f.server_pid;

  auto timeout = duration_flag("--request-timeout", f.request_timeout, false);
  if (!timeout.ok()) return timeout.error();
  c.request_timeout_s = *timeout;
  // 0s is fine: stop at the duration's end.
  auto drain = duration_flag("--drain-timeout", f.drain_timeout, true);
  if (!drain.ok()) return drain.error();
  c.drain_timeout_s = *drain;
  if (f.client_threads < 1 || f.client_threads > 64) {
    return invalid("--client-threads must be in [1, 64], got " + std::to_string(f.client_threads));
  }
  c.client_threads = f.client_threads;
  if (f.warmup_requests < 0 || f.warmup_requests > 1000) {
    return invalid("--warmup-requests must be in [0, 1000]");
  }
  c.warmup_requests = f.warmup_requests;
  // A search's first probe once ran on a cold server and missed a rate that the warm server
  // held (docs/benchmarks.md, issue 15): by default it gets 10 s of load at its rate first.
  const std::string warmup_text =
      f.warmup_duration.empty() ? (f.find_max_qps ? "10s" : "0s") : f.warmup_duration;
  auto warmup = duration_flag("--warmup-duration", warmup_text, true);
  if (!warmup.ok()) return warmup.error();
  c.warmup_duration_s = *warmup;
  c.json_path = f.json;
  c.svg_path = f.svg;
  return c;
}

}  // namespace novaserve
