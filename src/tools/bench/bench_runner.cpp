#include "tools/bench/bench_runner.h"

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <fstream>
#include <mutex>
#include <random>
#include <string>
#include <thread>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

using Clock = std::chrono::steady_clock;

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

// Peak resident set size of this process (VmHWM in /proc/self/status), 0 where unavailable.
int64_t peak_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmHWM:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// Token arrival times of every sequence of one grid point, filled by engine callbacks.
struct PointLog {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<Clock::time_point>> times;  // [seq][token]
  int32_t finished = 0;
  std::string error;
};

BenchResult summarize(const BenchPoint& p, Clock::time_point t0, const PointLog& log) {
  BenchResult r;
  r.point = p;
  std::vector<double> gaps;
  Clock::time_point last_first = t0, last_token = t0;
  for (const auto& ts : log.times) {
    if (ts.empty()) continue;
    const double ttft = seconds(ts.front() - t0);
    r.ttft_mean_s += ttft / p.batch;
    r.ttft_max_s = std::max(r.ttft_max_s, ttft);
    last_first = std::max(last_first, ts.front());
    last_token = std::max(last_token, ts.back());
    if (ts.size() > 1) {
      const double rate = (ts.size() - 1) / seconds(ts.back() - ts.front());
      r.decode_tok_s += rate;
      for (size_t i = 1; i < ts.size(); ++i) gaps.push_back(seconds(ts[i] - ts[i - 1]));
    }
  }
  r.decode_tok_s_per_seq = r.decode_tok_s / p.batch;
  int64_t phase_tokens = 0;
  for (const auto& ts : log.times) {
    phase_tokens += std::count_if(ts.begin(), ts.end(), [&](auto t) { return t > last_first; });
  }
  if (phase_tokens > 0 && last_token > last_first) {
    r.decode_phase_tok_s = static_cast<double>(phase_tokens) / seconds(last_token - last_first);
  }
  // The full-batch window: from the last first token to the first sequence's last token. Each
  // sequence's rate is taken between its own tokens nearest the window's ends (the outputs of
  // one step arrive one after another, so the step that closes the window has tokens just past
  // it), and the rates are summed, as decode_tok_s sums whole-run rates.
  Clock::time_point first_last = last_token;  // the first sequence to finish
  for (const auto& ts : log.times) {
    if (!ts.empty()) first_last = std::min(first_last, ts.back());
  }
  if (first_last > last_first) {
    for (const auto& ts : log.times) {
      // a: the last token at or before the window's start; e: the last one by its end.
      const auto a = std::upper_bound(ts.begin(), ts.end(), last_first);
      const auto e = std::upper_bound(ts.begin(), ts.end(), first_last);
      if (a == ts.begin() || e == ts.begin() || e - a < 1) continue;
      const auto ta = *(a - 1), te = *(e - 1);
      if (te > ta) r.full_batch_tok_s += static_cast<double>(e - a) / seconds(te - ta);
    }
  }
  r.wall_s = seconds(last_token - t0);
  r.prefill_tok_s = static_cast<double>(p.batch) * p.prompt / seconds(last_first - t0);
  if (!gaps.empty()) {
    double sum = 0;
    for (double g : gaps) sum += g;
    r.itl_mean_s = sum / gaps.size();
    std::sort(gaps.begin(), gaps.end());
    r.itl_p99_s = gaps[std::min(gaps.size() - 1, static_cast<size_t>(0.99 * gaps.size()))];
  }
  r.peak_rss_bytes = peak_rss_bytes();
  return r;
}

}  // namespace

Result<std::vector<BenchResult>> run_bench(
    std::shared_ptr<const GgufFile> gguf, const Tokenizer& tokenizer, EngineOptions options,
    const std::vector<BenchPoint>& points,
    const std::function<void(const BenchResult&)>& on_result) {
  for (const BenchPoint& p : points) {
    if (p.batch < 1 || p.prompt < 1 || p.gen < 1) {
      return Err(ErrorCode::kInvalidInput, "bench: batch, prompt and gen must be >= 1");
    }
  }
  options.scheduler.enable_prefix_caching = false;
  auto engine = create_engine(std::move(gguf), tokenizer, options);
  if (!engine.ok()) return engine.error();
  EngineClient& e = **engine;

  // Ordinary tokens only: no end-of-generation or BOS ids inside a prompt.
  std::vector<int32_t> vocab;
  for (int32_t id = 0; id < tokenizer.n_vocab(); ++id) {
    if (!tokenizer.is_eog(id) && id != tokenizer.bos_id()) vocab.push_back(id);
  }
  std::mt19937 rng(1234);
  std::uniform_int_distribution<size_t> pick(0, vocab.size() - 1);

  uint64_t next_id = 1;
  // One grid point: submit its requests, wait for them all, summarize.
  auto run_point = [&](const BenchPoint& p) -> Result<BenchResult> {
    PointLog log;
    log.times.resize(p.batch);
    for (auto& t : log.times) t.reserve(p.gen);
    std::vector<EngineRequest> requests(p.batch);
    for (int32_t i = 0; i < p.batch; ++i) {
      EngineRequest& r = requests[i];
      r.id = next_id++;
      r.prompt.resize(p.prompt);
      for (auto& t : r.prompt) t = vocab[pick(rng)];
      r.max_tokens = p.gen;
      r.ignore_eos = true;
      r.grammar = p.grammar;
      r.sampling.temperature = 0.0f;
      r.on_output = [&log, i](StepOutput&& out) {
        const auto now = Clock::now();
        std::lock_guard<std::mutex> lk(log.mu);
        if (out.token >= 0) log.times[i].push_back(now);
        if (out.finish) {
          if (*out.finish == FinishReason::kError) log.error = out.error;
          ++log.finished;
          log.cv.notify_all();
        }
      };
    }
    const double mask_wait0 = e.stats().grammar_mask_wait_seconds;
    const double mask0 = e.stats().grammar_mask_seconds;
    const auto t0 = Clock::now();
    for (auto& r : requests) {
      if (auto st = e.submit(std::move(r)); !st.ok()) {
        // Already submitted requests still finish; wait for them so `log` outlives callbacks.
        std::unique_lock<std::mutex> lk(log.mu);
        const int32_t submitted = static_cast<int32_t>(&r - requests.data());
        log.cv.wait(lk, [&] { return log.finished >= submitted; });
        return Err(st.error().code, "bench batch " + std::to_string(p.batch) + " prompt " +
                                        std::to_string(p.prompt) + ": " + st.error().message);
      }
    }
    {
      std::unique_lock<std::mutex> lk(log.mu);
      log.cv.wait(lk, [&] { return log.finished >= p.batch; });
      if (!log.error.empty()) return Err(ErrorCode::kInternal, "bench: " + log.error);
    }
    BenchResult res = summarize(p, t0, log);
    int64_t generated = 0;
    for (const auto& ts : log.times) generated += static_cast<int64_t>(ts.size());
    res.mean_generated = static_cast<double>(generated) / p.batch;
    // The stats snapshot is published after each step, so wait for the last one to land.
    for (int i = 0; i < 100 && e.stats().num_running + e.stats().num_waiting > 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    res.mask_wait_s = e.stats().grammar_mask_wait_seconds - mask_wait0;
    res.mask_s = e.stats().grammar_mask_seconds - mask0;
    return res;
  };
  // Warm-up, not reported: the first steps pay one-time costs (a GPU's lazy kernel loading and
  // BLAS set-up, the CPU's page faults on the weights) that are not the grid's speed.
  if (!points.empty()) {
    const int32_t longest = std::max_element(points.begin(), points.end(),
                                             [](const BenchPoint& a, const BenchPoint& b) {
                                               return a.prompt < b.prompt;
                                             })
                                ->prompt;
    auto warm = run_point(BenchPoint{1, std::min(longest, 64), 2});
    if (!warm.ok()) return warm.error();
  }
  std::vector<BenchResult> results;
  for (const BenchPoint& p : points) {
    auto r = run_point(p);
    if (!r.ok()) return r.error();
    results.push_back(std::move(r.value()));
    if (on_result) on_result(results.back());
  }
  return results;
}

std::vector<std::pair<int32_t, int32_t>> recommend_batches(const std::vector<BenchResult>& results,
                                                           double slo_itl_s) {
  std::vector<std::pair<int32_t, int32_t>> out;
  for (const BenchResult& r : results) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const auto& pb) { return pb.first == r.point.prompt; });
    if (it == out.end()) {
      out.emplace_back(r.point.prompt, 0);
      it = out.end() - 1;
    }
    // A point with one generated token measured no ITL (0): it says nothing about the SLO.
    if (r.itl_mean_s > 0 && r.itl_mean_s <= slo_itl_s) {
      it->second = std::max(it->second, r.point.batch);
    }
  }
  return out;
}

}  // namespace novaserve
