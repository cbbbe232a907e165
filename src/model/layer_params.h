// The RoPE and attention parameters of a model's layers, derived from its config; shared by the
// CPU and GPU runners so both rotate and scale identically.
#pragma once

#include <cmath>

#include "backend/op_params.h"
#include "model/model_config.h"

namespace novaserve {

/// RoPE of `c` (linear scaling as freq_scale = 1/factor; llama3 and longrope scaling through
/// `freq_factors`, n_rot/2 divisors or null, in the memory the kernels read; longrope's
/// attention factor).
inline RopeParams rope_params(const ModelConfig& c, const float* freq_factors) {
  RopeParams r;
  r.n_rot = static_cast<int32_t>(c.n_rot);
  r.freq_base = c.rope_freq_base;
  r.freq_scale =
      c.rope_scaling.type == RopeScalingType::kLinear ? 1.0f / c.rope_scaling.factor : 1.0f;
  r.freq_factors = freq_factors;
  r.ordering = c.rope_ordering;
  r.attn_factor =
      c.rope_scaling.type == RopeScalingType::kLongRope ? c.rope_scaling.attn_factor : 1.0f;
  return r;
}

/// Attention geometry of `c`, scale 1/sqrt(head_dim) (Vaswani et al. 2017).
inline AttentionShape attention_shape(const ModelConfig& c) {
  AttentionShape s;
  s.n_head = static_cast<int32_t>(c.n_head);
  s.n_head_kv = static_cast<int32_t>(c.n_head_kv);
  s.head_dim = static_cast<int32_t>(c.head_dim);
  s.scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(c.head_dim)));
  return s;
}

}  // namespace novaserve
