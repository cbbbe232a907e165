// `novaserve convert`: a Hugging Face Llama-family checkpoint directory (Llama, Mistral, Qwen2,
// Qwen3, Phi-3; config.json,
// safetensors weights, tokenizer files) -> one GGUF file with llama.cpp's tensor names and
// metadata keys, loadable by llama.cpp and by our own loader.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "common/result.h"
#include "quant/ggml_type.h"

namespace novaserve {

struct HfConvertOptions {
  /// Type of the 2-D weight matrices: kF32, kF16 or kBF16 (round-to-nearest-even). Norm
  /// weights, biases and rope_freqs stay F32, as llama.cpp's converter keeps 1-D tensors.
  GgmlType matrix_type = GgmlType::kF16;
  /// Called after each written chunk with the tensor bytes written so far and in total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct HfConvertResult {
  std::string arch;           ///< general.architecture written
  size_t n_tensors = 0;       ///< tensors written (rope_freqs included)
  uint64_t n_elements = 0;    ///< weights written
  size_t n_weight_files = 0;  ///< safetensors files read
  uint64_t file_bytes = 0;    ///< size of the GGUF
};

/// Converts `hf_dir` into `out_path`.
///
/// Metadata: general.architecture, general.name (the directory's name), general.file_type
/// (llama.cpp's ftype of matrix_type), general.quantization_version, the hyperparameters of
/// hf_config_gguf_kvs() and the tokenizer keys of convert_hf_tokenizer(). Tensors: every HF
/// tensor mapped by map_hf_tensor(), plus the generated RoPE tensors of hf_rope_tensors()
/// (rope_freqs.weight for llama3 scaling, rope_factors_long/short.weight for LongRoPE), in the
/// order token_embd, RoPE tensors, blk.0 .. blk.N-1, output_norm, output. HF [out, in] matrices
/// become GGUF dims {in, out} with the same bytes per row; llama Q/K rows are permuted
/// (qk_source_row).
///
/// Everything is validated before the output is created (config, every safetensors header,
/// names, shapes, dtypes, the tokenizer). Tensors are then streamed one chunk (about 1 MiB) at a
/// time from the mapped shards, so memory stays bounded whatever the model size. The GGUF is
/// written as OUT.tmp-PID (TempOutput) and renamed over `out_path` only once it is complete and
/// closed, so a failure while writing leaves no partial file and an existing OUT unchanged.
///
/// Errors: kNotFound (no such directory, no config.json / tokenizer.json / weights, a required
/// tensor missing, naming it); kInvalidInput (not a directory, invalid JSON or safetensors,
/// a tensor of the wrong shape, OUT a directory or one of the inputs, a matrix_type other than
/// f32/f16/bf16); kUnsupported (architecture, rope type, tokenizer kind, an unknown tensor, a
/// dtype other than F32/F16/BF16, naming it); kIo (unwritable output).
Result<HfConvertResult> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                           const HfConvertOptions& options);

}  // namespace novaserve
