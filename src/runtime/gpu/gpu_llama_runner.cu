#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/gpu_status.h"
#include "common/check.h"
#include "model/forward_check.h"
#include "model/model_weights.h"
#include "runtime/gpu/gpu_llama_runner.h"
#include "runtime/pipeline/layer_split.h"

namespace novaserve::gpu {

namespace {

constexpr int64_t kMiB = int64_t{1} << 20;

}  // namespace

const char* gpu_vendor() {
#if defined(NOVASERVE_GPU_HIP)
  return "hip";
#else
  return "cuda";
#endif
}

int32_t decode_bucket(int32_t n) {
  if (n <= 16) {
    int32_t b = 1;
    while (b < n) b *= 2;
    return b;
  }
  return (n + 7) / 8 * 8;
}

Result<std::unique_ptr<ModelRunner>> create_gpu_runner(std::shared_ptr<const GgufFile> file,
                                                       const GpuRunnerOptions& options) {
  auto r = GpuLlamaRunner::create(std::move(file), options);
  if (!r.ok()) return r.error();
  return Result<std::unique_ptr<ModelRunner>>(std::unique_ptr<ModelRunner>(std::move(r.value())));
}

Result<std::unique_ptr<GpuLlamaRunner>> GpuLlamaRunner::create(std::shared_ptr<const GgufFile> file,
                                                               const GpuRunnerOptions& options) {
  // NOVASERVE_GPU_PROFILE, checked before the weights load so that a typo costs no load.
  const char* profile_env = std::getenv("NOVASERVE_GPU_PROFILE");
  const std::string profile = profile_env != nullptr ? profile_env : "";
  if (!profile.empty() && profile != "0" && profile != "1" && profile != "steps") {
    return Err(ErrorCode::kInvalidInput,
               "NOVASERVE_GPU_PROFILE=" + profile + ": expected 1 (per op), steps (per step) or 0");
  }
  int n_devices = 0;
  if (const cudaError_t e = cudaGetDeviceCount(&n_devices); e != cudaSuccess) {
    return Err(ErrorCode::kUnsupported,
               std::string("no usable ") + gpu_vendor() + " device: " + cudaGetErrorString(e));
  }
  if (options.device < 0 || options.device >= n_devices) {
    return Err(ErrorCode::kInvalidInput, "--gpu " + std::to_string(options.device) +
                                             ": this machine has " + std::to_string(n_devices) +
                                             " " + gpu_vendor() + " device(s)");
  }
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaSetDevice(options.device));
  auto config = ModelConfig::from_gguf(*file);
  if (!config.ok()) return config.error();
  if (config->head_dim != 64 && config->head_dim != 128) {
    return Err(ErrorCode::kUnsupported,
               "the GPU attention kernels need head_dim 64 or 128 (this "
               "model has " +
                   std::to_string(config->head_dim) + ")");
  }
  const int64_t n_layer = config->n_layer;
  LayerRange range = options.layers;
  if (range.first == 0 && range.last == 0) range.last = n_layer;
  if (range.first < 0 || range.first >= range.last || range.last > n_layer) {
    return Err(ErrorCode::kInvalidInput, "GPU runner layers [" + std::to_string(range.first) +
                                             ", " + std::to_string(range.last) +
                                             ") are not within [0, " + std::to_string(n_layer) +
                                             ")");
  }
  auto host_weights = ModelWeights::from_gguf(*file, *config);
  if (!host_weights.ok()) return host_weights.error();

  std::unique_ptr<GpuLlamaRunner> r(new GpuLlamaRunner());
  r->file_ = std::move(file);
  r->config_ = std::move(config.value());
  r->options_ = options;
  r->range_ = range;
  cudaDeviceProp prop{};
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaGetDeviceProperties(&prop, options.device));
  r->device_name_ = prop.name;
  r->n_sm_ = prop.multiProcessorCount;
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaStreamCreateWithFlags(&r->stream_, cudaStreamNonBlocking));

  WeightArenaOptions arena_options;
  const bool whole = range.first == 0 && range.last == n_layer;
  if (!whole) {  // a pipeline stage: only its layers (and the embedding or head) on this device
    const bool tied_head = r->file_->find_tensor("output.weight") == nullptr;
    arena_options.include = [range, n_layer, tied_head](std::string_view name) {
      return stage_holds_tensor(name, range, n_layer, tied_head);
    };
  }
  auto arena = WeightArena::load(*r->file_, r->stream_, arena_options);
  if (!arena.ok()) return arena.error();
  r->arena_ = std::move(arena.value());
  std::fprintf(
      stderr, "novaserve gpu: %s:%d %s%s, weights %s\n", gpu_vendor(), options.device,
      r->device_name_.c_str(),
      whole ? ""
            : (", layers [" + std::to_string(range.first) + ", " + std::to_string(range.last) + ")")
                  .c_str(),
      r->arena_->summary().c_str());
  auto dw = DeviceWeights::create(*host_weights, r->config_, *r->arena_, r->stream_, range);
  if (!dw.ok()) return dw.error();
  r->w_ = std::move(dw.value());
  auto mm = GpuMatmul::create(r->stream_);
  if (!mm.ok()) return mm.error();
  r->matmul_ = std::move(mm.value());
  if (r->matmul_->has_blas()) {
    const auto t0 = std::chrono::steady_clock::now();
    const GpuMatmul& mm = *r->matmul_;
    auto w16 = F16Weights::create(
        r->w_, [&mm](const WeightMatrix& m) { return mm.needs_f16_copy(m); }, r->stream_);
    if (!w16.ok()) return w16.error();
    r->w16_ = std::move(w16.value());
    if (r->w16_.copied_bytes > 0) {
      std::fprintf(stderr, "novaserve gpu: fp16 weight copies for GEMMs: %.1f MiB in %.2f s\n",
                   static_cast<double>(r->w16_.copied_bytes) / kMiB,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    }
  }
  NOVASERVE_RETURN_IF_ERROR(r->repack_q4_0());
  // The weights as the device holds them against the file's bytes for the same tensors (issue
  // 16's budget: at most 2% over, no fp16 copy of a quantized matrix).
  const Memory mem = r->memory();
  const uint64_t file_bytes = r->arena_->stats().used_bytes;
  std::fprintf(
      stderr,
      "novaserve gpu: device weight memory %.1f MiB = %.3f x the GGUF tensor bytes "
      "(%.1f MiB; fp16 copies %.1f MiB)\n",
      static_cast<double>(mem.weights) / kMiB,
      static_cast<double>(mem.weights) / static_cast<double>(std::max<uint64_t>(file_bytes, 1)),
      static_cast<double>(file_bytes) / kMiB, static_cast<double>(r->w16_.copied_bytes) / kMiB);
  r->backend_ = std::make_unique<GpuBackend>(r->stream_, *r->matmul_, r->in_, r->prof_,
                                             r->ws_.act_q8, r->ws_.attn_split, r->n_sm_);
  r->register_matrices();
  r->forward_ = std::make_unique<LlamaForward>(r->config_, r->w_.views());
  if (profile == "1") {
    r->prof_.enable();
    std::fprintf(stderr, "novaserve gpu: NOVASERVE_GPU_PROFILE=1: timing every op (graphs off)\n");
  } else if (profile == "steps") {
    r->prof_.enable_steps();
    std::fprintf(stderr,
                 "novaserve gpu: NOVASERVE_GPU_PROFILE=steps: timing each step's device and "
                 "host time (graphs as configured)\n");
  }
  return Result<std::unique_ptr<GpuLlamaRunner>>(std::move(r));
}

Status GpuLlamaRunner::repack_q4_0() {
  // The fp16 copies were made from ggml's layout already.
  std::vector<WeightMatrix*> todo;
  for (LayerWeights& l : w_.layers) {
    for (WeightMatrix* m : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) {
      if (m->data != nullptr && m->type == GgmlType::kQ4_0) todo.push_back(m);
    }
  }
  const auto bytes_of = [](const WeightMatrix& m) {
    return *ggml_row_bytes(m.type, m.n_in) * static_cast<size_t>(m.n_out);
  };
  if (w_.output.data != nullptr && w_.output.type == GgmlType::kQ4_0) {
    // A stage with the tied head but not the embedding has the table to itself: repack in place.
    if (w_.output.data == w_.tok_embd.data) {
      // Tied to the embedding table, whose lookup reads ggml's layout: repack a copy.
      NOVASERVE_RETURN_IF_ERROR(tied_output_.reset(bytes_of(w_.output), "Q4_0 output copy"));
      NOVASERVE_RETURN_IF_ERROR(repack_q4_0_split(static_cast<const uint8_t*>(w_.output.data),
                                                  w_.output.n_in, w_.output.n_out,
                                                  tied_output_.get<uint8_t>(), stream_));
      w_.output.data = tied_output_.get();
    } else {
      todo.push_back(&w_.output);
    }
  }
  size_t largest = 0;
  for (const WeightMatrix* m : todo) largest = std::max(largest, bytes_of(*m));
  DeviceBuffer src;  // a copy of one matrix in ggml's layout while it is rewritten in place
  NOVASERVE_RETURN_IF_ERROR(src.reset(largest, "Q4_0 repack staging"));
  for (const WeightMatrix* m : todo) {
    // The arena is this runner's own device memory; WeightMatrix views it as const.
    auto* dst = static_cast<uint8_t*>(const_cast<void*>(m->data));
    NOVASERVE_GPU_RETURN_IF_ERROR(
        cudaMemcpyAsync(src.get(), dst, bytes_of(*m), cudaMemcpyDeviceToDevice, stream_));
    NOVASERVE_RETURN_IF_ERROR(
        repack_q4_0_split(src.get<uint8_t>(), m->n_in, m->n_out, dst, stream_));
  }
  return gpu_status(cudaStreamSynchronize(stream_), "Q4_0 repack");
}

void GpuLlamaRunner::register_matrices() {
  static const F16Weights::Layer kNoF16;  // without BLAS (HIP) every matmul is a GEMV
  for (size_t il = 0; il < w_.layers.size(); ++il) {
    const LayerWeights& l = w_.layers[il];
    if (l.wq.data == nullptr) continue;  // another pipeline stage's layer
    const F16Weights::Layer& l16 = w16_.layers.empty() ? kNoF16 : w16_.layers[il];
    backend_->add_matrix(l.wq, l16.wq, ProfOp::kMatmulQkv);
    backend_->add_matrix(l.wk, l16.wk, ProfOp::kMatmulQkv);
    backend_->add_matrix(l.wv, l16.wv, ProfOp::kMatmulQkv);
    backend_->add_matrix(l.wo, l16.wo, ProfOp::kMatmulO);
    backend_->add_matrix(l.w_gate, l16.w_gate, ProfOp::kMatmulGateUp);
    backend_->add_matrix(l.w_up, l16.w_up, ProfOp::kMatmulGateUp);
    backend_->add_matrix(l.w_down, l16.w_down, ProfOp::kMatmulDown);
  }
  if (w_.output.data != nullptr)
    backend_->add_matrix(w_.output, w16_.output, ProfOp::kMatmulOutput);
}

GpuLlamaRunner::~GpuLlamaRunner() {
  graphs_.clear();
  if (stream_ != nullptr) {
    (void)cudaStreamSynchronize(stream_);
    (void)cudaStreamDestroy(stream_);
  }
}

std::string GpuLlamaRunner::describe() const {
  std::string s = std::string(gpu_vendor()) + ":" + std::to_string(options_.device) + " " +
                  device_name_ + ", graphs " + (options_.graphs ? "on" : "off");
  if (range_.first != 0 || range_.last != config_.n_layer) {
    s += ", layers [" + std::to_string(range_.first) + ", " + std::to_string(range_.last) + ")";
  }
  return s;
}

Status GpuLlamaRunner::ensure(int64_t rows, int64_t logit_rows, int64_t seqs, int64_t pages) {
  const ModelConfig& c = config_;
  bool moved = false;
  if (rows > ws_.rows) {
    const auto f = [rows](DeviceBuffer& b, int64_t width, const char* what) {
      return b.reset(static_cast<size_t>(rows * width) * sizeof(float), what);
    };
    NOVASERVE_RETURN_IF_ERROR(f(ws_.x, c.n_embd, "residual"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.h, c.n_embd, "normed"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.o, c.n_embd, "block output"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.q, c.q_dim(), "q"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.attn, c.q_dim(), "attention output"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.k, c.kv_dim(), "k"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.v, c.kv_dim(), "v"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.gate, c.n_ff, "ffn gate"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.up, c.n_ff, "ffn up"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.act, c.n_ff, "ffn activation"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.rope_table, c.n_rot, "rope table"));
    NOVASERVE_RETURN_IF_ERROR(f(ws_.final_h, c.n_embd, "logit rows"));
    // kQ8 GEMVs quantize at most kGemvMaxRows rows of the widest matmul input.
    NOVASERVE_RETURN_IF_ERROR(
        ws_.act_q8.reset(act_q8_bytes(std::min<int64_t>(rows, GpuMatmul::kGemvMaxRows),
                                      std::max({c.n_embd, c.n_ff, c.q_dim()})),
                         "quantized activations"));
    ws_.rows = rows;
    moved = true;
  }
  if (logit_rows > ws_.logit_rows) {
    const auto bytes = static_cast<size_t>(logit_rows * c.n_vocab) * sizeof(float);
    NOVASERVE_RETURN_IF_ERROR(ws_.logits.reset(bytes, "logits"));
    NOVASERVE_RETURN_IF_ERROR(host_logits_.reset(bytes, "logits (pinned)"));
    const auto id_bytes = static_cast<size_t>(logit_rows) * sizeof(int32_t);
    NOVASERVE_RETURN_IF_ERROR(ws_.greedy_ids.reset(id_bytes, "greedy ids"));
    NOVASERVE_RETURN_IF_ERROR(host_greedy_ids_.reset(id_bytes, "greedy ids (pinned)"));
    ws_.logit_rows = logit_rows;
    moved = true;
  }
  auto in_moved = in_.reserve(rows, seqs, pages);
  if (!in_moved.ok()) return in_moved.error();
  // The split-K partials of every decode batch size up to `seqs` (a smaller batch may split
  // more ways), recomputed only when the limits change.
  if (seqs > split_planned_seqs_ || max_context_ != split_planned_context_) {
    size_t split_bytes = 0;
    for (int32_t b = 1; b <= seqs; ++b) {
      split_bytes = std::max(
          split_bytes,
          decode_attention_workspace_bytes(b, forward_->attention_shape(),
                                           backend_->decode_plan(b, forward_->attention_shape())));
    }
    if (split_bytes > ws_.attn_split.bytes()) {
      NOVASERVE_RETURN_IF_ERROR(ws_.attn_split.reset(split_bytes, "split-K partials"));
      moved = true;
    }
    split_planned_seqs_ = std::max(seqs, split_planned_seqs_);
    split_planned_context_ = max_context_;
  }
  NOVASERVE_RETURN_IF_ERROR(
      matmul_->reserve(rows, std::max({c.n_embd, c.n_ff, c.q_dim()}),
                       std::max(c.n_ff * std::max(c.n_embd, c.q_dim()), c.n_vocab * c.n_embd)));
  attn_seqs_.reserve(seqs);
  seq_logit_row_.reserve(seqs);
  seq_n_new_.reserve(seqs);
  seq_all_logits_.reserve(seqs);
  seq_greedy_.reserve(seqs);
  if (moved || *in_moved) graphs_.clear();
  return {};
}

Status GpuLlamaRunner::reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                               int32_t block_size) {
  if (max_rows < 1 || max_seqs < 1 || max_context < 1 || block_size < 1) {
    return Err(ErrorCode::kInvalidInput, "GPU reserve: limits must be >= 1");
  }
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaSetDevice(options_.device));
  if (max_context > max_context_) {
    max_context_ = max_context;
    backend_->set_max_context(max_context_);
    graphs_.clear();  // the decode plans depend on it
  }
  // A padded decode batch has decode_bucket(max_seqs) rows and sequences.
  const int64_t seqs = decode_bucket(static_cast<int32_t>(max_seqs));
  const int64_t rows = std::max(max_rows, seqs);
  const int64_t pages = seqs * ((max_context + block_size - 1) / block_size);
  return ensure(rows, has_head() ? seqs : 0, seqs, pages);
}

std::optional<uint64_t> GpuLlamaRunner::kv_memory_budget(double utilization) const {
  size_t free_bytes = 0, total_bytes = 0;
  if (cudaSetDevice(options_.device) != cudaSuccess ||
      cudaMemGetInfo(&free_bytes, &total_bytes) != cudaSuccess) {
    return uint64_t{0};
  }
  // What this process (and any other) already holds counts against the share, as in vLLM's
  // --gpu-memory-utilization.
  const double budget = utilization * static_cast<double>(total_bytes) -
                        static_cast<double>(total_bytes - free_bytes);
  return budget > 0 ? static_cast<uint64_t>(budget) : 0;
}

Result<KvPoolMemory> GpuLlamaRunner::allocate_kv(uint64_t bytes) {
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaSetDevice(options_.device));
  DeviceBuffer k, v;
  NOVASERVE_RETURN_IF_ERROR(k.reset(bytes, "KV pool (K)"));
  NOVASERVE_RETURN_IF_ERROR(v.reset(bytes, "KV pool (V)"));
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaMemset(k.get(), 0, bytes));
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaMemset(v.get(), 0, bytes));
  std::fprintf(stderr, "novaserve gpu: KV pool %.1f MiB (K and V)\n",
               2.0 * static_cast<double>(bytes) / kMiB);
  KvPoolMemory mem{k.get(), v.get()};
  kv_pools_.push_back(std::move(k));
  kv_pools_.push_back(std::move(v));
  return mem;
}

Status GpuLlamaRunner::forward(std::span<const ForwardSeq> seqs, ActQuant mode) {
  prof_.enter_step();
  auto rows = check_forward(seqs, config_);
  if (!rows.ok()) return rows.error();
  if (rows->n_rows == 0) return {};
  // Every call sets it: stages and replicas on other devices share the engine's threads.
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaSetDevice(options_.device));
  const KvSequenceView& kv0 = seqs[0].kv;
  pool_ = KvPool{kv0.k, kv0.v, kv0.layer_stride, kv0.block_size, kv0.type};
  if (!paged_kv_type_supported(pool_.type)) {
    return Err(ErrorCode::kUnsupported, "KV cache type " +
                                            std::string(ggml_type_traits(pool_.type).name) +
                                            " is not supported on the GPU (f32, f16, q8, q4)");
  }
  int32_t max_kv_len = 0;
  int64_t pages = 0;
  bool decode = true;
  for (const ForwardSeq& f : seqs) {
    const KvPool p{f.kv.k, f.kv.v, f.kv.layer_stride, f.kv.block_size, f.kv.type};
    if (!(p == pool_)) {
      return Err(ErrorCode::kInvalidInput,
                 "the GPU runner needs every sequence of a step in one "
                 "KV pool with one block size and type");
    }
    const auto kv_len = static_cast<int32_t>(f.pos0 + f.tokens.size());
    max_kv_len = std::max(max_kv_len, kv_len);
    pages += (kv_len + pool_.block_size - 1) / pool_.block_size;
    decode = decode && f.tokens.size() == 1;
  }
  const auto n_seqs = static_cast<int32_t>(seqs.size());
  const int32_t bucket = decode_bucket(n_seqs);
  const bool use_graph = options_.graphs && decode && !prof_.enabled();
  // Decode steps are padded to their bucket with or without graphs, so both run the same
  // kernels on the same shapes (bit-identical results; BLAS picks its algorithm by shape).
  const int32_t padded = decode ? bucket : n_seqs;
  if (max_kv_len > max_context_) {  // beyond what reserve() planned for: re-plan, drop graphs
    max_context_ = max_kv_len;
    backend_->set_max_context(max_context_);
    graphs_.clear();
  }
  NOVASERVE_RETURN_IF_ERROR(ensure(std::max<int64_t>(rows->n_rows, padded),
                                   has_head() ? std::max<int64_t>(rows->n_logit_rows, padded) : 0,
                                   padded, pages));
  if (!(pool_ == graph_pool_) || mode != graph_act_quant_) {
    graphs_.clear();
    graph_pool_ = pool_;
    graph_act_quant_ = mode;
  }
  act_quant_ = mode;

  in_.build(seqs, padded, pool_.block_size);
  attn_seqs_.resize(seqs.size());
  // The host description of the step (the device CSR arrays of in_ are what the kernels read;
  // the padding sequences of a decode bucket have rows there but no entry here).
  int64_t row = 0;
  for (int32_t s = 0; s < n_seqs; ++s) {
    attn_seqs_[s].row_begin = row;
    row += static_cast<int64_t>(seqs[s].tokens.size());
    attn_seqs_[s].n_new = static_cast<int32_t>(seqs[s].tokens.size());
    attn_seqs_[s].pos0 = seqs[s].pos0;
    attn_seqs_[s].kv = seqs[s].kv.layer(0);
    attn_seqs_[s].layer_stride = seqs[s].kv.layer_stride;
  }
  seq_logit_row_.resize(seqs.size());
  seq_n_new_.resize(seqs.size());
  seq_all_logits_.resize(seqs.size());
  seq_greedy_.resize(seqs.size());
  bool all_greedy = true;
  for (int32_t s = 0; s < n_seqs; ++s) {
    seq_logit_row_[s] = in_.logit_row_of(s);
    seq_n_new_[s] = static_cast<int32_t>(seqs[s].tokens.size());
    seq_all_logits_[s] = seqs[s].all_logits ? 1 : 0;
    seq_greedy_[s] = seqs[s].greedy && !seqs[s].all_logits ? 1 : 0;
    all_greedy = all_greedy && seq_greedy_[s] != 0;
  }
  prof_.begin_step(decode, rows->n_rows, stream_);
  NOVASERVE_RETURN_IF_ERROR(in_.upload(stream_));

  if (use_graph && graphs_.has(bucket)) {
    NOVASERVE_RETURN_IF_ERROR(graphs_.launch(bucket, stream_));
  } else {
    NOVASERVE_RETURN_IF_ERROR(enqueue_step());
    if (use_graph) {  // the bucket's first step ran eagerly (warming up every kernel); capture
      auto made = graphs_.capture(bucket, stream_, [&] { return enqueue_step(); });
      if (!made.ok()) return made.error();
      std::fprintf(stderr,
                   "novaserve gpu: captured the decode graph of batch %d in %.1f ms (%zu kernels, "
                   "%.1f per layer)\n",
                   bucket, made->seconds * 1e3, made->kernels,
                   static_cast<double>(made->kernels) / std::max<int64_t>(1, config().n_layer));
    }
  }
  if (!has_head()) {  // a pipeline stage before the last: the hidden state stays on the device
    logits_on_host_ = false;
    std::fill(seq_greedy_.begin(), seq_greedy_.end(), uint8_t{0});
    prof_.queued_step(stream_);
    NOVASERVE_RETURN_IF_ERROR(gpu_status(cudaStreamSynchronize(stream_), "forward step"));
    return prof_.end_step();
  }
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaMemcpyAsync(
      host_greedy_ids_.get(), ws_.greedy_ids.get(),
      static_cast<size_t>(rows->n_logit_rows) * sizeof(int32_t), cudaMemcpyDeviceToHost, stream_));
  // A greedy step needs one id per row: n_vocab floats per row would be 16 MB at batch 32 with
  // a 128k vocabulary.
  logits_on_host_ = !all_greedy;
  if (logits_on_host_) {
    const auto logit_bytes =
        static_cast<size_t>(rows->n_logit_rows * config_.n_vocab) * sizeof(float);
    NOVASERVE_GPU_RETURN_IF_ERROR(cudaMemcpyAsync(host_logits_.get(), ws_.logits.get(), logit_bytes,
                                                  cudaMemcpyDeviceToHost, stream_));
  }
  prof_.queued_step(stream_);
  NOVASERVE_RETURN_IF_ERROR(gpu_status(cudaStreamSynchronize(stream_), "forward step"));
  return prof_.end_step();
}

Status GpuLlamaRunner::enqueue_step() {
  ForwardInputs in;
  in.ids = in_.ids();
  in.pos = in_.pos();
  in.n_rows = in_.n_rows();
  in.n_logit_rows = in_.n_logit_rows();
  in.logit_rows = in.n_logit_rows != in.n_rows ? in_.logit_rows() : nullptr;
  in.attention = AttentionStep{attn_seqs_.data(), static_cast<int32_t>(attn_seqs_.size()),
                               in_.n_rows(), in_.max_new(), forward_->attention_shape()};
  in.kv_first_layer = range_.first;  // a stage's pool holds only its layers
  ForwardBuffers buf;
  buf.x = ws_.x.get<float>();
  buf.h = ws_.h.get<float>();
  buf.o = ws_.o.get<float>();
  buf.q = ws_.q.get<float>();
  buf.attn = ws_.attn.get<float>();
  buf.k = ws_.k.get<float>();
  buf.v = ws_.v.get<float>();
  buf.gate = ws_.gate.get<float>();
  buf.up = ws_.up.get<float>();
  buf.act = ws_.act.get<float>();
  buf.rope_table = ws_.rope_table.get<float>();
  buf.head_in = ws_.final_h.get<float>();
  buf.logits = ws_.logits.get<float>();
  buf.greedy_ids = has_head() ? ws_.greedy_ids.get<int32_t>() : nullptr;
  return forward_->run(*backend_, in, buf, range_, act_quant_);
}

Result<float*> GpuLlamaRunner::hidden_input(int64_t n_rows) {
  NOVASERVE_GPU_RETURN_IF_ERROR(cudaSetDevice(options_.device));
  // A decode step of n rows is padded to its bucket; those rows are computed too, so they must
  // hold finite values.
  const int64_t padded = std::max<int64_t>(n_rows, decode_bucket(static_cast<int32_t>(n_rows)));
  NOVASERVE_RETURN_IF_ERROR(ensure(padded, 0, 0, 0));
  float* x = ws_.x.get<float>();
  if (padded > n_rows) {
    NOVASERVE_GPU_RETURN_IF_ERROR(cudaMemsetAsync(
        x + n_rows * config_.n_embd, 0,
        static_cast<size_t>((padded - n_rows) * config_.n_embd) * sizeof(float), stream_));
  }
  return x;
}

GpuLlamaRunner::Memory GpuLlamaRunner::memory() const {
  Memory m;
  m.weights = arena_->stats().reserved_bytes + w_.vectors.bytes() + w16_.storage.bytes() +
              tied_output_.bytes();
  for (const DeviceBuffer& p : kv_pools_) m.kv += p.bytes();
  for (const DeviceBuffer* b : {&ws_.x, &ws_.h, &ws_.o, &ws_.q, &ws_.attn, &ws_.k, &ws_.v,
                                &ws_.gate, &ws_.up, &ws_.act, &ws_.rope_table, &ws_.final_h,
                                &ws_.logits, &ws_.attn_split, &ws_.greedy_ids, &ws_.act_q8}) {
    m.workspace += b->bytes();
  }
  return m;
}

std::optional<int32_t> GpuLlamaRunner::greedy_token(size_t seq) const {
  NOVASERVE_CHECK(seq < seq_greedy_.size()) << "sequence " << seq;
  if (seq_greedy_[seq] == 0) return std::nullopt;
  return host_greedy_ids_.get<int32_t>()[seq_logit_row_[seq]];
}

const float* GpuLlamaRunner::logits(size_t seq, int32_t token) const {
  NOVASERVE_CHECK(seq < seq_logit_row_.size()) << "sequence " << seq;
  NOVASERVE_CHECK(logits_on_host_) << "logits of a step whose sequences were all greedy";
  const int64_t row =
      logit_row(seq_logit_row_[seq], seq_all_logits_[seq] != 0, seq_n_new_[seq], token);
  return host_logits_.get<float>() + row * config_.n_vocab;
}

}  // namespace novaserve::gpu
