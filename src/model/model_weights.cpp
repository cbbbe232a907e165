#include "model/model_weights.h"

#include <cmath>
#include <string>

#include "backend/cpu/matmul.h"
#include "quant/dequantize.h"

namespace novaserve {

namespace {

std::string shape_str(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Checks that `t` has exactly the logical shape `want` (trailing 1s allowed).
Status check_shape(const GgufTensorInfo& t, const std::vector<uint64_t>& want) {
  bool ok = t.dims.size() >= want.size();
  for (size_t i = 0; ok && i < t.dims.size(); ++i) {
    ok = t.dims[i] == (i < want.size() ? want[i] : 1);
  }
  if (ok) return {};
  return Err(ErrorCode::kInvalidInput, "tensor '" + t.name + "' has shape " + shape_str(t.dims) +
                                           ", expected " + shape_str(want));
}

Result<const GgufTensorInfo*> find(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  if (t == nullptr) return Err(ErrorCode::kNotFound, "missing tensor '" + name + "'");
  return t;
}

// A matrix [n_out x n_in] (GGUF dims {n_in, n_out}). `embedding` allows every dequantizable type
// (rows are gathered, not multiplied) unless it doubles as the output head.
Result<WeightMatrix> load_matrix(const GgufFile& f, const std::string& name, int64_t n_in,
                                 int64_t n_out, bool for_matmul) {
  auto t = find(f, name);
  if (!t.ok()) return t.error();
  const GgufTensorInfo& info = **t;
  NOVASERVE_RETURN_IF_ERROR(
      check_shape(info, {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)}));
  const auto traits = ggml_type_traits(info.type);
  if (for_matmul) {
    // matmul_check says why: the type, or an n_in that is not a multiple of its blocks.
    const Status st = matmul_check(info.type, n_in);
    if (!st.ok()) {
      return Err(st.error().code, "tensor '" + name + "' (type " + std::string(traits.name) +
                                      ", shape " + shape_str(info.dims) +
                                      "): " + st.error().message);
    }
  } else if (dequantize_blocks_fn(info.type) == nullptr) {
    return Err(ErrorCode::kUnsupported, "tensor '" + name + "' has type " +
                                            std::string(traits.name) +
                                            ", which the embedding lookup does not support");
  }
  const auto row_bytes = ggml_row_bytes(info.type, static_cast<uint64_t>(n_in));
  if (!row_bytes || *row_bytes * static_cast<uint64_t>(n_out) != info.nbytes) {
    return Err(ErrorCode::kInvalidInput, "tensor '" + name + "' of type " +
                                             std::string(traits.name) + " and shape " +
                                             shape_str(info.dims) + " has an invalid row size");
  }
  return WeightMatrix{f.tensor_data(info), info.type, n_in, n_out};
}

// Rows [first, first + n) of `m`: a view of the same bytes (a fused tensor's part).
WeightMatrix row_range(const WeightMatrix& m, int64_t first, int64_t n) {
  const size_t row_bytes = *ggml_row_bytes(m.type, static_cast<uint64_t>(m.n_in));
  return WeightMatrix{static_cast<const uint8_t*>(m.data) + static_cast<size_t>(first) * row_bytes,
                      m.type, m.n_in, n};
}

}  // namespace

Result<ModelWeights> ModelWeights::from_gguf(const GgufFile& f, const ModelConfig& c) {
  ModelWeights w;
  // Dequantizes a 1-D tensor of n values into an owned f32 buffer.
  auto vector = [&](const std::string& name, int64_t n) -> Result<const float*> {
    auto t = find(f, name);
    if (!t.ok()) return t.error();
    const GgufTensorInfo& info = **t;
    NOVASERVE_RETURN_IF_ERROR(check_shape(info, {static_cast<uint64_t>(n)}));
    if (info.type != GgmlType::kF32 && info.type != GgmlType::kF16 &&
        info.type != GgmlType::kBF16) {
      return Err(ErrorCode::kUnsupported, "tensor '" + name + "' has type " +
                                              std::string(ggml_type_traits(info.type).name) +
                                              ", expected f32/f16/bf16");
    }
    auto buf = std::make_unique<std::vector<float>>(n);
    NOVASERVE_RETURN_IF_ERROR(dequantize_row(info.type, f.tensor_data(info), buf->data(), n));
    for (float x : *buf) {
      if (!std::isfinite(x)) {
        return Err(ErrorCode::kInvalidInput, "tensor '" + name + "' holds a non-finite value");
      }
    }
    w.owned_.push_back(std::move(buf));
    return w.owned_.back()->data();
  };
#define NOVASERVE_ASSIGN(lhs, expr)  \
  do {                               \
    auto r_ = (expr);                \
    if (!r_.ok()) return r_.error(); \
    lhs = *r_;                       \
  } while (0)

  const bool embd_is_head = c.tied_output;
  NOVASERVE_ASSIGN(w.tok_embd,
                   load_matrix(f, "token_embd.weight", c.n_embd, c.n_vocab, embd_is_head));
  if (c.tied_output) {
    w.output = w.tok_embd;
  } else {
    NOVASERVE_ASSIGN(w.output, load_matrix(f, "output.weight", c.n_embd, c.n_vocab, true));
  }
  NOVASERVE_ASSIGN(w.output_norm, vector("output_norm.weight", c.n_embd));

  w.layers.resize(c.n_layer);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    LayerWeights& l = w.layers[il];
    const std::string p = "blk." + std::to_string(il) + ".";
    NOVASERVE_ASSIGN(l.attn_norm, vector(p + "attn_norm.weight", c.n_embd));
    if (c.fused_qkv_gate_up) {
      WeightMatrix qkv;
      NOVASERVE_ASSIGN(
          qkv, load_matrix(f, p + "attn_qkv.weight", c.n_embd, c.q_dim() + 2 * c.kv_dim(), true));
      l.wq = row_range(qkv, 0, c.q_dim());
      l.wk = row_range(qkv, c.q_dim(), c.kv_dim());
      l.wv = row_range(qkv, c.q_dim() + c.kv_dim(), c.kv_dim());
    } else {
      NOVASERVE_ASSIGN(l.wq, load_matrix(f, p + "attn_q.weight", c.n_embd, c.q_dim(), true));
      NOVASERVE_ASSIGN(l.wk, load_matrix(f, p + "attn_k.weight", c.n_embd, c.kv_dim(), true));
      NOVASERVE_ASSIGN(l.wv, load_matrix(f, p + "attn_v.weight", c.n_embd, c.kv_dim(), true));
    }
    NOVASERVE_ASSIGN(l.wo, load_matrix(f, p + "attn_output.weight", c.q_dim(), c.n_embd, true));
    if (c.qk_norm) {
      NOVASERVE_ASSIGN(l.q_norm, vector(p + "attn_q_norm.weight", c.head_dim));
      NOVASERVE_ASSIGN(l.k_norm, vector(p + "attn_k_norm.weight", c.head_dim));
    }
    if (c.qkv_bias) {
      NOVASERVE_ASSIGN(l.bq, vector(p + "attn_q.bias", c.q_dim()));
      NOVASERVE_ASSIGN(l.bk, vector(p + "attn_k.bias", c.kv_dim()));
      NOVASERVE_ASSIGN(l.bv, vector(p + "attn_v.bias", c.kv_dim()));
    }
    NOVASERVE_ASSIGN(l.ffn_norm, vector(p + "ffn_norm.weight", c.n_embd));
    if (c.fused_qkv_gate_up) {
      WeightMatrix gate_up;
      NOVASERVE_ASSIGN(gate_up, load_matrix(f, p + "ffn_up.weight", c.n_embd, 2 * c.n_ff, true));
      l.w_gate = row_range(gate_up, 0, c.n_ff);
      l.w_up = row_range(gate_up, c.n_ff, c.n_ff);
    } else {
      NOVASERVE_ASSIGN(l.w_gate, load_matrix(f, p + "ffn_gate.weight", c.n_embd, c.n_ff, true));
      NOVASERVE_ASSIGN(l.w_up, load_matrix(f, p + "ffn_up.weight", c.n_embd, c.n_ff, true));
    }
    NOVASERVE_ASSIGN(l.w_down, load_matrix(f, p + "ffn_down.weight", c.n_ff, c.n_embd, true));
  }

  const int64_t half = c.n_rot / 2;
  if (c.rope_scaling.type == RopeScalingType::kLongRope) {
    const float* factors = nullptr;
    NOVASERVE_ASSIGN(factors, vector("rope_factors_short.weight", half));
    w.rope_freq_factors.assign(factors, factors + half);
  }
  if (c.rope_scaling.type == RopeScalingType::kLlama3) {
    if (c.rope_scaling.from_tensor) {
      const float* factors = nullptr;
      NOVASERVE_ASSIGN(factors, vector("rope_freqs.weight", half));
      w.rope_freq_factors.assign(factors, factors + half);
    } else {
      w.rope_freq_factors = llama3_rope_freq_factors(c);
    }
  }
  for (float x : w.rope_freq_factors) {
    if (!(x > 0.0f)) return Err(ErrorCode::kInvalidInput, "RoPE frequency factors must be > 0");
  }
#undef NOVASERVE_ASSIGN
  return w;
}

}  // namespace novaserve
