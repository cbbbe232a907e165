#include "engine/sequence.h"

#include <algorithm>
#include <utility>

#include "common/check.h"

namespace novaserve {

Sequence::Sequence(EngineRequest request, int32_t n_vocab, int32_t block_size)
    : request_(std::move(request)),
      block_size_(block_size),
      num_prompt_(static_cast<int32_t>(request_.prompt.size())),
      sampler_(request_.sampling, n_vocab, request_.prompt),
      block_table_(BlockTable::blocks_for(num_prompt_ + request_.max_tokens - 1, block_size)) {
  NOVASERVE_CHECK(num_prompt_ >= 1 && request_.max_tokens >= 1 && block_size >= 1)
      << "prompt " << num_prompt_ << " max_tokens " << request_.max_tokens;
  NOVASERVE_CHECK(request_.cancelled != nullptr) << "request " << request_.id;
  tokens_.reserve(static_cast<size_t>(num_prompt_) + request_.max_tokens);
  tokens_.assign(request_.prompt.begin(), request_.prompt.end());
  block_hashes_.reserve(block_table_.max_blocks() + 1);
  if (request_.grammar) {
    matcher_.emplace(request_.grammar);
  } else if (request_.trigger_grammar && !request_.trigger_tokens.empty()) {
    matcher_.emplace(request_.trigger_grammar);
    trigger_ = true;
    grammar_on_ = false;
  }
}

void Sequence::update_trigger_grammar(int32_t token) {
  if (!trigger_) return;
  if (grammar_on_) {
    // Accepting ends the span: for a JSON call object that is its closing brace, after which
    // only whitespace could follow, and the family's closing syntax is the model's to write.
    if (matcher_->is_accepting()) grammar_on_ = false;
    return;
  }
  const auto& t = request_.trigger_tokens;
  if (std::find(t.begin(), t.end(), token) != t.end()) {
    matcher_->reset();
    grammar_on_ = true;
  }
}

void Sequence::append_token(int32_t token) {
  NOVASERVE_CHECK(status_ == SequenceStatus::kRunning) << "sequence " << id();
  NOVASERVE_CHECK(num_computed_ == num_tokens())
      << "sequence " << id() << ": sampled before its last token was computed";
  NOVASERVE_CHECK(num_generated_tokens() < request_.max_tokens)
      << "sequence " << id() << " exceeds max_tokens";
  tokens_.push_back(token);
}

uint64_t Sequence::block_hash(int32_t i) {
  NOVASERVE_CHECK(i >= 0 && (i + 1) * block_size_ <= num_tokens())
      << "block " << i << " of sequence " << id() << " is not full";
  while (static_cast<int32_t>(block_hashes_.size()) <= i) {
    const int32_t b = static_cast<int32_t>(block_hashes_.size());
    const uint64_t parent = b == 0 ? KvBlockPool::kRootHash : block_hashes_[b - 1];
    block_hashes_.push_back(
        KvBlockPool::chain_hash(parent, std::span<const int32_t>(tokens_).subspan(
                                            static_cast<size_t>(b) * block_size_, block_size_)));
  }
  return block_hashes_[i];
}

}  // namespace novaserve
