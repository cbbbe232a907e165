#include "convert/hf_convert.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "common/temp_output.h"
#include "convert/gguf_stream_writer.h"
#include "convert/gguf_writer.h"
#include "convert/hf_checkpoint.h"
#include "convert/hf_config.h"
#include "convert/hf_json.h"
#include "convert/hf_rope_config.h"
#include "convert/hf_tensor_convert.h"
#include "convert/hf_tensor_names.h"
#include "convert/hf_tokenizer.h"
#include "quant/quantize_policy.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;

// One output tensor: either an HF tensor (source set) or a generated RoPE tensor.
struct PlannedTensor {
  HfTensorTarget target;
  const HfTensorRef* source = nullptr;
  std::vector<float> generated;  // hf_rope_tensors() values when source is null
  GgmlType out_type = GgmlType::kF32;
};

std::string shape_str(const std::vector<uint64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

Result<std::string> optional_file(const fs::path& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return std::string();
  return read_text_file(path.string());
}

Result<std::vector<PlannedTensor>> plan_tensors(const HfCheckpoint& ckpt, const HfModelConfig& c,
                                                GgmlType matrix_type) {
  std::vector<PlannedTensor> plan;
  for (const HfTensorRef& ref : ckpt.tensors()) {
    const SafetensorsTensorInfo& info = *ref.info;
    auto target = map_hf_tensor(info.name, c);
    if (!target.ok())
      return Err(target.error().code, ref.file->name() + ": " + target.error().message);
    if (!target->has_value()) continue;
    const HfTensorTarget& t = **target;
    if (info.dtype != SafetensorsDtype::kF32 && info.dtype != SafetensorsDtype::kF16 &&
        info.dtype != SafetensorsDtype::kBF16) {
      return Err(ErrorCode::kUnsupported,
                 ref.file->name() + ": tensor '" + info.name + "' has dtype " +
                     std::string(safetensors_dtype_name(info.dtype)) +
                     ": unsupported dtype for conversion (F32, F16 and BF16 are supported)");
    }
    if (info.shape != t.hf_shape) {
      return Err(ErrorCode::kInvalidInput, ref.file->name() + ": tensor '" + info.name +
                                               "' has shape " + shape_str(info.shape) +
                                               ", config.json implies " + shape_str(t.hf_shape));
    }
    plan.push_back({t, &ref, {}, t.is_matrix ? matrix_type : GgmlType::kF32});
  }
  for (const std::string& name : required_hf_tensors(c)) {
    if (ckpt.find(name) == nullptr) {
      return Err(ErrorCode::kNotFound, "the checkpoint has no tensor '" + name + "'");
    }
  }
  uint64_t order = 1;  // after token_embd, before the blocks (below kBlockOrderBase)
  for (HfGeneratedTensor& g : hf_rope_tensors(c)) {
    HfTensorTarget t{g.name, {g.values.size()}, false, QkPermute::kNone, order++};
    plan.push_back({t, nullptr, std::move(g.values), GgmlType::kF32});
  }
  std::sort(plan.begin(), plan.end(), [](const PlannedTensor& a, const PlannedTensor& b) {
    return a.target.order < b.target.order;
  });
  return plan;
}

Status check_output_path(const std::string& out_path, const std::string& hf_dir,
                         const HfCheckpoint& ckpt) {
  std::error_code ec;
  if (fs::is_directory(out_path, ec)) {
    return Err(ErrorCode::kInvalidInput, "output " + out_path + " is a directory");
  }
  if (!fs::exists(out_path, ec)) return {};
  // Any existing file of the checkpoint directory may be an input (config.json, tokenizer.json,
  // tokenizer_config.json, the shard index, a chat template file): never replace one.
  const fs::path parent = fs::absolute(out_path, ec).parent_path();
  if (fs::equivalent(parent, hf_dir, ec)) {
    return Err(ErrorCode::kInvalidInput, "output " + out_path +
                                             " is a file of the checkpoint directory; write to a "
                                             "new path");
  }
  for (const HfTensorRef& ref : ckpt.tensors()) {
    if (fs::equivalent(out_path, ref.file->name(), ec)) {
      return Err(ErrorCode::kInvalidInput, "output " + out_path + " is an input file");
    }
  }
  return {};
}

}  // namespace

Result<HfConvertResult> convert_hf_to_gguf(const std::string& hf_dir, const std::string& out_path,
                                           const HfConvertOptions& options) {
  const GgmlType mt = options.matrix_type;
  if (mt != GgmlType::kF32 && mt != GgmlType::kF16 && mt != GgmlType::kBF16) {
    return Err(ErrorCode::kInvalidInput, "matrix type " + std::string(ggml_type_traits(mt).name) +
                                             " is not f32, f16 or bf16");
  }
  const fs::path dir(hf_dir);
  std::error_code ec;
  if (!fs::exists(dir, ec)) return Err(ErrorCode::kNotFound, hf_dir + ": no such directory");
  if (!fs::is_directory(dir, ec)) {
    return Err(ErrorCode::kInvalidInput, hf_dir + ": not a directory");
  }

  HfTokenizerFiles tok_files;
  auto config_text = read_text_file((dir / "config.json").string());
  if (!config_text.ok()) return config_text.error();
  tok_files.config_json = std::move(config_text.value());
  auto config = parse_hf_config(tok_files.config_json, (dir / "config.json").string());
  if (!config.ok()) return config.error();

  auto ckpt = HfCheckpoint::open(hf_dir);
  if (!ckpt.ok()) return ckpt.error();
  auto plan = plan_tensors(**ckpt, *config, mt);
  if (!plan.ok()) return plan.error();

  auto tok_json = read_text_file((dir / "tokenizer.json").string());
  if (!tok_json.ok()) return tok_json.error();
  tok_files.tokenizer_json = std::move(tok_json.value());
  auto tok_config = optional_file(dir / "tokenizer_config.json");
  if (!tok_config.ok()) return tok_config.error();
  tok_files.tokenizer_config_json = std::move(tok_config.value());
  auto jinja = optional_file(dir / "chat_template.jinja");
  if (!jinja.ok()) return jinja.error();
  tok_files.chat_template_jinja = std::move(jinja.value());
  auto tok_kvs = convert_hf_tokenizer(tok_files, config->vocab_size);
  if (!tok_kvs.ok()) return tok_kvs.error();

  std::vector<GgufKv> hyper = hf_config_gguf_kvs(*config);
  std::vector<GgufKv> kvs;
  kvs.push_back(hyper.front());  // general.architecture first, as llama.cpp writes it
  const fs::path abs = fs::absolute(dir, ec).lexically_normal();
  const std::string name = (abs.has_filename() ? abs : abs.parent_path()).filename().string();
  kvs.push_back({"general.name", gguf_string(name)});
  kvs.push_back({"general.file_type", gguf_u32(llama_file_type(mt))});
  kvs.push_back({"general.quantization_version", gguf_u32(2)});
  kvs.insert(kvs.end(), hyper.begin() + 1, hyper.end());
  kvs.insert(kvs.end(), tok_kvs->begin(), tok_kvs->end());

  NOVASERVE_RETURN_IF_ERROR(check_output_path(out_path, hf_dir, **ckpt));
  // Written next to OUT and renamed over it only when complete: an existing OUT survives any
  // failure below.
  auto temp = TempOutput::create(out_path);
  if (!temp.ok()) return temp.error();
  std::vector<GgufTensorDecl> decls;
  uint64_t total_bytes = 0;
  HfConvertResult result;
  for (const PlannedTensor& p : *plan) {
    // GGUF dims are innermost first: HF {out, in} -> {in, out}.
    std::vector<uint64_t> dims(p.target.hf_shape.rbegin(), p.target.hf_shape.rend());
    GgufTensorDecl d{p.target.gguf_name, p.out_type, dims};
    auto nbytes = gguf_tensor_nbytes(d);
    if (!nbytes.ok()) return nbytes.error();
    total_bytes += *nbytes;
    uint64_t n = 1;
    for (uint64_t x : dims) n *= x;
    result.n_elements += n;
    decls.push_back(std::move(d));
  }
  auto writer = GgufStreamWriter::create((*temp)->path(), kvs, std::move(decls));
  if (!writer.ok()) return writer.error();

  uint64_t done = 0;
  const ByteSink sink = [&](const uint8_t* data, uint64_t n) -> Status {
    NOVASERVE_RETURN_IF_ERROR((*writer)->write(data, n));
    done += n;
    if (options.progress) options.progress(done, total_bytes);
    return {};
  };
  for (const PlannedTensor& p : *plan) {
    if (p.source == nullptr) {
      const auto* bytes = reinterpret_cast<const uint8_t*>(p.generated.data());
      NOVASERVE_RETURN_IF_ERROR(sink(bytes, p.generated.size() * sizeof(float)));
      continue;
    }
    const SafetensorsTensorInfo& info = *p.source->info;
    const auto n_rows = static_cast<int64_t>(info.shape.size() == 2 ? info.shape[0] : 1);
    const auto row_len = static_cast<int64_t>(info.shape.back());
    const int64_t head_dim = p.target.permute == QkPermute::kHeads ? config->head_dim : 0;
    const Status s = convert_tensor_rows(p.source->file->tensor_data(info), info.dtype, n_rows,
                                         row_len, p.out_type, head_dim, sink);
    if (!s.ok()) return Err(s.error().code, "tensor '" + info.name + "': " + s.error().message);
  }
  NOVASERVE_RETURN_IF_ERROR((*writer)->finish());
  NOVASERVE_RETURN_IF_ERROR((*temp)->commit());

  result.arch = config->gguf_arch;
  result.n_tensors = plan->size();
  result.n_weight_files = (*ckpt)->n_files();
  result.file_bytes = (*writer)->file_size();
  return result;
}

}  // namespace novaserve
