// RemoteStage: rank 0's view of a pipeline stage that another process runs (--nccl-init ...
// --rank R, docs/multi-gpu.md "Several processes"). Every PipelineStage call becomes a command
// over the rank's RankLink (stage_protocol.h) that stage_server.h answers; the step plan and
// hidden states travel with the "forward" command.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/pipeline/pipeline_stage.h"
#include "runtime/pipeline/rank_link.h"

namespace novaserve {

class RemoteStage final : public PipelineStage {
 public:
  /// Sends "assign" for `layers` and waits for the rank to load them. `last`: whether the stage
  /// ends at the model's last layer (it computes the logits). Errors: the rank's (its model did
  /// not load, its device failed), kIo when the link fails.
  static Result<std::unique_ptr<RemoteStage>> create(RankLink link, LayerRange layers,
                                                     int64_t n_embd, int64_t n_vocab, bool last);
  /// Tells the rank to exit (best effort).
  ~RemoteStage() override;

  LayerRange layers() const override { return layers_; }
  /// "rank R: " and the rank's own description.
  std::string describe() const override { return describe_; }
  /// One "forward" round trip. The KV views must be those allocate_kv() returned. Errors: the
  /// rank's forward errors; kInvalidInput for a KV view from elsewhere; kIo when the link fails
  /// or the answer has the wrong size.
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  /// A host buffer that forward() sends.
  Result<float*> hidden_input(int64_t n_rows) override;
  const float* hidden_output() const override { return hidden_out_.data(); }
  const float* logits(size_t seq, int32_t token) const override;
  std::optional<int32_t> greedy_token(size_t seq) const override;
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override;
  /// The rank allocates its pools; the returned pointers are tokens that name them in forward()
  /// (never dereferenced).
  Result<KvPoolMemory> allocate_kv(uint64_t bytes) override;
  /// The rank's figures; zeros when the link failed.
  StageMemory memory() const override;
  /// The rank's budget (asked now); nullopt for host memory, or when the link failed (the
  /// allocation then reports the failure).
  std::optional<uint64_t> kv_memory_budget() const override;
  /// "rank R " and the rank's memory domain: a process of its own never shares a budget with
  /// rank 0's stages.
  std::string memory_domain() const override { return memory_domain_; }

 private:
  RemoteStage() = default;
  // Sends `header` (and `payload`), waits for the answer. Errors: the answer's, or the link's.
  Result<RankMessage> call(const nlohmann::json& header,
                           std::span<const uint8_t> payload = {}) const;

  // The link is used from const memory(); the stage is driven by one thread at a time.
  mutable std::unique_ptr<RankLink> link_;
  LayerRange layers_;
  int64_t n_embd_ = 0;
  int64_t n_vocab_ = 0;
  bool last_ = false;
  std::string who_;
  std::string describe_;
  std::string memory_domain_;
  std::vector<std::unique_ptr<uint8_t[]>> pool_tokens_;  // per allocate_kv(): two bytes, K and V

  std::vector<float> hidden_in_;
  std::vector<float> hidden_out_;
  std::vector<int32_t> seq_pools_;
  // The last stage's answer: per sequence, its greedy token (or -1) and first logits row.
  std::vector<int32_t> greedy_;
  std::vector<int64_t> seq_row_;
  std::vector<uint8_t> seq_all_logits_;
  std::vector<int32_t> seq_n_tokens_;
  std::vector<float> logits_;
};

}  // namespace novaserve
