#include "arch_checkpoint.h"

#include <cstring>
#include <filesystem>

#include "../unit/gguf/safetensors_test_writer.h"
#include "common/splitmix64.h"
#include "convert/hf_json.h"
#include "formula_weights.h"

namespace novaserve::golden {
namespace {

namespace fs = std::filesystem;

constexpr const char* kCommittedFiles[] = {"config.json", "tokenizer.json",
                                           "tokenizer_config.json"};

Status write_file(const fs::path& path, const std::string& bytes) {
  if (!testing::write_bytes(path.string(), bytes)) {
    return Err(ErrorCode::kIo, "cannot write " + path.string());
  }
  return {};
}

}  // namespace

std::string arch_golden_dir(const std::string& source_dir, const std::string& arch) {
  return (fs::path(source_dir) / "tests" / "golden" / "data" / arch).string();
}

Status write_arch_checkpoint(const std::string& data_dir, const ArchGolden& golden,
                             const std::string& out_dir) {
  std::error_code ec;
  fs::create_directories(out_dir, ec);
  if (ec) return Err(ErrorCode::kIo, "cannot create " + out_dir + ": " + ec.message());
  for (const char* name : kCommittedFiles) {
    auto text = read_text_file((fs::path(data_dir) / name).string());
    if (!text.ok()) return text.error();
    NOVASERVE_RETURN_IF_ERROR(write_file(fs::path(out_dir) / name, *text));
  }
  std::vector<testing::StTensor> tensors;
  tensors.reserve(golden.tensors.size());
  for (const ArchTensorSpec& spec : golden.tensors) {
    auto values = formula_tensor(spec.name, spec.shape);
    if (!values.ok()) return values.error();
    testing::StTensor t = testing::st_f32(spec.name, spec.shape, *values);
    const uint64_t hash =
        fnv1a64(std::string_view(reinterpret_cast<const char*>(t.data.data()), t.data.size()));
    if (hash != spec.fnv1a64) {
      return Err(ErrorCode::kInvalidInput,
                 "tensor '" + spec.name + "': the formula's bytes hash differently from " +
                     "golden.json (formula_weights.cpp and tools/reference/formula_weights.py "
                     "disagree)");
    }
    tensors.push_back(std::move(t));
  }
  const auto bytes = testing::make_safetensors(tensors, {{"format", "pt"}});
  if (!testing::write_bytes((fs::path(out_dir) / "model.safetensors").string(), bytes)) {
    return Err(ErrorCode::kIo, "cannot write " + out_dir + "/model.safetensors");
  }
  return {};
}

Result<HfConvertResult> convert_arch_golden(const std::string& data_dir, const ArchGolden& golden,
                                            const std::string& work_dir,
                                            const std::string& out_gguf) {
  const std::string hf_dir = (fs::path(work_dir) / "hf").string();
  NOVASERVE_RETURN_IF_ERROR(write_arch_checkpoint(data_dir, golden, hf_dir));
  HfConvertOptions options;
  options.matrix_type = GgmlType::kF32;
  return convert_hf_to_gguf(hf_dir, out_gguf, options);
}

}  // namespace novaserve::golden
