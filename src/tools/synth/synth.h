// `novaserve synth`: GGUF files of named Llama-family architectures with deterministic random
// weights, for benchmarking and GPU-vs-CPU tests at real model sizes (llama.cpp loads them too).
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include "common/result.h"
#include "quant/ggml_type.h"
#include "tools/synth/synth_plan.h"
#include "tools/synth/synth_preset.h"

namespace novaserve {

struct SynthOptions {
  std::string preset;    ///< a synth_presets() name
  SynthTypeRules types;  ///< --type, --keep-f16, --tensor-type (see synth_policy)
  uint64_t seed = 0;
  int n_threads = 0;  ///< <= 0: all cores
  /// GGUF whose tokenizer.* keys are copied (and, for smollm2-135m, whose config gives the
  /// shape): the default model or a llama.cpp vocab file, per SynthPreset::tokenizer_file.
  std::string tokenizer_source;
};

/// What write_synth_gguf produced.
struct SynthReport {
  uint64_t file_bytes = 0;
  uint64_t n_params = 0;  ///< elements over all tensors
  size_t n_tensors = 0;
  std::map<GgmlType, size_t> n_tensors_by_type;  ///< the file's tensors counted by type
  /// Tensors the block-size fallback stored in another type than asked, counted by (asked,
  /// stored): rows not a multiple of the asked type's block (q4_k -> q5_0, as in quantize).
  std::map<std::pair<GgmlType, GgmlType>, size_t> n_fallbacks;
  double seconds = 0.0;  ///< wall time of generation + writing
};

/// Writes the synthetic model to `path`. Tensors are generated in chunks of rows on a thread pool
/// and streamed to the file (GgufStreamWriter) while the next chunk is generated, so memory stays
/// at a few chunk buffers whatever the model size. Each row's values come from its own
/// SynthRowRng(seed, fnv1a64(tensor name), row), so the bytes depend only on (preset, types,
/// seed, tokenizer source), never on n_threads. Each matrix's type is synth_policy(types,
/// n_layer)'s choice.
/// Errors: kInvalidInput for an unknown preset (message lists the presets), a bad rule (naming
/// it) or a bad tokenizer source; kNotFound/kIo for the tokenizer source; kIo
/// naming `path` when it cannot be written. The file is written as `path`.tmp-PID (TempOutput)
/// and renamed to `path` only when complete, so a failure leaves no partial file and an
/// existing file at `path` unchanged.
Result<SynthReport> write_synth_gguf(const std::string& path, const SynthOptions& options);

}  // namespace novaserve
