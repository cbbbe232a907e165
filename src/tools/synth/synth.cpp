#include "tools/synth/synth.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <future>
#include <mutex>
#include <optional>
#include <vector>

#include "common/temp_output.h"
#include "common/thread_pool.h"
#include "convert/gguf_stream_writer.h"
#include "gguf/gguf_file.h"
#include "quant/quantize.h"
#include "tools/synth/synth_rng.h"

namespace novaserve {
namespace {

// Rows are generated and written in chunks of about this many bytes; two chunks are alive at a
// time (one being written while the next is generated).
constexpr uint64_t kChunkBytes = uint64_t{32} << 20;

// Fills `n` bytes of rows [r0, r0 + n_rows) of tensor `t` into `dst`.
Status generate_rows(const SynthTensor& t, uint64_t seed, int64_t r0, int64_t n_rows, uint8_t* dst,
                     ThreadPool& pool, std::vector<std::vector<float>>& scratch) {
  const uint64_t row_bytes = *ggml_row_bytes(t.decl.type, static_cast<uint64_t>(t.n_in));
  const uint64_t name_hash = fnv1a64(t.decl.name);
  // A few tasks per thread balance the load; the split does not change any byte.
  const int64_t rows_per_task = std::max<int64_t>(1, n_rows / (pool.size() * 4));
  const int64_t n_tasks = (n_rows + rows_per_task - 1) / rows_per_task;
  std::mutex error_mutex;
  std::optional<Error> first_error;
  pool.parallel_for(n_tasks, [&](int64_t task, int thread) {
    std::vector<float>& row = scratch[thread];
    row.resize(static_cast<size_t>(t.n_in));
    const int64_t begin = task * rows_per_task;
    const int64_t end = std::min(n_rows, begin + rows_per_task);
    for (int64_t r = begin; r < end; ++r) {
      if (t.init == SynthInit::kOnes) {
        std::fill(row.begin(), row.end(), 1.0f);
      } else {
        SynthRowRng rng(seed, name_hash, static_cast<uint64_t>(r0 + r));
        for (float& x : row) x = rng.next_unit() * t.scale;
      }
      const Status st = quantize_row(t.decl.type, row.data(), dst + r * row_bytes, t.n_in);
      if (!st.ok()) {
        std::lock_guard<std::mutex> lock(error_mutex);
        if (!first_error) first_error = st.error();
        return;
      }
    }
  });
  if (first_error) return Err(first_error->code, t.decl.name + ": " + first_error->message);
  return {};
}

Status check_not_source(const std::string& path, const std::string& source) {
  std::error_code ec;
  if (std::filesystem::exists(path, ec) && std::filesystem::equivalent(path, source, ec)) {
    return Err(ErrorCode::kInvalidInput, path + ": output would overwrite the tokenizer source");
  }
  return {};
}

}  // namespace

Result<SynthReport> write_synth_gguf(const std::string& path, const SynthOptions& o) {
  const auto t0 = std::chrono::steady_clock::now();
  const SynthPreset* preset = find_synth_preset(o.preset);
  if (preset == nullptr) {
    return Err(ErrorCode::kInvalidInput,
               "unknown preset '" + o.preset + "' (presets: " + synth_preset_names() + ")");
  }
  auto source = GgufFile::open(o.tokenizer_source);
  if (!source.ok()) {
    return Err(source.error().code,
               "tokenizer source " + o.tokenizer_source + ": " + source.error().message);
  }
  auto shape = synth_shape(*preset, source->get());
  if (!shape.ok()) return shape.error();
  auto policy = synth_policy(o.types, shape->n_layer);
  if (!policy.ok()) return policy.error();
  auto plan = synth_tensor_plan(*shape, *policy);
  if (!plan.ok()) return plan.error();
  auto kvs = synth_metadata(*preset, *shape, policy->file_type(), o.seed, **source);
  if (!kvs.ok()) return kvs.error();
  NOVASERVE_RETURN_IF_ERROR(check_not_source(path, o.tokenizer_source));

  std::vector<GgufTensorDecl> decls;
  SynthReport report;
  for (const auto& t : *plan) {
    decls.push_back(t.decl);
    ++report.n_tensors_by_type[t.decl.type];
    if (t.requested != t.decl.type) ++report.n_fallbacks[{t.requested, t.decl.type}];
    report.n_params += static_cast<uint64_t>(t.n_in) * static_cast<uint64_t>(t.n_rows);
  }
  // Written next to `path` and renamed over it only when complete: an existing file there
  // survives any failure below.
  auto temp = TempOutput::create(path);
  if (!temp.ok()) return temp.error();
  auto writer = GgufStreamWriter::create((*temp)->path(), *kvs, std::move(decls));
  if (!writer.ok()) return writer.error();
  GgufStreamWriter& w = **writer;

  ThreadPool pool(o.n_threads);
  std::vector<std::vector<float>> scratch(static_cast<size_t>(pool.size()));
  std::vector<uint8_t> buffers[2];
  int next_buffer = 0;
  std::future<Status> pending;  // the write of the previous chunk
  auto wait_pending = [&pending]() -> Status {
    if (!pending.valid()) return {};
    return pending.get();
  };
  for (const auto& t : *plan) {
    const uint64_t row_bytes = *ggml_row_bytes(t.decl.type, static_cast<uint64_t>(t.n_in));
    const int64_t rows_per_chunk =
        std::max<int64_t>(1, static_cast<int64_t>(kChunkBytes / row_bytes));
    for (int64_t r0 = 0; r0 < t.n_rows; r0 += rows_per_chunk) {
      const int64_t n_rows = std::min(rows_per_chunk, t.n_rows - r0);
      std::vector<uint8_t>& buf = buffers[next_buffer];
      next_buffer ^= 1;
      buf.resize(static_cast<size_t>(n_rows) * row_bytes);
      const Status gen = generate_rows(t, o.seed, r0, n_rows, buf.data(), pool, scratch);
      // The pending write uses the other buffer; it must finish before this chunk is queued so
      // that chunks reach the file in order and at most two buffers are in use.
      const Status prev = wait_pending();
      if (!gen.ok()) return gen.error();
      if (!prev.ok()) return prev.error();
      pending =
          std::async(std::launch::async, [&w, &buf]() { return w.write(buf.data(), buf.size()); });
    }
  }
  NOVASERVE_RETURN_IF_ERROR(wait_pending());
  NOVASERVE_RETURN_IF_ERROR(w.finish());
  NOVASERVE_RETURN_IF_ERROR((*temp)->commit());
  report.file_bytes = w.file_size();
  report.n_tensors = w.tensors().size();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace novaserve
