#include "convert/quantize_model.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <filesystem>
#include <memory>
#include <mutex>
#include <optional>

#include "common/temp_output.h"
#include "common/thread_pool.h"
#include "convert/gguf_stream_writer.h"
#include "convert/gguf_writer.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 12> kClassOrder = {
    "token_embd", "attn_q", "attn_k",   "attn_v", "attn_qkv", "attn_output",
    "ffn_gate",   "ffn_up", "ffn_down", "output", "norm",     "other"};

// f32 values per conversion task: large enough to amortize the hand-off, small enough that
// per-thread scratch stays at a few hundred KB.
constexpr uint64_t kTaskElements = 1 << 16;

std::string type_name(GgmlType t) {
  return std::string(ggml_type_traits(t).name);
}

// "a+b" for the distinct types of `types`, in first-seen order.
std::string join_types(const std::vector<GgmlType>& types) {
  std::string s;
  for (size_t i = 0; i < types.size(); ++i) {
    if (std::find(types.begin(), types.begin() + i, types[i]) != types.begin() + i) continue;
    s += (s.empty() ? "" : "+") + type_name(types[i]);
  }
  return s;
}

Status check_paths(const std::string& in_path, const std::string& out_path) {
  std::error_code ec;
  if (fs::is_directory(out_path, ec)) {
    return Err(ErrorCode::kInvalidInput, "output " + out_path + " is a directory");
  }
  if (fs::exists(out_path, ec) && fs::equivalent(in_path, out_path, ec)) {
    return Err(ErrorCode::kInvalidInput,
               "output " + out_path + " is the input file; write to a new path");
  }
  return {};
}

// Dequantizes `info` to f32 and quantizes it to `out_type` into `out` (plan.out_bytes bytes).
Status convert_tensor(const GgufFile& in, const GgufTensorInfo& info, GgmlType out_type,
                      uint8_t* out, ThreadPool& pool, std::vector<std::vector<float>>& scratch) {
  const uint64_t row_length = info.dims[0];
  const uint64_t n_rows = info.n_elements() / row_length;
  const uint64_t in_row_bytes = *ggml_row_bytes(info.type, row_length);
  const uint64_t out_row_bytes = *ggml_row_bytes(out_type, row_length);
  const uint64_t rows_per_task = std::max<uint64_t>(1, kTaskElements / row_length);
  const uint64_t n_tasks = (n_rows + rows_per_task - 1) / rows_per_task;
  for (auto& s : scratch) {
    if (s.size() < rows_per_task * row_length) s.resize(rows_per_task * row_length);
  }
  const uint8_t* src = in.tensor_data(info);

  std::atomic<bool> failed{false};
  std::mutex error_mutex;
  std::optional<Error> first_error;
  auto record = [&](const std::string& what, uint64_t row, const Error& e) {
    std::lock_guard<std::mutex> lock(error_mutex);
    if (!first_error) {
      first_error = Err(e.code, "tensor '" + info.name + "' row " + std::to_string(row) + ": " +
                                    what + ": " + e.message);
    }
    failed.store(true, std::memory_order_relaxed);
  };
  pool.parallel_for(static_cast<int64_t>(n_tasks), [&](int64_t task, int thread) {
    if (failed.load(std::memory_order_relaxed)) return;
    const uint64_t row0 = static_cast<uint64_t>(task) * rows_per_task;
    const uint64_t rows = std::min(rows_per_task, n_rows - row0);
    float* f32 = scratch[static_cast<size_t>(thread)].data();
    const Status d = dequantize_row(info.type, src + row0 * in_row_bytes, f32,
                                    static_cast<int64_t>(rows * row_length));
    if (!d.ok()) return record("dequantize", row0, d.error());
    for (uint64_t r = 0; r < rows; ++r) {
      const Status q =
          quantize_row(out_type, f32 + r * row_length, out + (row0 + r) * out_row_bytes,
                       static_cast<int64_t>(row_length));
      if (!q.ok()) return record("quantize", row0 + r, q.error());
    }
  });
  if (first_error) return *first_error;
  return {};
}

}  // namespace

std::string_view tensor_class(std::string_view name) {
  if (name.starts_with("token_embd")) return "token_embd";
  if (name.starts_with("output.")) return "output";
  if (name.find("norm") != std::string_view::npos) return "norm";
  // Matrices only: biases (attn_q.bias, ...) count as "other".
  for (std::string_view c : {"attn_q", "attn_k", "attn_v", "attn_qkv", "attn_output", "ffn_gate",
                             "ffn_up", "ffn_down"}) {
    const size_t at = name.find(c);
    if (at != std::string_view::npos && name.substr(at + c.size()) == ".weight") return c;
  }
  return "other";
}

Result<std::vector<TensorPlan>> plan_quantization(const GgufFile& in,
                                                  const QuantizePolicy& policy) {
  const bool tied = in.find_tensor("output.weight") == nullptr;
  std::vector<TensorPlan> plan;
  plan.reserve(in.tensors().size());
  for (const auto& t : in.tensors()) {
    TensorPlan p;
    p.name = t.name;
    p.dims = t.dims;
    p.in_type = t.type;
    p.in_bytes = t.nbytes;
    const TypeChoice c = policy.choose(t.name, t.dims, tied);
    p.out_type = c.source == TypeSource::kCopy ? t.type : c.type;
    p.requested_type = c.source == TypeSource::kCopy ? t.type : c.requested;
    p.convert = p.out_type != t.type;
    p.warning = c.warning;
    if (p.convert && dequantize_blocks_fn(t.type) == nullptr) {
      return Err(ErrorCode::kUnsupported, "tensor '" + t.name + "' has type " + type_name(t.type) +
                                              ", which cannot be dequantized for conversion");
    }
    p.out_bytes = p.convert ? *ggml_row_bytes(p.out_type, t.dims[0]) * (t.n_elements() / t.dims[0])
                            : t.nbytes;
    plan.push_back(std::move(p));
  }
  return plan;
}

std::vector<ClassSize> size_by_class(const std::vector<TensorPlan>& plan) {
  std::vector<ClassSize> classes;
  for (std::string_view name : kClassOrder) {
    ClassSize c;
    c.name = std::string(name);
    std::vector<GgmlType> in_types, out_types;
    for (const auto& t : plan) {
      if (tensor_class(t.name) != name) continue;
      ++c.n_tensors;
      c.in_bytes += t.in_bytes;
      c.out_bytes += t.out_bytes;
      in_types.push_back(t.in_type);
      out_types.push_back(t.out_type);
    }
    if (c.n_tensors == 0) continue;
    c.in_types = join_types(in_types);
    c.out_types = join_types(out_types);
    classes.push_back(std::move(c));
  }
  return classes;
}

Result<QuantizeModelResult> quantize_model(const std::string& in_path, const std::string& out_path,
                                           const QuantizePolicy& policy,
                                           const QuantizeModelOptions& options) {
  auto opened = GgufFile::open(in_path);
  if (!opened.ok()) return opened.error();
  const GgufFile& in = **opened;
  NOVASERVE_RETURN_IF_ERROR(check_paths(in_path, out_path));
  auto plan = plan_quantization(in, policy);
  if (!plan.ok()) return plan.error();
  auto temp = TempOutput::create(out_path);
  if (!temp.ok()) return temp.error();

  std::vector<GgufKv> kvs;
  kvs.reserve(in.metadata().size() + 2);
  bool has_file_type = false, has_quant_version = false;
  const uint32_t file_type = policy.file_type();
  for (const auto& kv : in.metadata()) {
    if (kv.key == "general.file_type") {
      has_file_type = true;
      kvs.push_back({kv.key, gguf_u32(file_type)});
      continue;
    }
    has_quant_version |= kv.key == "general.quantization_version";
    kvs.push_back(kv);
  }
  if (!has_file_type) kvs.push_back({"general.file_type", gguf_u32(file_type)});
  if (!has_quant_version) kvs.push_back({"general.quantization_version", gguf_u32(2)});

  std::vector<GgufTensorDecl> decls;
  decls.reserve(plan->size());
  for (const auto& p : *plan) decls.push_back({p.name, p.out_type, p.dims});
  auto writer = GgufStreamWriter::create((*temp)->path(), kvs, std::move(decls), in.version());
  if (!writer.ok()) return writer.error();

  uint64_t total_elements = 0, done_elements = 0;
  for (const auto& t : in.tensors()) total_elements += t.n_elements();
  ThreadPool pool(options.threads);
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));
  std::vector<uint8_t> converted;  // the current converted tensor, grow-only
  for (size_t i = 0; i < plan->size(); ++i) {
    const TensorPlan& p = (*plan)[i];
    const GgufTensorInfo& info = in.tensors()[i];
    const uint8_t* data = in.tensor_data(info);
    if (p.convert) {
      converted.resize(p.out_bytes);
      NOVASERVE_RETURN_IF_ERROR(
          convert_tensor(in, info, p.out_type, converted.data(), pool, scratch));
      data = converted.data();
    }
    NOVASERVE_RETURN_IF_ERROR((*writer)->write(data, p.out_bytes));
    done_elements += info.n_elements();
    if (options.progress) options.progress(done_elements, total_elements);
  }
  NOVASERVE_RETURN_IF_ERROR((*writer)->finish());
  NOVASERVE_RETURN_IF_ERROR((*temp)->commit());

  QuantizeModelResult result;
  result.tensors = std::move(*plan);
  result.in_file_bytes = in.file_size();
  std::error_code ec;
  result.out_file_bytes = fs::file_size(out_path, ec);
  if (ec) return Err(ErrorCode::kIo, out_path + ": " + ec.message());
  return result;
}

}  // namespace novaserve
