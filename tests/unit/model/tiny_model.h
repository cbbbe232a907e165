// A tiny random Llama-family model built in memory with GgufWriter, for model/forward tests that
// must run without the default model file.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "convert/gguf_writer.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "quant/ggml_type.h"
#include "quant/quantize.h"

namespace novaserve::testing {

struct TinySpec {
  std::string arch = "llama";
  int64_t n_embd = 64;
  int64_t n_layer = 2;
  int64_t n_ff = 96;
  int64_t n_head = 4;
  int64_t n_head_kv = 2;
  int64_t n_vocab = 40;
  int64_t n_ctx = 64;
  float rope_base = 10000.0f;
  GgmlType matrix_type = GgmlType::kQ8_0;  // attention/FFN matrices
  GgmlType embd_type = GgmlType::kQ8_0;
  bool tied = true;
  bool qkv_bias = false;  // write attn_{q,k,v}.bias tensors
  // phi3 only: LongRoPE short/long factor tensors, this attention factor and original context.
  bool longrope = false;
  float longrope_attn_factor = 1.0f;
  int64_t longrope_original_context = 32;
  uint32_t seed = 1;
};

/// Random values in [-scale, scale], deterministic for a seed.
inline std::vector<float> random_floats(size_t n, float scale, std::mt19937& rng) {
  std::uniform_real_distribution<float> dist(-scale, scale);
  std::vector<float> v(n);
  for (auto& x : v) x = dist(rng);
  return v;
}

/// Quantizes a [rows x cols] f32 matrix row by row into `type`.
inline std::vector<uint8_t> quantize_matrix(GgmlType type, const std::vector<float>& m,
                                            int64_t rows, int64_t cols) {
  const uint64_t row_bytes = *ggml_row_bytes(type, cols);
  std::vector<uint8_t> out(row_bytes * rows);
  for (int64_t r = 0; r < rows; ++r) {
    EXPECT_TRUE(quantize_row(type, m.data() + r * cols, out.data() + r * row_bytes, cols).ok());
  }
  return out;
}

/// Metadata of a tiny model (no tensors).
inline void add_tiny_metadata(GgufWriter& w, const TinySpec& s) {
  const std::string a = s.arch;
  w.add("general.architecture", gguf_string(a));
  w.add(a + ".context_length", gguf_u32(static_cast<uint32_t>(s.n_ctx)));
  w.add(a + ".embedding_length", gguf_u32(static_cast<uint32_t>(s.n_embd)));
  w.add(a + ".block_count", gguf_u32(static_cast<uint32_t>(s.n_layer)));
  w.add(a + ".feed_forward_length", gguf_u32(static_cast<uint32_t>(s.n_ff)));
  w.add(a + ".attention.head_count", gguf_u32(static_cast<uint32_t>(s.n_head)));
  w.add(a + ".attention.head_count_kv", gguf_u32(static_cast<uint32_t>(s.n_head_kv)));
  w.add(a + ".attention.layer_norm_rms_epsilon", gguf_f32(1e-5f));
  w.add(a + ".rope.freq_base", gguf_f32(s.rope_base));
  if (s.longrope) {
    w.add(a + ".rope.scaling.attn_factor", gguf_f32(s.longrope_attn_factor));
    w.add(a + ".rope.scaling.original_context_length",
          gguf_u32(static_cast<uint32_t>(s.longrope_original_context)));
  }
}

/// Adds every tensor of a tiny model with random weights, except the one named `skip` (for
/// missing-tensor tests). A tensor the writer rejects is a test failure.
inline void add_tiny_tensors(GgufWriter& w, const TinySpec& s, const std::string& skip = "") {
  std::mt19937 rng(s.seed);
  const int64_t head_dim = s.n_embd / s.n_head;
  const int64_t q_dim = s.n_head * head_dim;
  const int64_t kv_dim = s.n_head_kv * head_dim;
  auto matrix = [&](const std::string& name, GgmlType type, int64_t n_in, int64_t n_out,
                    float scale) {
    if (name == skip) return;
    auto m = random_floats(n_in * n_out, scale, rng);
    EXPECT_TRUE(w.add_tensor(name, type,
                             {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)},
                             quantize_matrix(type, m, n_out, n_in))
                    .ok())
        << name;
  };
  auto vector = [&](const std::string& name, int64_t n, float base, float scale) {
    if (name == skip) return;
    auto v = random_floats(n, scale, rng);
    for (auto& x : v) x += base;
    std::vector<uint8_t> bytes(n * 4);
    std::memcpy(bytes.data(), v.data(), bytes.size());
    EXPECT_TRUE(w.add_tensor(name, GgmlType::kF32, {static_cast<uint64_t>(n)}, bytes).ok()) << name;
  };
  matrix("token_embd.weight", s.embd_type, s.n_embd, s.n_vocab, 1.0f);
  if (!s.tied) matrix("output.weight", s.matrix_type, s.n_embd, s.n_vocab, 0.3f);
  vector("output_norm.weight", s.n_embd, 1.0f, 0.2f);
  const float in_scale = 1.0f / std::sqrt(static_cast<float>(s.n_embd));
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    vector(p + "attn_norm.weight", s.n_embd, 1.0f, 0.2f);
    if (s.arch == "phi3") {  // q, k and v rows in one matrix
      matrix(p + "attn_qkv.weight", s.matrix_type, s.n_embd, q_dim + 2 * kv_dim, 2.0f * in_scale);
    } else {
      matrix(p + "attn_q.weight", s.matrix_type, s.n_embd, q_dim, 2.0f * in_scale);
      matrix(p + "attn_k.weight", s.matrix_type, s.n_embd, kv_dim, 2.0f * in_scale);
      matrix(p + "attn_v.weight", s.matrix_type, s.n_embd, kv_dim, 2.0f * in_scale);
    }
    if (s.arch == "qwen3") {
      vector(p + "attn_q_norm.weight", head_dim, 1.0f, 0.3f);
      vector(p + "attn_k_norm.weight", head_dim, 1.0f, 0.3f);
    }
    if (s.qkv_bias) {
      vector(p + "attn_q.bias", q_dim, 0.0f, 0.5f);
      vector(p + "attn_k.bias", kv_dim, 0.0f, 0.5f);
      vector(p + "attn_v.bias", kv_dim, 0.0f, 0.5f);
    }
    matrix(p + "attn_output.weight", s.matrix_type, q_dim, s.n_embd, in_scale);
    vector(p + "ffn_norm.weight", s.n_embd, 1.0f, 0.2f);
    if (s.arch == "phi3") {  // gate rows, then up rows
      matrix(p + "ffn_up.weight", s.matrix_type, s.n_embd, 2 * s.n_ff, 2.0f * in_scale);
    } else {
      matrix(p + "ffn_gate.weight", s.matrix_type, s.n_embd, s.n_ff, 2.0f * in_scale);
      matrix(p + "ffn_up.weight", s.matrix_type, s.n_embd, s.n_ff, 2.0f * in_scale);
    }
    matrix(p + "ffn_down.weight", s.matrix_type, s.n_ff, s.n_embd,
           1.0f / std::sqrt(static_cast<float>(s.n_ff)));
  }
  if (s.longrope) {  // divisors in [1, 3]
    vector("rope_factors_short.weight", head_dim / 2, 2.0f, 1.0f);
    vector("rope_factors_long.weight", head_dim / 2, 2.0f, 1.0f);
  }
}

/// A parsed in-memory GGUF file together with the bytes it points into.
struct TinyFile {
  std::shared_ptr<std::vector<uint8_t>> bytes;
  std::shared_ptr<const GgufFile> file;
};

/// Serializes `w` and parses it; the GgufFile shares ownership of the bytes through `file`'s
/// deleter, so the pair can be passed around as one shared_ptr.
inline TinyFile parse_writer(const GgufWriter& w) {
  TinyFile t;
  t.bytes = std::make_shared<std::vector<uint8_t>>(w.serialize());
  auto parsed = GgufFile::parse(t.bytes->data(), t.bytes->size());
  EXPECT_TRUE(parsed.ok()) << (parsed.ok() ? "" : parsed.error().message);
  if (!parsed.ok()) return t;
  auto bytes = t.bytes;
  t.file = std::shared_ptr<const GgufFile>(parsed.value().release(),
                                           [bytes](const GgufFile* f) { delete f; });
  return t;
}

/// The whole tiny model as a parsed file.
inline TinyFile make_tiny_model(const TinySpec& s) {
  GgufWriter w;
  add_tiny_metadata(w, s);
  add_tiny_tensors(w, s);
  return parse_writer(w);
}

/// `file` on the CPU backend with 2 threads; null (after a test failure) when it does not load.
inline std::unique_ptr<LlamaModel> load_cpu_model(std::shared_ptr<const GgufFile> file) {
  auto m = LlamaModel::create(std::move(file), std::make_unique<CpuBackend>(2));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  return m.ok() ? std::move(m.value()) : nullptr;
}

/// `n` token ids uniform in [0, n_vocab), deterministic for a seed.
inline std::vector<int32_t> random_token_ids(size_t n, int32_t n_vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> d(0, n_vocab - 1);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = d(rng);
  return t;
}

}  // namespace novaserve::testing
