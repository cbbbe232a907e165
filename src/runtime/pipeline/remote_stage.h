// RemoteStage: rank 0's view of a pipeline stage that another process runs (--nccl-init ...
// --rank R, docs/multi-gpu.md "Several processes"). Every PipelineStage call becomes a command
// over the rank's RankLink (stage_protocol.h) that stage_server.h answers; the step plan and
// hidden states travel with the "forward" command.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "runtime/pipeline/pipeline_stage.h"
#include "runtime/pipeline/rank_link.h"

namespace novaserve {

/// How long rank 0 waits for a rank's answer.
struct RankTimeouts {
  /// The start-up commands: assign (the rank loads its weights), reserve, kv_budget,
  /// allocate_kv, memory (--nccl-init-timeout).
  std::chrono::milliseconds startup{std::chrono::seconds(120)};
  /// A forward step, and sending any command (--rank-timeout).
  std::chrono::milliseconds step{std::chrono::seconds(60)};
};

class RemoteStage final : public PipelineStage {
 public:
  /// Sends "assign" for `layers` and waits for the rank to load them. `last`: whether the stage
  /// ends at the model's last layer (it computes the logits). `rendezvous` is kept alive as long
  /// as the stage (rank 0's listener, which refuses late joiners). Until the stage is
  /// destroyed, an exit hook (common/exit_hooks.h) tells the rank to shut down on the exits
  /// that skip destructors. Errors: the rank's (its model did not load, its device failed), kIo
  /// when the link fails or the rank does not answer within timeouts.startup.
  static Result<std::unique_ptr<RemoteStage>> create(RankLink link, LayerRange layers,
                                                     int64_t n_embd, int64_t n_vocab, bool last,
                                                     RankTimeouts timeouts,
                                                     std::shared_ptr<const void> rendezvous);
  /// Tells the rank to exit 0 (best effort, bounded: RankLink::shutdown_peer).
  ~RemoteStage() override;

  /// Tells the rank to exit 1 with `reason` (rank 0 failed to start): the destructor then sends
  /// nothing more.
  void abandon(const std::string& reason);

  LayerRange layers() const override { return layers_; }
  /// "rank R: " and the rank's own description.
  std::string describe() const override { return describe_; }
  /// One "forward" round trip. The KV views must be those allocate_kv() returned. Errors: the
  /// rank's forward errors; kInvalidInput for a KV view from elsewhere; kIo when the link fails,
  /// the answer has the wrong size, or the rank does not answer within timeouts.step ("rank R
  /// did not answer within S s (--rank-timeout)": the link stays failed, as after any link
  /// error, and every later call fails at once).
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
  // Sends `header` (and `payload`), waits for the answer: a step (timeouts_.step) or a start-up
  // command (timeouts_.startup). Errors: the answer's, or the link's.
  Result<RankMessage> call(const nlohmann::json& header, std::span<const uint8_t> payload = {},
                           bool step = false) const;

  // Shared with the exit hook, which may run on another thread while the stage lives. The link
  // is used from const memory(); the stage is driven by one thread at a time.
  std::shared_ptr<RankLink> link_;
  uint64_t exit_hook_ = 0;
  RankTimeouts timeouts_;
  std::shared_ptr<const void> rendezvous_;
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
