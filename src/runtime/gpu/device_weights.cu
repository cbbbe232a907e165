#include <cstring>
#include <string>
#include <utility>

#include "backend/gpu/kernels/weight_decode.h"
#include "backend/gpu/platform/gpu_status.h"
#include "runtime/gpu/device_weights.h"

namespace novaserve::gpu {

namespace {

// Collects host f32 vectors, then rewrites their pointers to the device copy in one upload.
class VectorPacker {
 public:
  // Records `*slot` (n floats, may be null) for upload; the slot is rewritten by upload().
  void add(const float** slot, int64_t n) {
    if (*slot == nullptr) return;
    slots_.push_back({slot, static_cast<size_t>(n), total_});
    total_ += static_cast<size_t>(n);
  }
  Status upload(DeviceBuffer& buf, cudaStream_t stream) {
    std::vector<float> host(total_);
    for (const Slot& s : slots_) std::memcpy(host.data() + s.offset, *s.slot, s.n * sizeof(float));
    NOVASERVE_RETURN_IF_ERROR(buf.reset(total_ * sizeof(float), "weight vectors"));
    if (total_ > 0) {
      NOVASERVE_GPU_RETURN_IF_ERROR(cudaMemcpyAsync(buf.get(), host.data(), total_ * sizeof(float),
                                                    cudaMemcpyHostToDevice, stream));
      NOVASERVE_GPU_RETURN_IF_ERROR(cudaStreamSynchronize(stream));
    }
    for (const Slot& s : slots_) *s.slot = buf.get<float>() + s.offset;
    return {};
  }

 private:
  struct Slot {
    const float** slot;
    size_t n;
    size_t offset;
  };
  std::vector<Slot> slots_;
  size_t total_ = 0;
};

Status map_matrix(WeightMatrix& w, const WeightArena& arena, const std::string& name) {
  if (!gpu_weight_type_supported(w.type)) {
    return Err(ErrorCode::kUnsupported, name + ": weight type " +
                                            std::string(ggml_type_traits(w.type).name) +
                                            " has no GPU kernel");
  }
  const void* d = arena.device_address(w.data);
  if (d == nullptr) return Err(ErrorCode::kInternal, name + ": not in the weight arena");
  w.data = d;
  return {};
}

}  // namespace

Result<DeviceWeights> DeviceWeights::create(const ModelWeights& host, const ModelConfig& config,
                                            const WeightArena& arena, cudaStream_t stream,
                                            LayerRange range) {
  DeviceWeights d;
  d.tok_embd = host.tok_embd;
  d.output = host.output;
  d.output_norm = host.output_norm;
  d.layers = host.layers;
  const bool first = range.first == 0, last = range.last == config.n_layer;
  if (first) {
    NOVASERVE_RETURN_IF_ERROR(map_matrix(d.tok_embd, arena, "token_embd.weight"));
  } else {
    d.tok_embd.data = nullptr;
  }
  if (last) {
    NOVASERVE_RETURN_IF_ERROR(map_matrix(d.output, arena, "output.weight"));
  } else {
    d.output.data = nullptr;
    d.output_norm = nullptr;
  }
  const int64_t n_embd = host.tok_embd.n_in;
  const int64_t head_dim = config.head_dim;
  VectorPacker packer;
  packer.add(&d.output_norm, n_embd);
  for (size_t il = 0; il < d.layers.size(); ++il) {
    LayerWeights& l = d.layers[il];
    if (static_cast<int64_t>(il) < range.first || static_cast<int64_t>(il) >= range.last) {
      l = LayerWeights{};  // another stage's layer: nothing of it is on this device
      continue;
    }
    const std::string p = "blk." + std::to_string(il) + ".";
    // phi3's q/k/v and gate/up are row ranges of attn_qkv and ffn_up: name the file's tensor.
    const bool fused = config.fused_qkv_gate_up;
    NOVASERVE_RETURN_IF_ERROR(
        map_matrix(l.wq, arena, p + (fused ? "attn_qkv.weight (q rows)" : "attn_q.weight")));
    NOVASERVE_RETURN_IF_ERROR(
        map_matrix(l.wk, arena, p + (fused ? "attn_qkv.weight (k rows)" : "attn_k.weight")));
    NOVASERVE_RETURN_IF_ERROR(
        map_matrix(l.wv, arena, p + (fused ? "attn_qkv.weight (v rows)" : "attn_v.weight")));
    NOVASERVE_RETURN_IF_ERROR(map_matrix(l.wo, arena, p + "attn_output.weight"));
    NOVASERVE_RETURN_IF_ERROR(
        map_matrix(l.w_gate, arena, p + (fused ? "ffn_up.weight (gate rows)" : "ffn_gate.weight")));
    NOVASERVE_RETURN_IF_ERROR(
        map_matrix(l.w_up, arena, p + (fused ? "ffn_up.weight (up rows)" : "ffn_up.weight")));
    NOVASERVE_RETURN_IF_ERROR(map_matrix(l.w_down, arena, p + "ffn_down.weight"));
    packer.add(&l.attn_norm, n_embd);
    packer.add(&l.ffn_norm, n_embd);
    packer.add(&l.bq, l.wq.n_out);
    packer.add(&l.bk, l.wk.n_out);
    packer.add(&l.bv, l.wv.n_out);
    packer.add(&l.q_norm, head_dim);
    packer.add(&l.k_norm, head_dim);
  }
  if (!host.rope_freq_factors.empty()) {
    d.rope_freq_factors = host.rope_freq_factors.data();
    packer.add(&d.rope_freq_factors, static_cast<int64_t>(host.rope_freq_factors.size()));
  }
  NOVASERVE_RETURN_IF_ERROR(packer.upload(d.vectors, stream));
  // Spelled out: nvcc's front end does not apply the implicit move into Result here.
  return Result<DeviceWeights>(std::move(d));
}

}  // namespace novaserve::gpu
