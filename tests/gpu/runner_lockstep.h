// Lockstep greedy decoding on two ModelRunners (the CPU reference and the GPU runner) for the GPU
// end-to-end tests: both get the same batch of prompts, prefilled in chunks (so early steps mix
// prefill chunks with decode rows, as the engine's chunked prefill does) and then decoded
// greedily, each runner feeding back its own tokens.
//
// Every step compares the logits of each sequence that has not diverged yet: the error is
// max_i |gpu_i - cpu_i| / max_i |cpu_i| and must stay below `tol`. Where the argmaxes differ the
// step must be a near-tie on the CPU, cpu[cpu_arg] - cpu[gpu_arg] <= 2 * tol * max|cpu|, the gap
// the logit error itself can close; the sequence then counts as diverged and is no longer
// compared (its continuations differ).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "engine/block_table.h"
#include "engine/paged_kv_cache.h"
#include "model/model_runner.h"

namespace novaserve::gpu::test {

/// `n` prompts of mixed lengths in [1, max_len] of random ids in [1, n_vocab).
inline std::vector<std::vector<int32_t>> random_prompts(int n, int max_len, int64_t n_vocab,
                                                        uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> len(1, max_len);
  std::uniform_int_distribution<int32_t> id(1, static_cast<int32_t>(n_vocab - 1));
  std::vector<std::vector<int32_t>> p(n);
  for (auto& v : p) {
    v.resize(len(rng));
    for (int32_t& t : v) t = id(rng);
  }
  return p;
}

/// The synth model files bench/gpu/run.sh writes on the GPU machine and names in
/// NOVASERVE_GPU_SYNTH_MODELS (colon-separated paths); empty when the variable is unset.
inline std::vector<std::string> synth_model_paths() {
  const char* env = std::getenv("NOVASERVE_GPU_SYNTH_MODELS");
  std::vector<std::string> out;
  const std::string paths = env == nullptr ? "" : env;
  for (size_t start = 0; start < paths.size();) {
    const size_t end = std::min(paths.find(':', start), paths.size());
    if (end > start) out.push_back(paths.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

/// One runner's side: its KV pool, block tables and token histories.
class LockstepLane {
 public:
  LockstepLane(ModelRunner& m, const std::vector<std::vector<int32_t>>& prompts,
               int32_t max_context, int32_t block_size, GgmlType kv_type, uint32_t seed,
               ActQuant mode = ActQuant::kNone)
      : m_(m), prompts_(prompts), mode_(mode) {
    const int32_t n = static_cast<int32_t>(prompts.size());
    const int32_t per_seq = (max_context + block_size - 1) / block_size;
    auto kv = PagedKvCache::create(m.config(), n * per_seq, block_size, kv_type, &m);
    EXPECT_TRUE(kv.ok()) << (kv.ok() ? "" : kv.error().message);
    kv_ = std::make_unique<PagedKvCache>(std::move(kv.value()));
    // Scattered physical blocks, the same for both lanes (same seed), so block tables matter.
    std::vector<int32_t> perm(static_cast<size_t>(n) * per_seq);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), std::mt19937(seed));
    for (int32_t s = 0; s < n; ++s) {
      tables_.emplace_back(per_seq);
      for (int32_t b = 0; b < per_seq; ++b) tables_.back().push_back(perm[s * per_seq + b]);
      tokens_.push_back(prompts[s]);
    }
    fed_.assign(n, 0);
  }

  /// Runs one step: every sequence feeds its next prompt chunk (up to `chunk` tokens) or, once
  /// its prompt is in, its last token. Returns false (after a test failure) when forward fails.
  bool step(int32_t chunk) {
    seqs_.clear();
    for (size_t s = 0; s < tokens_.size(); ++s) {
      const int32_t prompt_len = static_cast<int32_t>(prompts_[s].size());
      const int32_t n = fed_[s] < prompt_len ? std::min(chunk, prompt_len - fed_[s]) : 1;
      ForwardSeq f;
      f.tokens = {tokens_[s].data() + fed_[s], static_cast<size_t>(n)};
      f.pos0 = fed_[s];
      f.kv = kv_->view(tables_[s]);
      seqs_.push_back(f);
    }
    const Status st = m_.forward(seqs_, mode_);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    return st.ok();
  }

  /// After step(): whether sequence s has fed all its tokens (so its logits predict a new one).
  bool caught_up(size_t s) const {
    return fed_[s] + static_cast<int32_t>(seqs_[s].tokens.size()) ==
           static_cast<int32_t>(tokens_[s].size());
  }
  const float* logits(size_t s) const { return m_.logits(s); }

  /// Commits the step: advances the fed counts and appends `next[s]` to every caught-up
  /// sequence.
  void commit(const std::vector<int32_t>& next) {
    for (size_t s = 0; s < tokens_.size(); ++s) {
      const bool up = caught_up(s);
      fed_[s] += static_cast<int32_t>(seqs_[s].tokens.size());
      if (up) tokens_[s].push_back(next[s]);
    }
  }
  size_t size() const { return tokens_.size(); }

 private:
  ModelRunner& m_;
  const std::vector<std::vector<int32_t>>& prompts_;
  ActQuant mode_;
  std::unique_ptr<PagedKvCache> kv_;
  std::vector<BlockTable> tables_;
  std::vector<std::vector<int32_t>> tokens_;
  std::vector<int32_t> fed_;
  std::vector<ForwardSeq> seqs_;
};

/// What a lockstep run measured.
struct LockstepReport {
  double max_error = 0.0;  ///< largest normalized logit error over compared rows
  int compared_rows = 0;   ///< (sequence, step) logit rows compared
  int diverged = 0;        ///< sequences whose greedy tokens parted at a near-tie
  int identical = 0;       ///< sequences with identical greedy tokens throughout
  std::vector<std::vector<int32_t>> gpu_tokens;  ///< the GPU lane's greedy tokens per sequence
};

inline int32_t argmax(const float* x, int64_t n) {
  return static_cast<int32_t>(std::max_element(x, x + n) - x);
}

/// Runs `cpu` and `gpu` in lockstep until every sequence has `n_new` greedy tokens, checking
/// the bounds of the header with EXPECTs. The KV caches are `kv_type` for `cpu` and `gpu_kv_type`
/// (default: the same) for `gpu`, the activation modes `mode` and `gpu_mode` (default: the same);
/// `gpu` may be a second CPU runner (to measure what a KV type or mode alone changes).
inline LockstepReport run_lockstep(ModelRunner& cpu, ModelRunner& gpu,
                                   const std::vector<std::vector<int32_t>>& prompts, int32_t n_new,
                                   int32_t chunk, double tol, GgmlType kv_type,
                                   std::optional<GgmlType> gpu_kv_type = std::nullopt,
                                   ActQuant mode = ActQuant::kNone,
                                   std::optional<ActQuant> gpu_mode = std::nullopt) {
  int32_t longest = 0;
  for (const auto& p : prompts) longest = std::max<int32_t>(longest, p.size());
  const int32_t max_context = longest + n_new;
  const int32_t block_size = 16;
  for (ModelRunner* m : {&cpu, &gpu}) {
    const Status st = m->reserve(static_cast<int64_t>(prompts.size()) * chunk,
                                 static_cast<int64_t>(prompts.size()), max_context, block_size);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  }
  LockstepLane c(cpu, prompts, max_context, block_size, kv_type, 7, mode);
  LockstepLane g(gpu, prompts, max_context, block_size, gpu_kv_type.value_or(kv_type), 7,
                 gpu_mode.value_or(mode));
  const size_t n = prompts.size();
  const int64_t n_vocab = cpu.config().n_vocab;
  std::vector<uint8_t> diverged(n, 0);
  std::vector<int32_t> generated(n, 0);
  LockstepReport r;
  r.gpu_tokens.assign(n, {});
  std::vector<int32_t> next_c(n), next_g(n);
  while (*std::min_element(generated.begin(), generated.end()) < n_new) {
    if (!c.step(chunk) || !g.step(chunk)) return r;
    for (size_t s = 0; s < n; ++s) {
      EXPECT_EQ(c.caught_up(s), g.caught_up(s));
      if (!c.caught_up(s)) continue;
      const float* lc = c.logits(s);
      const float* lg = g.logits(s);
      next_c[s] = argmax(lc, n_vocab);
      next_g[s] = argmax(lg, n_vocab);
      ++generated[s];
      if (generated[s] <= n_new) r.gpu_tokens[s].push_back(next_g[s]);
      if (diverged[s] || generated[s] > n_new) continue;
      double scale = 0.0, err = 0.0;
      for (int64_t i = 0; i < n_vocab; ++i) {
        scale = std::max(scale, std::fabs(static_cast<double>(lc[i])));
        err = std::max(err, std::fabs(static_cast<double>(lg[i]) - lc[i]));
      }
      const double norm_err = scale > 0 ? err / scale : err;
      r.max_error = std::max(r.max_error, norm_err);
      ++r.compared_rows;
      EXPECT_LE(norm_err, tol) << "sequence " << s << " token " << generated[s];
      if (next_c[s] != next_g[s]) {
        const double gap = static_cast<double>(lc[next_c[s]]) - lc[next_g[s]];
        EXPECT_LE(gap, 2.0 * tol * scale)
            << "sequence " << s << " token " << generated[s] << ": GPU picked " << next_g[s]
            << ", CPU " << next_c[s] << " with a logit gap of " << gap << " (not a near-tie)";
        diverged[s] = 1;
        ++r.diverged;
      }
    }
    c.commit(next_c);
    g.commit(next_g);
  }
  r.identical = static_cast<int>(n) - r.diverged;
  return r;
}

}  // namespace novaserve::gpu::test
