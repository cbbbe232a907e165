// The file-level job of `novaserve quantize`: read a GGUF model, convert each tensor to the
// type the QuantizePolicy chooses, write a new GGUF with the same metadata.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_file.h"
#include "quant/ggml_type.h"
#include "quant/quantize_policy.h"

namespace novaserve {

/// Summary class of a tensor by its GGUF name: "token_embd", "attn_q", "attn_k", "attn_v",
/// "attn_qkv" (phi3's fused matrix), "attn_output", "ffn_gate", "ffn_up", "ffn_down", "output",
/// "norm" (any "*norm*" tensor), or "other" (biases, rope_freqs, rope_factors_*, ...).
std::string_view tensor_class(std::string_view name);

/// What happens to one tensor.
struct TensorPlan {
  std::string name;
  std::vector<uint64_t> dims;  ///< ggml ne[]
  GgmlType in_type = GgmlType::kF32;
  GgmlType out_type = GgmlType::kF32;
  /// The policy's choice before the block-size fallback (== out_type unless it fell back).
  GgmlType requested_type = GgmlType::kF32;
  uint64_t in_bytes = 0;
  uint64_t out_bytes = 0;
  /// True when the tensor is dequantized to f32 and quantized to out_type; false when its bytes
  /// are copied unchanged (not a matrix, or already of the chosen type: no needless loss).
  bool convert = false;
  std::string warning;  ///< the policy's fallback warning, if any
};

/// Plans every tensor of `in`, in file order. Errors: kUnsupported naming a tensor that must be
/// converted but whose input type we cannot dequantize.
Result<std::vector<TensorPlan>> plan_quantization(const GgufFile& in, const QuantizePolicy& policy);

/// Bytes per tensor class, for the summary table.
struct ClassSize {
  std::string name;  ///< tensor_class()
  int64_t n_tensors = 0;
  uint64_t in_bytes = 0;
  uint64_t out_bytes = 0;
  std::string in_types;   ///< distinct input types, "+"-joined in first-seen order
  std::string out_types;  ///< distinct output types, likewise
};

/// Sums `plan` by tensor class, in the order token_embd, attn_q, attn_k, attn_v, attn_qkv,
/// attn_output, ffn_gate, ffn_up, ffn_down, output, norm, other; classes without tensors are left
/// out.
std::vector<ClassSize> size_by_class(const std::vector<TensorPlan>& plan);

struct QuantizeModelOptions {
  int threads = 0;  ///< <= 0: all cores
  /// Called on the calling thread after each tensor with the elements done so far and in total.
  std::function<void(uint64_t done, uint64_t total)> progress;
};

struct QuantizeModelResult {
  std::vector<TensorPlan> tensors;
  uint64_t in_file_bytes = 0;
  uint64_t out_file_bytes = 0;
};

/// Quantizes the GGUF model at `in_path` into `out_path` following `policy`.
///
/// Metadata is copied in order; general.file_type is set to policy.file_type() and
/// general.quantization_version to 2 when absent (ggml's current block layout). Tensors keep
/// their order, names and dims. A converted tensor is dequantized (dequantize_row: any type it
/// supports) to f32 and quantized row by row (quantize_row), rows split across `threads`.
///
/// The output is written to a temporary file next to `out_path` (OUT.tmp-PID, created first so
/// that an unwritable destination fails before any work) and renamed over `out_path` only when
/// complete, so a failure never leaves a partial OUT.
///
/// Memory: the input is memory-mapped and the output is streamed (GgufStreamWriter): copied
/// tensors are written straight from the mapping, a converted tensor as soon as it is done. The
/// peak is one converted tensor (the largest, e.g. 54 MiB for the default model's token_embd at
/// f16) plus 256 KiB of f32 scratch per thread.
///
/// Errors: kNotFound/kIo/kInvalidInput from opening IN; kInvalidInput when OUT is IN itself or a
/// directory; kIo naming the path when the temporary file cannot be created, written or renamed;
/// kUnsupported from plan_quantization; kInvalidInput naming the tensor and row when a value
/// cannot be quantized (NaN/Inf, or a scale beyond fp16).
Result<QuantizeModelResult> quantize_model(const std::string& in_path, const std::string& out_path,
                                           const QuantizePolicy& policy,
                                           const QuantizeModelOptions& options);

}  // namespace novaserve
