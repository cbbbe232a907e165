#include "telemetry/governor_sim.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <random>
#include <sstream>

namespace novaserve {
namespace {

struct SimRequest {
  double arrival = 0;
  int prefilled = 0;  // prompt tokens computed
  int generated = 0;  // output tokens emitted
  double last_token = 0;
};

// Inhomogeneous Poisson arrivals: exponential gaps within each constant-rate segment (the
// process is memoryless, so restarting the draw at a segment edge is exact).
std::vector<double> arrivals(const LoadTrace& trace, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<double> out;
  for (size_t i = 0; i < trace.start_seconds.size(); ++i) {
    const double begin = trace.start_seconds[i];
    const double end =
        i + 1 < trace.start_seconds.size() ? trace.start_seconds[i + 1] : trace.end_seconds;
    const double rate = trace.rate_per_second[i];
    if (rate <= 0) continue;
    std::exponential_distribution<double> gap(rate);
    for (double t = begin + gap(rng); t < end; t += gap(rng)) out.push_back(t);
  }
  return out;
}

double p95(std::vector<double>& v) {
  if (v.empty()) return std::nan("");
  const size_t k = static_cast<size_t>(0.95 * static_cast<double>(v.size() - 1));
  std::nth_element(v.begin(), v.begin() + static_cast<long>(k), v.end());
  return v[k];
}

std::vector<double> supported_clocks(const GpuEnergyModel& gpu) {
  // NVML lists H100/H200 graphics clocks in 15 MHz steps from 210 MHz.
  std::vector<double> c;
  for (double f = 210e6; f <= gpu.max_clock_hertz + 1; f += 15e6) c.push_back(f);
  return c;
}

SimRun run_once(const LoadTrace& trace, const SimOptions& o, const std::vector<double>& ladder,
                bool governed) {
  const std::vector<double> arrive = arrivals(trace, o.seed);
  std::vector<SimRequest> reqs(arrive.size());
  for (size_t i = 0; i < arrive.size(); ++i) reqs[i].arrival = arrive[i];
  Governor governor(o.governor, ladder);
  double clock = o.gpu.max_clock_hertz;
  SimRun run;
  std::deque<size_t> waiting;  // FIFO; the head ones may be part-prefilled
  std::vector<size_t> running;
  WindowedHistogram ttft_window, itl_window;
  std::vector<double> all_ttft, all_itl;
  double t = 0, window_end = o.window_seconds, busy = 0, clock_time = 0;
  size_t next = 0;
  const auto close_window = [&] {
    LatencyWindow w;
    std::tie(w.ttft_p95_seconds, w.ttft_count) = ttft_window.take(0.95);
    std::tie(w.itl_p95_seconds, w.itl_count) = itl_window.take(0.95);
    // The window is judged by the rule the governor uses, against the same SLOs.
    Governor judge(o.governor, {clock});
    const GovernorDecision verdict = judge.on_window(w);
    if (!std::isnan(verdict.worst_ratio)) {
      ++run.windows;
      if (verdict.worst_ratio > 1.0) ++run.violating_windows;
    }
    if (governed) {
      const GovernorDecision d = governor.on_window(w);
      if (d.direction == GovernorDirection::kUp) ++run.decisions_up;
      if (d.direction == GovernorDirection::kDown) ++run.decisions_down;
      clock = d.to_hertz;
    }
    window_end += o.window_seconds;
  };
  while (next < reqs.size() || !waiting.empty() || !running.empty()) {
    while (next < reqs.size() && reqs[next].arrival <= t) waiting.push_back(next++);
    if (waiting.empty() && running.empty()) {  // idle until the next arrival
      const double until = reqs[next].arrival;
      run.energy_joules += o.gpu.idle_watts * (until - t);
      t = until;
      while (window_end <= t) close_window();
      continue;
    }
    // Plan: every running sequence decodes one token; prompts fill the rest of the budget.
    int budget = o.max_num_batched_tokens - static_cast<int>(running.size());
    int sequences = static_cast<int>(running.size());
    int tokens = sequences;
    std::vector<std::pair<size_t, int>> chunks;
    for (size_t w : waiting) {
      if (budget <= 0 || sequences >= o.max_num_seqs) break;
      int chunk = std::min(budget, o.prompt_tokens - reqs[w].prefilled);
      if (o.max_step_seconds > 0) {
        const double room =
            o.max_step_seconds - o.gpu.step_seconds(o.gpu.max_clock_hertz, tokens, sequences + 1);
        const int fit = static_cast<int>(room / o.gpu.step_per_token_seconds);
        // Always some progress, as the engine's scheduler does when a step is already long.
        chunk = std::min(chunk, std::max(fit, 16));
      }
      chunks.emplace_back(w, chunk);
      budget -= chunk;
      tokens += chunk;
      ++sequences;
    }
    const double dt = o.gpu.step_seconds(clock, tokens, sequences);
    run.energy_joules += o.gpu.busy_power_watts(clock) * dt;
    busy += dt;
    clock_time += clock * dt;
    t += dt;
    run.tokens += static_cast<int64_t>(running.size());
    for (size_t k = 0; k < running.size();) {
      SimRequest& r = reqs[running[k]];
      itl_window.observe(t - r.last_token);
      all_itl.push_back(t - r.last_token);
      r.last_token = t;
      if (++r.generated >= o.output_tokens) {
        running[k] = running.back();
        running.pop_back();
        ++run.requests;
      } else {
        ++k;
      }
    }
    for (const auto& [w, chunk] : chunks) {
      SimRequest& r = reqs[w];
      r.prefilled += chunk;
      if (r.prefilled < o.prompt_tokens) continue;
      ttft_window.observe(t - r.arrival);
      all_ttft.push_back(t - r.arrival);
      r.generated = 1;
      r.last_token = t;
      ++run.tokens;
      running.push_back(w);
      waiting.pop_front();  // chunks are taken from the head in order
    }
    while (window_end <= t) close_window();
  }
  close_window();
  run.seconds = t;
  run.ttft_p95_seconds = p95(all_ttft);
  run.itl_p95_seconds = p95(all_itl);
  run.mean_clock_hertz = busy > 0 ? clock_time / busy : o.gpu.max_clock_hertz;
  return run;
}

}  // namespace

Result<SimReport> simulate_governor(const LoadTrace& trace, const SimOptions& o) {
  NOVASERVE_RETURN_IF_ERROR(validate(o.governor));
  if (!(o.window_seconds > 0)) {
    return Err(ErrorCode::kInvalidInput, "--governor-interval must be > 0");
  }
  auto ladder = clock_ladder(supported_clocks(o.gpu), o.governor);
  if (!ladder.ok()) return ladder.error();
  SimReport r;
  r.baseline = run_once(trace, o, {o.gpu.max_clock_hertz}, false);
  r.governed = run_once(trace, o, ladder.value(), true);
  r.energy_saved_ratio = 1 - r.governed.energy_joules / r.baseline.energy_joules;
  const int windows = std::max(r.baseline.windows, 1);
  r.extra_violating_ratio =
      static_cast<double>(r.governed.violating_windows - r.baseline.violating_windows) / windows;
  return r;
}

std::string format_sim_report(const SimReport& r, const SimOptions& o, bool json) {
  std::ostringstream s;
  s.precision(4);
  const auto run = [&](const char* name, const SimRun& x) {
    if (json) {
      s << "\"" << name << "\":{\"energy_joules\":" << x.energy_joules
        << ",\"seconds\":" << x.seconds << ",\"requests\":" << x.requests
        << ",\"tokens\":" << x.tokens << ",\"tokens_per_joule\":" << x.tokens / x.energy_joules
        << ",\"windows\":" << x.windows << ",\"violating_windows\":" << x.violating_windows
        << ",\"ttft_p95_seconds\":" << x.ttft_p95_seconds
        << ",\"itl_p95_seconds\":" << x.itl_p95_seconds
        << ",\"mean_busy_clock_hertz\":" << x.mean_clock_hertz
        << ",\"decisions_up\":" << x.decisions_up << ",\"decisions_down\":" << x.decisions_down
        << "}";
    } else {
      s << name << ": energy " << x.energy_joules / 3600 << " Wh, " << x.requests << " requests, "
        << x.tokens / x.energy_joules << " tokens/J, violating windows " << x.violating_windows
        << " of " << x.windows << ", P95 TTFT " << x.ttft_p95_seconds * 1e3 << " ms, P95 ITL "
        << x.itl_p95_seconds * 1e3 << " ms, mean busy clock " << x.mean_clock_hertz / 1e6 << " MHz";
      if (x.decisions_up + x.decisions_down > 0) {
        s << ", steps up " << x.decisions_up << " down " << x.decisions_down;
      }
      s << "\n";
    }
  };
  if (json) {
    s << "{\"slo_ttft_p95_seconds\":" << o.governor.slo_ttft_p95_seconds
      << ",\"slo_itl_p95_seconds\":" << o.governor.slo_itl_p95_seconds
      << ",\"window_seconds\":" << o.window_seconds << ",";
    run("baseline", r.baseline);
    s << ",";
    run("governed", r.governed);
    s << ",\"energy_saved_ratio\":" << r.energy_saved_ratio
      << ",\"extra_violating_windows_ratio\":" << r.extra_violating_ratio << "}\n";
  } else {
    run("baseline (max clock)", r.baseline);
    run("governed (--governor slo)", r.governed);
    s << "energy saved " << r.energy_saved_ratio * 100 << "%, violating windows "
      << (r.extra_violating_ratio >= 0 ? "+" : "") << r.extra_violating_ratio * 100
      << "% of windows (goal: >= 15% saved with <= +2%)\n";
  }
  return s.str();
}

}  // namespace novaserve
