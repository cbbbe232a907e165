// The layer split of a pipeline: how many consecutive layers each stage runs, given explicitly
// (`--layer-split 12,12,8`) or balanced by memory (`--layer-split auto`).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "model/llama_forward.h"
#include "model/model_config.h"

namespace novaserve {

/// What each stage's memory is made of, in bytes, before the split is chosen.
struct PipelineMemoryModel {
  /// [n_layer] bytes that layer l costs the stage that runs it: its weights plus its share of
  /// the KV pool.
  std::vector<uint64_t> layer_bytes;
  uint64_t first_stage_bytes = 0;  ///< where the embedding lives: token_embd
  uint64_t last_stage_bytes = 0;   ///< where the head lives: output_norm and output
  uint64_t stage_bytes = 0;        ///< every stage: workspace and small per-model tensors
};

/// Weight bytes of a model's tensors (GgufTensorInfo::nbytes) by where they live.
struct WeightBytes {
  std::vector<uint64_t> layer;  ///< [n_layer] tensors named blk.<l>.*
  uint64_t embedding = 0;       ///< token_embd.weight
  /// output_norm.weight and output.weight; a tied head (no output.weight) counts token_embd
  /// again, since the last stage reads it too (a device stage holds its own copy).
  uint64_t head = 0;
  uint64_t other = 0;  ///< anything else (rope_freqs...), which every stage reads
};

/// Sums `file`'s tensor sizes by where they live. Errors: kInvalidInput naming a blk.<l> tensor
/// whose l is not in [0, config.n_layer).
Result<WeightBytes> weight_bytes(const GgufFile& file, const ModelConfig& config);

/// The memory model of a split: `w`, plus `kv_bytes` of KV pool shared evenly by the layers
/// (every layer's K/V rows have the same size), plus `workspace_bytes` on every stage.
PipelineMemoryModel pipeline_memory_model(const WeightBytes& w, uint64_t kv_bytes,
                                          uint64_t workspace_bytes);

/// Bytes of the stage that runs layers `r` (first stage: the embedding; last: the head).
uint64_t range_bytes(const PipelineMemoryModel& m, LayerRange r);

/// Bytes each stage of `layers_per_stage` holds under `m`.
std::vector<uint64_t> stage_bytes(const PipelineMemoryModel& m,
                                  const std::vector<int64_t>& layers_per_stage);

/// The split of m.layer_bytes.size() layers into `n_stages` runs of >= 1 consecutive layers that
/// minimises the largest stage's bytes (an exact dynamic programme over the cut points; among
/// equal maxima the one whose earlier stages take fewer layers). Errors: kInvalidInput when
/// n_stages < 1 or exceeds the layer count.
Result<std::vector<int64_t>> auto_layer_split(const PipelineMemoryModel& m, int64_t n_stages);

/// The --layer-split value: "auto" (auto_layer_split over `m`) or a comma-separated list of
/// n_stages positive layer counts that sum to n_layer (= m.layer_bytes.size()). Errors:
/// kInvalidInput, one line naming the flag, for more stages than layers, a malformed list, a
/// count below 1, a list of another length than n_stages, or a sum other than n_layer.
Result<std::vector<int64_t>> parse_layer_split(std::string_view text, int64_t n_stages,
                                               const PipelineMemoryModel& m);

/// Whether the stage running layers `range` of an `n_layer`-layer model holds the tensor `name`
/// (the accounting of weight_bytes): blk.<l>.* for l in the range, token_embd.weight on the first
/// stage (and on the last when the head is tied: `tied_head`, the file has no output.weight),
/// output_norm.weight and output.weight on the last, and every other tensor on every stage.
bool stage_holds_tensor(std::string_view name, LayerRange range, int64_t n_layer, bool tied_head);

/// The layer ranges of a split: stage s runs [sum of counts before s, that + counts[s]).
std::vector<LayerRange> layer_ranges(const std::vector<int64_t>& layers_per_stage);

}  // namespace novaserve
