// LlamaModel: the CPU ModelRunner: LlamaForward (llama_forward.h) over a host Backend, with
// the step's buffers in host memory.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "backend/backend.h"
#include "common/result.h"
#include "gguf/gguf_file.h"
#include "model/llama_forward.h"
#include "model/model_config.h"
#include "model/model_runner.h"
#include "model/model_weights.h"

namespace novaserve {

/// A loaded model: config, validated weights and the backend that runs them.
///
/// forward() is batched over sequences: every sequence's new tokens form consecutive rows of one
/// activation matrix, so each weight is streamed once per step for the whole batch. Workspace
/// buffers grow to the largest step seen and are reused, so steady-state steps do not allocate.
/// Not thread-safe: one thread drives a model at a time.
class LlamaModel final : public ModelRunner {
 public:
  /// Reads the config and weights of `file` (which the model keeps alive) and binds `backend`.
  /// Errors: those of ModelConfig::from_gguf and ModelWeights::from_gguf.
  static Result<std::unique_ptr<LlamaModel>> create(std::shared_ptr<const GgufFile> file,
                                                    std::unique_ptr<Backend> backend);

  const ModelConfig& config() const override { return config_; }
  std::string describe() const override;
  const ModelWeights& weights() const { return weights_; }
  Backend& backend() { return *backend_; }

  /// forward() for layers `range` only (LlamaForward::run): a range that ends before the last
  /// layer computes no logits and leaves the hidden state in hidden(); one that starts after
  /// layer 0 reads it from there (set_hidden() copies one in, or hidden_input() is written).
  /// `kv_first_layer`: the model layer whose K/V are layer 0 of the sequences' KV views (0 for a
  /// whole-model cache; range.first for a pipeline stage's pool of only its layers). Errors:
  /// those of forward(), and kInvalidInput for an empty or out-of-bounds range or a
  /// kv_first_layer outside [0, range.first], or a range starting after layer 0 when the hidden
  /// state does not hold exactly this step's rows.
  Status forward_layers(std::span<const ForwardSeq> seqs, LayerRange range, ActQuant mode,
                        int64_t kv_first_layer = 0);
  /// The residual stream after the last forward_layers() (or set_hidden()): [n_rows][n_embd] f32.
  std::span<const float> hidden() const;
  /// Replaces the residual stream that the next forward_layers() starting after layer 0 reads;
  /// `x` holds that step's n_rows * n_embd values. Errors: kInvalidInput when x is empty or not
  /// a whole number of n_embd rows (the next step's row count is checked by forward_layers).
  Status set_hidden(std::span<const float> x);
  /// The residual stream buffer, [n_rows][n_embd] f32 (grown to n_rows; no allocation within
  /// reserve()'s sizes), for a transport to write the hidden state that the next
  /// forward_layers() starting after layer 0 of a step of n_rows rows reads.
  std::span<float> hidden_input(int64_t n_rows);
  /// Host bytes of this model's step buffers as sized so far (reserve() or the largest step);
  /// the backend's own scratch is not included.
  uint64_t workspace_bytes() const;

  /// Runs one step for `seqs`, writing their new K/V into their caches, and computes logits.
  /// `mode`: ActQuant::kNone (exact f32 activations) or kQ8 (8-bit activations, faster).
  /// Errors (nothing is computed): kInvalidInput for an empty sequence, a token id outside the
  /// vocabulary, a negative pos0, or a cache too small for pos0 + n new tokens.
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;

  /// Sizes every workspace (here and in the backend) for steps of up to `max_rows` new tokens
  /// over up to `max_seqs` sequences (logits for the last token of each), with KV views of up
  /// to `max_context` positions in blocks of `block_size`, so that such steps never allocate.
  /// Optional: forward() grows workspaces on demand anyway.
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override;
  /// reserve() for a model that runs only layer ranges ending before the last layer
  /// (`with_head` false: a pipeline stage before the last), which need no logits buffers.
  Status reserve_layers(int64_t max_rows, int64_t max_seqs, int64_t max_context, int32_t block_size,
                        bool with_head);

  /// Logits (n_vocab floats) of the last forward(): sequence `seq`'s new token `token`
  /// (-1 = the last one). Non-last tokens are available only when that sequence asked for
  /// all_logits. Valid until the next forward().
  const float* logits(size_t seq, int32_t token = -1) const override;

 private:
  LlamaModel() = default;
  void ensure_capacity(int64_t n_rows, int64_t n_logit_rows);

  std::shared_ptr<const GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
  std::unique_ptr<Backend> backend_;
  std::unique_ptr<LlamaForward> forward_;

  // Step state, sized grow-only.
  int64_t rows_capacity_ = 0;
  int64_t logit_rows_capacity_ = 0;
  int64_t step_rows_ = 0;  // rows x_ holds: the last step's, or set_hidden's
  std::vector<int32_t> ids_, pos_, logit_rows_;
  std::vector<float> x_, h_, q_, k_, v_, attn_, o_, gate_, up_, act_, rope_table_;
  std::vector<float> final_h_, logits_;
  std::vector<AttentionSeq> attn_seqs_;
  std::vector<int64_t> seq_logit_row_;   // per sequence: first logits row
  std::vector<uint8_t> seq_all_logits_;  // per sequence: all_logits flag
  std::vector<int32_t> seq_n_tokens_;    // per sequence: new tokens
};

}  // namespace novaserve
