// The architecture golden tests' checkpoint: the Hugging Face directory that
// tools/reference/make_arch_golden.py fed to transformers, rebuilt from committed files
// (config.json, tokenizer.json, tokenizer_config.json in tests/golden/data/<arch>/) plus
// model.safetensors from the weight formula (formula_weights.h), and its GGUF from
// `novaserve convert`. For the CPU golden test (arch_golden_test.cpp) and device tests alike:
// a test binary that uses it compiles tests/golden/{arch_checkpoint,arch_golden_data,
// formula_weights,golden_data}.cpp and tests/unit/gguf/safetensors_test_writer.cpp.
#pragma once

#include <string>

#include "arch_golden_data.h"
#include "common/result.h"
#include "convert/hf_convert.h"

namespace novaserve::golden {

/// tests/golden/data/<arch> under `source_dir` (the repository root).
std::string arch_golden_dir(const std::string& source_dir, const std::string& arch);

/// Writes the checkpoint of `golden` into `out_dir` (created if needed): the committed files of
/// `data_dir` copied, and model.safetensors holding golden.tensors in listed order as F32 with
/// formula values. Each tensor's bytes are checked against its recorded FNV-1a 64 first, so a
/// formula that drifted from the script's fails here, naming the tensor.
/// Errors: kInvalidInput (hash mismatch, a shape the formula does not define); kNotFound / kIo
/// (a missing data file, an unwritable `out_dir`).
Status write_arch_checkpoint(const std::string& data_dir, const ArchGolden& golden,
                             const std::string& out_dir);

/// write_arch_checkpoint into `work_dir`/hf, then convert_hf_to_gguf to `out_gguf` with f32
/// matrices (what the reference computed with). Errors: those of both steps.
Result<HfConvertResult> convert_arch_golden(const std::string& data_dir, const ArchGolden& golden,
                                            const std::string& work_dir,
                                            const std::string& out_gguf);

}  // namespace novaserve::golden
