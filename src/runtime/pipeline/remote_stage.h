// RemoteStage: rank 0's view of a pipeline stage that another process runs (--nccl-init ...
// --rank R, docs/multi-gpu.md "Several processes"). Every PipelineStage call becomes a command
// over the rank's RankLink (stage_protocol.h) that stage_server.h answers. Over the TCP star the
// step plan and hidden states travel with the "forward" command; over the NCCL transport
// (direct(), after nccl_init) the stage gets only its plan ("step") and the ranks move the
// hidden states themselves, so starting a step and reading the last stage's answer are separate
// calls (start_forward, finish_forward).
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
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
  /// One "forward" round trip (direct: start_forward, then finish_forward). The KV views must
  /// be those allocate_kv() returned. Errors: the rank's forward errors; kInvalidInput for a KV
  /// view from elsewhere; kIo when the link fails, the answer has the wrong size, or the rank
  /// does not answer within timeouts.step ("rank R did not answer within S s (--rank-timeout)":
  /// the link stays failed, as after any link error, and every later call fails at once).
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  /// A host buffer that forward() sends (the TCP star).
  Result<float*> hidden_input(int64_t n_rows) override;

  /// Starts the rank's NCCL communicator: sends "nccl_init" with `id` (NcclLibrary::unique_id,
  /// as hex) and returns; the rank answers once every rank, rank 0 included, has called
  /// ncclCommInitRank. Errors: the link's.
  Status start_nccl_init(const std::string& id_hex);
  /// Waits (timeouts.startup) for the answer to start_nccl_init(); the stage is direct() from
  /// then on. Errors: the rank's (its ncclCommInitRank failed or timed out), the link's.
  Status finish_nccl_init();
  /// Over the NCCL transport, once finish_nccl_init() succeeded.
  bool direct() const override { return direct_; }
  /// Direct: sends the step plan ("step": tokens, positions, block tables; no hidden state) and
  /// returns; the rank receives its input from the previous rank. Several steps may be started
  /// before the first is finished. Errors: kInvalidInput for a KV view from elsewhere; the
  /// link's. Not direct: forward().
  Status start_forward(std::span<const ForwardSeq> seqs, ActQuant mode) override;
  /// Direct: the last stage reads the answer to the oldest started step (greedy tokens and
  /// logits rows, as forward()), waiting at most timeouts.step while watching the links of
  /// watch() for another rank's failure (a rank before the last answers a step only when it
  /// failed: that failure is the step's error). A stage before the last has nothing to read.
  /// Errors: forward()'s; kInvalidInput when no step was started.
  Status finish_forward() override;
  /// The links finish_forward() watches: the other remote ranks' (link()).
  void watch(std::vector<std::shared_ptr<RankLink>> links) { watched_ = std::move(links); }
  const std::shared_ptr<RankLink>& link() const { return link_; }
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
  // What reading the last stage's answer to a step needs, per sequence.
  struct StepShape {
    std::vector<int32_t> n_tokens;
    std::vector<uint8_t> all_logits;
  };

  RemoteStage() = default;
  // Sends `header` (and `payload`), waits for the answer: a step (timeouts_.step) or a start-up
  // command (timeouts_.startup). Errors: the answer's, or the link's.
  Result<RankMessage> call(const nlohmann::json& header, std::span<const uint8_t> payload = {},
                           bool step = false) const;
  // The answer to a command sent before. Errors: as call().
  Result<RankMessage> await_answer(bool step) const;
  // seq_pools_ for `seqs`; returns their rows. Errors: kInvalidInput for a KV view from
  // elsewhere.
  Result<int64_t> map_pools(std::span<const ForwardSeq> seqs);
  static StepShape shape_of(std::span<const ForwardSeq> seqs);
  // Reads the last stage's answer to a step of `shape`: greedy_ and the logits rows.
  Status read_last_answer(const RankMessage& answer, const StepShape& shape);

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
  bool direct_ = false;
  std::vector<std::shared_ptr<RankLink>> watched_;
  std::deque<StepShape> started_;  // direct, last stage: the steps whose answers are not read

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
