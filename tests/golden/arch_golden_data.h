// Loader for the architecture golden data in tests/golden/data/<arch>/golden.json, written by
// tools/reference/make_arch_golden.py (Hugging Face transformers in float64 on a tiny model whose
// weights come from formula_weights.h). The format is specified in tools/reference/README.md,
// "Architecture golden data"; this is its C++ reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "golden_data.h"

namespace novaserve::golden {

/// One HF tensor of the reference checkpoint, in the order the script's model lists it.
struct ArchTensorSpec {
  std::string name;             ///< HF name, e.g. "model.layers.0.self_attn.qkv_proj.weight"
  std::vector<uint64_t> shape;  ///< PyTorch order
  uint64_t fnv1a64 = 0;         ///< FNV-1a 64 of the tensor's little-endian float32 bytes
};

/// The reference for one prompt (logits: raw float32 LM-head outputs).
struct ArchGoldenPrompt {
  std::string name;
  std::string text;                 ///< UTF-8; special-token text written literally
  bool add_bos = false;             ///< prompt_ids[0] is an automatically added BOS
  std::vector<int32_t> prompt_ids;  ///< the `tokenizers` library's ids of text (T ids)
  std::vector<float> last_logits;   ///< n_vocab logits of position T-1
  std::vector<std::vector<TopKEntry>> position_topk;  ///< T rows of top-k (logit descending)
  /// n_greedy greedy ids: greedy_ids[i] is the argmax (first index on ties) of the logits after
  /// prompt_ids + greedy_ids[0..i), each from a full forward pass.
  std::vector<int32_t> greedy_ids;
  std::vector<float> top2_gap;  ///< per greedy step: largest - second largest logit, >= 0
  std::vector<std::vector<TopKEntry>> greedy_topk;  ///< per greedy step: its top-k
};

/// golden.json of one architecture.
struct ArchGolden {
  std::string arch;     ///< GGUF general.architecture: "qwen3" or "phi3"
  std::string hf_arch;  ///< config.json architectures[0]
  int32_t n_vocab = 0;
  int32_t n_greedy = 0;
  std::vector<ArchTensorSpec> tensors;
  std::vector<ArchGoldenPrompt> prompts;
};

/// The format version this loader reads; other versions are rejected.
inline constexpr int kArchGoldenFormatVersion = 1;

/// Reads `dir`/golden.json (dir = tests/golden/data/<arch>). Shapes are validated so that callers
/// may index freely: last_logits has n_vocab values, every id is in [0, n_vocab), position_topk
/// has one row per prompt id, greedy_ids/top2_gap/greedy_topk have n_greedy entries, tensor
/// shapes are 1-D or 2-D with nonzero dimensions.
/// Errors: kNotFound (missing file), kIo (unreadable), kInvalidInput (not JSON, a missing or
/// mistyped field, another format_version, a shape mismatch), each naming the file.
Result<ArchGolden> load_arch_golden(const std::string& dir);

}  // namespace novaserve::golden
