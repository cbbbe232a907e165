// Loader for the golden reference data in tests/golden/data/, written by
// tools/reference/make_golden.py (Hugging Face transformers, float32, CPU). The file format is
// specified in tools/reference/README.md; this loader is its C++ reader.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace novaserve::golden {

/// One entry of a top-k list: a token id and its raw (pre-softmax) logit, float32.
struct TopKEntry {
  int32_t id = 0;
  float logit = 0.0f;
};

/// Top-k rows as both golden formats store them (position_topk, greedy_topk): a JSON array of
/// non-empty rows, each a list of [id, logit] pairs; `key` names the field in the error.
/// Errors: kInvalidInput for any other structure. A mistyped id or logit throws
/// nlohmann::json::exception, which the loaders turn into kInvalidInput. Ids are not range-checked.
Result<std::vector<std::vector<TopKEntry>>> parse_topk_rows(const nlohmann::json& rows,
                                                            const std::string& key);

/// The reference for one prompt. Logits are raw float32 values of the LM head (no softmax, no
/// temperature), for the model named in the manifest.
struct GoldenPrompt {
  std::string name;  ///< file stem, e.g. "english"; also the key in GoldenManifest::prompts
  std::string text;  ///< prompt text, UTF-8; special tokens like "<|im_start|>" written literally
  bool add_bos = false;  ///< whether prompt_ids starts with an automatically added BOS
  /// Token ids of `text` as the reference tokenizer produced them, special-token text matched as
  /// the special token, BOS only if add_bos. Length T.
  std::vector<int32_t> prompt_ids;
  /// 32 (manifest n_greedy) greedy tokens continuing the prompt: argmax with the first index on
  /// ties, no penalty, not stopped at EOS. greedy_ids[i] was chosen from the logits after
  /// prompt_ids + greedy_ids[0..i).
  std::vector<int32_t> greedy_ids;
  /// top2_gap[i] = (largest - second largest) logit of greedy step i, float32; >= 0. A small gap
  /// means a tiny numeric difference may legitimately pick another token.
  std::vector<float> top2_gap;
  /// Full logits of the last prompt position: n_vocab values.
  std::vector<float> last_logits;
  /// position_topk[t] = top-k of the logits at prompt position t (t in [0, T)), logit descending,
  /// ties by smaller id. k = manifest position_topk (20).
  std::vector<std::vector<TopKEntry>> position_topk;
  /// greedy_topk[i] = top-k of the logits greedy step i was chosen from; k = manifest greedy_topk.
  std::vector<std::vector<TopKEntry>> greedy_topk;
};

/// manifest.json: what model and settings the data belongs to.
struct GoldenManifest {
  int format_version = 0;
  std::string model_file;    ///< e.g. "SmolLM2-135M-Instruct.Q4_1.gguf"
  std::string model_sha256;  ///< lowercase hex SHA-256 of that file
  int32_t vocab_size = 0;
  int32_t n_layers = 0;
  int32_t n_embd = 0;
  int32_t n_ff = 0;
  int32_t n_head = 0;
  int32_t n_head_kv = 0;
  double rope_theta = 0.0;
  double rms_norm_eps = 0.0;
  bool tied_embeddings = false;
  bool add_bos = false;
  int32_t n_greedy = 0;
  int32_t position_topk = 0;
  int32_t greedy_topk = 0;
  std::vector<std::string> prompts;  ///< prompt names, in generation order
};

/// The format version this loader reads; files with another version are rejected.
inline constexpr int kGoldenFormatVersion = 1;

/// Reads `dir`/manifest.json. Errors: kNotFound (missing file), kIo (unreadable), kInvalidInput
/// (not JSON, a missing or mistyped field, another format_version, a prompt name that is not a
/// plain file stem).
Result<GoldenManifest> load_golden_manifest(const std::string& dir);

/// Reads `dir`/`name`.json and the last-logits file it names. Shapes are validated so callers may
/// index freely: last_logits.size() == n_vocab, every id in [0, n_vocab), position_topk has one row
/// per prompt id, greedy_ids/top2_gap/greedy_topk have equal length. Errors as
/// load_golden_manifest; kInvalidInput also for a shape mismatch or a truncated .f32 file.
Result<GoldenPrompt> load_golden_prompt(const std::string& dir, const std::string& name);

/// Every prompt listed in `dir`/manifest.json, in manifest order. Errors: the first error of
/// load_golden_manifest or load_golden_prompt.
Result<std::vector<GoldenPrompt>> load_golden(const std::string& dir);

}  // namespace novaserve::golden
