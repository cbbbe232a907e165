#include "model/forward_check.h"

#include <string>

#include "common/check.h"

namespace novaserve {

Result<ForwardRows> check_forward(std::span<const ForwardSeq> seqs, const ModelConfig& c) {
  ForwardRows rows;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const ForwardSeq& seq = seqs[s];
    const auto n = static_cast<int64_t>(seq.tokens.size());
    auto where = [s] { return "sequence " + std::to_string(s) + ": "; };
    if (n == 0) return Err(ErrorCode::kInvalidInput, where() + "no tokens");
    if (seq.pos0 < 0) return Err(ErrorCode::kInvalidInput, where() + "negative position");
    if (!kv_type_supported(seq.kv.type, c.head_dim)) {
      return Err(ErrorCode::kInvalidInput,
                 where() + "KV cache type " + std::string(ggml_type_traits(seq.kv.type).name) +
                     " cannot hold rows of " + std::to_string(c.head_dim) + " values");
    }
    if (seq.kv.k == nullptr || seq.kv.v == nullptr || seq.kv.block_table == nullptr ||
        seq.kv.block_size < 1 || static_cast<int64_t>(seq.pos0) + n > seq.kv.capacity()) {
      return Err(ErrorCode::kInvalidInput,
                 where() + "KV cache of " + std::to_string(seq.kv.capacity()) +
                     " positions cannot hold positions up to " + std::to_string(seq.pos0 + n));
    }
    for (int32_t t : seq.tokens) {
      if (t < 0 || t >= c.n_vocab) {
        return Err(ErrorCode::kInvalidInput, where() + "token id " + std::to_string(t) +
                                                 " is outside the vocabulary [0, " +
                                                 std::to_string(c.n_vocab) + ")");
      }
    }
    rows.n_rows += n;
    rows.n_logit_rows += seq.all_logits ? n : 1;
  }
  return rows;
}

int64_t logit_row(int64_t first_row, bool all_logits, int32_t n_new, int32_t token) {
  if (all_logits) {
    NOVASERVE_CHECK(token < n_new) << "token " << token;
    return first_row + (token < 0 ? n_new - 1 : token);
  }
  NOVASERVE_CHECK(token < 0 || token == n_new - 1) << "only the last token has logits";
  return first_row;
}

}  // namespace novaserve
