#include "engine/logprobs.h"

#include <algorithm>
#include <cmath>

namespace novaserve {

void fill_logprobs(const float* logits, int32_t n_vocab, int32_t token, int32_t top_n,
                   StepOutput& out) {
  float max_logit = -INFINITY;
  for (int32_t i = 0; i < n_vocab; ++i) max_logit = std::max(max_logit, logits[i]);
  double sum = 0.0;
  for (int32_t i = 0; i < n_vocab; ++i) sum += std::exp(static_cast<double>(logits[i]) - max_logit);
  const double log_z = max_logit + std::log(sum);
  out.logprob = static_cast<float>(logits[token] - log_z);

  // Top-n by a partial insertion pass: n <= 20, so one scan with a sorted window beats sorting
  // the vocabulary and needs no buffer beyond the output.
  out.top_logprobs.clear();
  const auto better = [logits](int32_t a, int32_t b) {
    return logits[a] > logits[b] || (logits[a] == logits[b] && a < b);
  };
  for (int32_t i = 0; i < n_vocab && top_n > 0; ++i) {
    const auto n = static_cast<int32_t>(out.top_logprobs.size());
    if (n == top_n && !better(i, out.top_logprobs.back().token)) continue;
    if (n < top_n) out.top_logprobs.push_back({i, 0.0f});
    int32_t j = static_cast<int32_t>(out.top_logprobs.size()) - 1;
    while (j > 0 && better(i, out.top_logprobs[j - 1].token)) {
      out.top_logprobs[j] = out.top_logprobs[j - 1];
      --j;
    }
    out.top_logprobs[j].token = i;
  }
  for (TokenLogprob& t : out.top_logprobs) t.logprob = static_cast<float>(logits[t.token] - log_z);
}

}  // namespace novaserve
