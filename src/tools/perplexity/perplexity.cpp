#include "tools/perplexity/perplexity.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>

#include "engine/sequence_kv_cache.h"

namespace novaserve {
namespace {

// Tokens per forward step: bounds the activation and logits buffers (512 x n_vocab floats,
// ~100 MB for a 49k vocabulary), as `generate` does for prefill.
constexpr int64_t kChunk = 512;

// z for a two-sided 95% normal interval.
constexpr double kZ95 = 1.959963984540054;

// A scored token: the logits row that predicts it and where its NLL goes.
struct Target {
  const float* logits;
  int32_t token;
  size_t out;
};

}  // namespace

Result<std::vector<PerplexityWindow>> plan_perplexity_windows(int64_t n_tokens, int64_t ctx,
                                                              int64_t stride) {
  if (ctx < 2) {
    return Err(ErrorCode::kInvalidInput, "ctx must be >= 2 (got " + std::to_string(ctx) + ")");
  }
  if (stride < 1 || stride > ctx) {
    return Err(ErrorCode::kInvalidInput, "stride must be in [1, ctx=" + std::to_string(ctx) +
                                             "] (got " + std::to_string(stride) + ")");
  }
  if (n_tokens <= ctx) {
    return Err(ErrorCode::kInvalidInput, "the text has " + std::to_string(n_tokens) +
                                             " tokens; one window of ctx=" + std::to_string(ctx) +
                                             " needs at least " + std::to_string(ctx + 1));
  }
  const int64_t n_windows = (n_tokens - ctx + stride - 1) / stride;
  const int64_t unscored = std::max<int64_t>(ctx - stride, 1);
  std::vector<PerplexityWindow> windows(static_cast<size_t>(n_windows));
  for (int64_t i = 0; i < n_windows; ++i) {
    windows[i] = {i * stride, i * stride + unscored, i * stride + ctx};
  }
  return windows;
}

double token_nll(const float* logits, int64_t n, int32_t target) {
  float max_logit = logits[0];
  for (int64_t i = 1; i < n; ++i) max_logit = std::max(max_logit, logits[i]);
  // expf of values <= 0 cannot overflow; the sum is kept in double.
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += std::exp(logits[i] - max_logit);
  return std::log(sum) + static_cast<double>(max_logit) - static_cast<double>(logits[target]);
}

Result<PerplexityStats> perplexity_stats(std::span<const double> nll) {
  if (nll.empty()) return Err(ErrorCode::kInvalidInput, "no scored tokens");
  PerplexityStats s;
  s.n = static_cast<int64_t>(nll.size());
  double sum = 0.0;
  for (double x : nll) sum += x;
  s.mean_nll = sum / static_cast<double>(s.n);
  if (s.n > 1) {
    double sq = 0.0;
    for (double x : nll) sq += (x - s.mean_nll) * (x - s.mean_nll);
    s.std_error = std::sqrt(sq / static_cast<double>(s.n - 1) / static_cast<double>(s.n));
  }
  s.ppl = std::exp(s.mean_nll);
  s.ppl_ci_low = s.ppl - kZ95 * s.ppl * s.std_error;
  s.ppl_ci_high = s.ppl + kZ95 * s.ppl * s.std_error;
  return s;
}

Result<PerplexityResult> compute_perplexity(LlamaModel& model, std::span<const int32_t> tokens,
                                            const PerplexityOptions& options) {
  const int64_t ctx = options.ctx;
  const ModelConfig& cfg = model.config();
  if (ctx > cfg.n_ctx_train) {
    return Err(ErrorCode::kInvalidInput, "ctx " + std::to_string(ctx) +
                                             " exceeds the model's training context " +
                                             std::to_string(cfg.n_ctx_train));
  }
  auto windows = plan_perplexity_windows(static_cast<int64_t>(tokens.size()), ctx, options.stride);
  if (!windows.ok()) return windows.error();
  if (options.bos_id >= cfg.n_vocab) {
    return Err(ErrorCode::kInvalidInput,
               "BOS id " + std::to_string(options.bos_id) + " is outside the vocabulary");
  }
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] >= cfg.n_vocab) {
      return Err(ErrorCode::kInvalidInput,
                 "token " + std::to_string(i) + " has id " + std::to_string(tokens[i]) +
                     " outside the vocabulary of " + std::to_string(cfg.n_vocab));
    }
  }
  auto kv = SequenceKvCache::create(cfg, ctx, uint64_t{1} << 36, options.kv_type);
  if (!kv.ok()) return kv.error();

  PerplexityResult result;
  result.windows = std::move(*windows);
  size_t n_scored = 0;
  for (const auto& w : result.windows) n_scored += static_cast<size_t>(w.end - w.first_scored);
  result.token_nll.resize(n_scored);

  std::vector<int32_t> window(static_cast<size_t>(ctx));
  std::vector<Target> targets;
  targets.reserve(static_cast<size_t>(kChunk));
  size_t next_out = 0;
  const auto t0 = std::chrono::steady_clock::now();

  // Runs window positions [a, b) (the cache holds 0 .. a-1) and scores every token whose
  // predicting position q (q + 1 in [scored, ctx)) lies in [a, b).
  auto run = [&](int64_t a, int64_t b, int64_t scored) -> Status {
    const int64_t need_from = std::max(a, scored - 1);
    const int64_t need_to = std::min(b, ctx - 1);  // exclusive
    // Logits only for the last row suffice when that is the only one needed.
    const bool all_logits = need_from < b - 1 && need_from < need_to;
    ForwardSeq seq{{window.data() + a, static_cast<size_t>(b - a)},
                   static_cast<int32_t>(a),
                   kv->view(),
                   all_logits};
    NOVASERVE_RETURN_IF_ERROR(model.forward({&seq, 1}, options.mode));
    NOVASERVE_RETURN_IF_ERROR(kv->advance(b - a));
    targets.clear();
    for (int64_t q = need_from; q < need_to; ++q) {
      const int32_t row = all_logits ? static_cast<int32_t>(q - a) : -1;
      targets.push_back({model.logits(0, row), window[q + 1], next_out++});
    }
    const int64_t n_vocab = cfg.n_vocab;
    auto score = [&](int64_t i, int /*thread*/) {
      const Target& t = targets[static_cast<size_t>(i)];
      result.token_nll[t.out] = token_nll(t.logits, n_vocab, t.token);
    };
    if (options.pool != nullptr) {
      options.pool->parallel_for(static_cast<int64_t>(targets.size()), score);
    } else {
      for (size_t i = 0; i < targets.size(); ++i) score(static_cast<int64_t>(i), 0);
    }
    return {};
  };

  const auto n_windows = static_cast<int64_t>(result.windows.size());
  for (int64_t wi = 0; wi < n_windows; ++wi) {
    const PerplexityWindow& w = result.windows[static_cast<size_t>(wi)];
    std::copy(tokens.begin() + w.begin, tokens.begin() + w.end, window.begin());
    if (options.bos_id >= 0) window[0] = options.bos_id;
    kv->clear();
    const int64_t scored = w.first_scored - w.begin;
    // The unscored prefix, then the scored part, each in chunks of at most kChunk tokens.
    for (auto [from, to] : {std::pair{int64_t{0}, scored}, std::pair{scored, ctx}}) {
      for (int64_t a = from; a < to; a += kChunk) {
        NOVASERVE_RETURN_IF_ERROR(run(a, std::min(a + kChunk, to), scored));
      }
    }
    if (options.progress) options.progress(wi + 1, n_windows);
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  result.n_evaluated = n_windows * ctx;
  auto stats = perplexity_stats(result.token_nll);
  if (!stats.ok()) return stats.error();
  result.stats = *stats;
  return result;
}

}  // namespace novaserve
