#include "engine/sampler.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "common/check.h"

namespace novaserve {

namespace {

// Per-step scratch of process_logits/select, shared by every Sampler on a thread: a sampler
// carries no state in it between calls, and one thread samples one row at a time. Sharing it
// means a request that waits in the queue holds no vocabulary-sized buffers (docs/engine.md,
// "Memory per request"); each thread sizes it once, to the largest vocabulary it has seen.
struct Scratch {
  std::vector<float> work;
  std::vector<int32_t> cand;
  std::vector<double> weight;
};
thread_local Scratch t_scratch;

Scratch& scratch(int32_t n_vocab) {
  Scratch& s = t_scratch;
  if (s.work.size() < static_cast<size_t>(n_vocab)) {
    s.work.resize(n_vocab);
    s.cand.resize(n_vocab);
    s.weight.resize(n_vocab);
  }
  return s;
}

uint64_t initial_seed(const SamplingParams& p) {
  if (p.seed) return *p.seed;
  std::random_device rd;
  return (static_cast<uint64_t>(rd()) << 32) ^ rd();
}

}  // namespace

Sampler::Sampler(const SamplingParams& params, int32_t n_vocab, std::span<const int32_t> prompt)
    : params_(params),
      n_vocab_(n_vocab),
      rng_(initial_seed(params)),
      penalties_(params.repetition_penalty != 1.0f || params.presence_penalty != 0.0f ||
                 params.frequency_penalty != 0.0f) {
  NOVASERVE_CHECK(n_vocab > 0) << "n_vocab=" << n_vocab;
  if (penalties_) {
    gen_count_.assign(n_vocab, 0);
    in_prompt_.assign(n_vocab, 0);
    // At most n_vocab distinct ids: reserving them keeps accept() allocation-free.
    seen_.reserve(n_vocab);
  }
  for (int32_t t : penalties_ ? prompt : std::span<const int32_t>()) {
    if (t < 0 || t >= n_vocab || in_prompt_[t]) continue;
    in_prompt_[t] = 1;
    seen_.push_back(t);
  }
  if (!params_.logit_bias.empty()) {
    bias_.assign(n_vocab, 0.0f);
    for (const auto& [id, b] : params_.logit_bias) {
      if (id >= 0 && id < n_vocab) bias_[id] += b;
    }
  }
}

void Sampler::accept(int32_t token) {
  if (!penalties_ || token < 0 || token >= n_vocab_) return;
  if (gen_count_[token] == 0 && !in_prompt_[token]) seen_.push_back(token);
  ++gen_count_[token];
}

void Sampler::process_logits(const float* logits) {
  work_ = scratch(n_vocab_).work.data();
  std::copy(logits, logits + n_vocab_, work_);
  if (!bias_.empty()) {
    for (int32_t i = 0; i < n_vocab_; ++i) work_[i] += bias_[i];
  }
  const float rep = params_.repetition_penalty;
  const float pres = params_.presence_penalty;
  const float freq = params_.frequency_penalty;
  for (int32_t t : seen_) {
    float& l = work_[t];
    if (rep != 1.0f) l = l > 0.0f ? l / rep : l * rep;
    const int32_t c = gen_count_[t];
    if (c > 0) l -= static_cast<float>(c) * freq + pres;
  }
}

bool Sampler::plain_greedy() const {
  return params_.temperature == 0.0f && bias_.empty() && params_.repetition_penalty == 1.0f &&
         params_.presence_penalty == 0.0f && params_.frequency_penalty == 0.0f;
}

int32_t Sampler::argmax() const {
  int32_t best = 0;
  for (int32_t i = 1; i < n_vocab_; ++i) {
    if (work_[i] > work_[best]) best = i;
  }
  return best;
}

size_t Sampler::select(double& total) {
  Scratch& sc = scratch(n_vocab_);
  std::vector<int32_t>& cand = sc.cand;
  std::vector<double>& weight = sc.weight;
  const float inv_t = 1.0f / params_.temperature;
  for (int32_t i = 0; i < n_vocab_; ++i) work_[i] *= inv_t;

  size_t n = static_cast<size_t>(n_vocab_);
  for (size_t i = 0; i < n; ++i) cand[i] = static_cast<int32_t>(i);
  // Strict weak order: higher logit first, ties by lower id, so results never depend on the
  // sort implementation.
  auto before = [this](int32_t a, int32_t b) {
    return work_[a] > work_[b] || (work_[a] == work_[b] && a < b);
  };
  if (params_.top_k > 0 && static_cast<size_t>(params_.top_k) < n) {
    const size_t k = static_cast<size_t>(params_.top_k);
    std::nth_element(cand.begin(), cand.begin() + k - 1, cand.begin() + n, before);
    n = k;
  }
  float max_l = -std::numeric_limits<float>::infinity();
  for (size_t i = 0; i < n; ++i) max_l = std::max(max_l, work_[cand[i]]);

  if (params_.top_p < 1.0f) {
    double z = 0.0;
    for (size_t i = 0; i < n; ++i) z += std::exp(static_cast<double>(work_[cand[i]] - max_l));
    const double target = static_cast<double>(params_.top_p) * z;
    // Sort only as long a prefix as the nucleus needs: the mass is usually in a few tokens.
    size_t s = std::min<size_t>(n, 64);
    for (;;) {
      std::partial_sort(cand.begin(), cand.begin() + s, cand.begin() + n, before);
      double cum = 0.0;
      size_t cut = 0;
      while (cut < s && cum < target) {
        cum += std::exp(static_cast<double>(work_[cand[cut]] - max_l));
        ++cut;
      }
      if (cum >= target || s == n) {
        n = std::max<size_t>(cut, 1);
        break;
      }
      s = std::min(n, s * 4);
    }
  }
  // Survivors keep a deterministic order (sorted, nth_element's or id order); the draw scans it.

  // min-p: p_i >= min_p * p_max  <=>  l_i >= max_l + log(min_p).
  const float min_l = params_.min_p > 0.0f ? max_l + std::log(params_.min_p)
                                           : -std::numeric_limits<float>::infinity();
  size_t kept = 0;
  total = 0.0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t id = cand[i];
    if (work_[id] < min_l) continue;
    const double w = std::exp(static_cast<double>(work_[id] - max_l));
    cand[kept] = id;
    weight[kept] = w;
    total += w;
    ++kept;
  }
  // The maximum always passes min-p (log(min_p) <= 0), so kept >= 1.
  NOVASERVE_CHECK(kept >= 1);
  return kept;
}

int32_t Sampler::sample(const float* logits) {
  process_logits(logits);
  int32_t token;
  if (params_.temperature == 0.0f) {
    token = argmax();
  } else {
    double total = 0.0;
    const size_t n = select(total);
    const Scratch& sc = scratch(n_vocab_);
    // 53 random bits -> u in [0, 1): the mapping is fixed here rather than left to
    // std::uniform_real_distribution, whose algorithm differs between standard libraries.
    const double u = static_cast<double>(rng_() >> 11) * 0x1.0p-53 * total;
    double cum = 0.0;
    token = sc.cand[n - 1];
    for (size_t i = 0; i < n; ++i) {
      cum += sc.weight[i];
      if (u < cum) {
        token = sc.cand[i];
        break;
      }
    }
  }
  accept(token);
  return token;
}

void Sampler::probabilities(const float* logits, std::vector<float>& out) {
  process_logits(logits);
  out.assign(n_vocab_, 0.0f);
  if (params_.temperature == 0.0f) {
    out[argmax()] = 1.0f;
    return;
  }
  double total = 0.0;
  const size_t n = select(total);
  const Scratch& sc = scratch(n_vocab_);
  for (size_t i = 0; i < n; ++i) out[sc.cand[i]] = static_cast<float>(sc.weight[i] / total);
}

}  // namespace novaserve
