// Malformed qwen3 and phi3 GGUFs: every one is refused with an error that names what is wrong
// (never a crash), and the odd-but-valid ones (an odd head_dim under qwen3's q/k norms, a tied
// phi3 head) load and run.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"
#include "model/llama_model.h"
#include "tiny_model.h"

namespace novaserve {
namespace {

using testing::add_tiny_metadata;
using testing::add_tiny_tensors;
using testing::parse_writer;
using testing::TinySpec;

// A tiny `s` written with its metadata, `extra` applied, then every tensor but `skip`, then
// `more` applied (for replacements of the skipped tensor).
GgufWriter writer_of(const TinySpec& s, const std::string& skip,
                     const std::function<void(GgufWriter&)>& extra,
                     const std::function<void(GgufWriter&)>& more) {
  GgufWriter w;
  add_tiny_metadata(w, s);
  if (extra) extra(w);
  add_tiny_tensors(w, s, skip);
  if (more) more(w);
  return w;
}

// Creates a CPU model from `w` and, when that works, runs one 3-token prefill; the first error.
Status load_and_run(const GgufWriter& w) {
  auto t = parse_writer(w);
  if (!t.file) return Err(ErrorCode::kInternal, "the test's GGUF does not parse");
  auto m = LlamaModel::create(t.file, std::make_unique<CpuBackend>(1));
  if (!m.ok()) return m.error();
  LlamaModel& model = **m;
  auto kv = SequenceKvCache::create(model.config(), 16);
  if (!kv.ok()) return kv.error();
  const std::vector<int32_t> tokens = {1, 5, 7};
  ForwardSeq seq{tokens, 0, kv->view(), true};
  NOVASERVE_RETURN_IF_ERROR(model.forward({&seq, 1}, ActQuant::kNone));
  for (int32_t i = 0; i < 3; ++i) {
    const float* l = model.logits(0, i);
    for (int64_t v = 0; v < model.config().n_vocab; ++v) {
      if (!std::isfinite(l[v])) return Err(ErrorCode::kInternal, "non-finite logit");
    }
  }
  return {};
}

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * sizeof(float));
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

void add_f32(GgufWriter& w, const std::string& name, const std::vector<float>& v) {
  ASSERT_TRUE(w.add_tensor(name, GgmlType::kF32, {v.size()}, f32_bytes(v)).ok()) << name;
}

void add_q8_matrix(GgufWriter& w, const std::string& name, int64_t n_in, int64_t n_out) {
  const std::vector<float> m(static_cast<size_t>(n_in * n_out), 0.1f);
  ASSERT_TRUE(w.add_tensor(name, GgmlType::kQ8_0,
                           {static_cast<uint64_t>(n_in), static_cast<uint64_t>(n_out)},
                           testing::quantize_matrix(GgmlType::kQ8_0, m, n_out, n_in))
                  .ok())
      << name;
}

// Expects `st` to fail with `code` and a message containing every one of `parts`.
void expect_error(const Status& st, ErrorCode code, const std::vector<std::string>& parts) {
  ASSERT_FALSE(st.ok()) << "expected an error mentioning " << parts[0];
  EXPECT_EQ(st.error().code, code) << st.error().message;
  for (const auto& p : parts) {
    EXPECT_NE(st.error().message.find(p), std::string::npos) << st.error().message;
  }
}

TinySpec phi3() {
  TinySpec s;
  s.arch = "phi3";
  s.tied = false;
  return s;
}

TinySpec qwen3() {
  TinySpec s;
  s.arch = "qwen3";
  return s;
}

TEST(ArchBadInputTest, WellFormedTinyModelsRun) {
  EXPECT_TRUE(load_and_run(writer_of(phi3(), "", nullptr, nullptr)).ok());
  EXPECT_TRUE(load_and_run(writer_of(qwen3(), "", nullptr, nullptr)).ok());
  TinySpec tied = phi3();  // Phi-4-mini ties its head to the embedding
  tied.tied = true;
  EXPECT_TRUE(load_and_run(writer_of(tied, "", nullptr, nullptr)).ok());
}

TEST(ArchBadInputTest, Phi3FusedQkvOfTheWrongShapeIsNamed) {
  // q_dim + kv_dim rows (64 + 32) instead of q_dim + 2 * kv_dim (128).
  const auto st =
      load_and_run(writer_of(phi3(), "blk.1.attn_qkv.weight", nullptr, [](GgufWriter& w) {
        add_q8_matrix(w, "blk.1.attn_qkv.weight", 64, 96);
      }));
  expect_error(st, ErrorCode::kInvalidInput, {"blk.1.attn_qkv.weight", "[64, 96]", "[64, 128]"});
}

TEST(ArchBadInputTest, Phi3WithSeparateProjectionsNamesTheFusedTensor) {
  // A llama-style file relabelled phi3: attn_q/k/v and ffn_gate/up but no attn_qkv.
  TinySpec llama;
  llama.tied = false;
  GgufWriter w;
  TinySpec meta = llama;
  meta.arch = "phi3";
  add_tiny_metadata(w, meta);
  add_tiny_tensors(w, llama);
  expect_error(load_and_run(w), ErrorCode::kNotFound, {"blk.0.attn_qkv.weight"});
}

TEST(ArchBadInputTest, Phi3FusedGateUpOfTheWrongShapeIsNamed) {
  // n_ff rows instead of 2 * n_ff.
  const auto st = load_and_run(writer_of(phi3(), "blk.0.ffn_up.weight", nullptr, [](GgufWriter& w) {
    add_q8_matrix(w, "blk.0.ffn_up.weight", 64, 96);
  }));
  expect_error(st, ErrorCode::kInvalidInput, {"blk.0.ffn_up.weight", "[64, 192]"});
}

TEST(ArchBadInputTest, Qwen3MissingOrMisshapenHeadNormsAreNamed) {
  expect_error(load_and_run(writer_of(qwen3(), "blk.1.attn_q_norm.weight", nullptr, nullptr)),
               ErrorCode::kNotFound, {"blk.1.attn_q_norm.weight"});
  expect_error(load_and_run(writer_of(qwen3(), "blk.0.attn_k_norm.weight", nullptr, nullptr)),
               ErrorCode::kNotFound, {"blk.0.attn_k_norm.weight"});
  // n_embd values instead of head_dim (16).
  const auto wide =
      load_and_run(writer_of(qwen3(), "blk.0.attn_q_norm.weight", nullptr, [](GgufWriter& w) {
        add_f32(w, "blk.0.attn_q_norm.weight", std::vector<float>(64, 1.0f));
      }));
  expect_error(wide, ErrorCode::kInvalidInput, {"blk.0.attn_q_norm.weight", "[64]", "[16]"});
  std::vector<float> nan_norm(16, 1.0f);
  nan_norm[5] = std::numeric_limits<float>::quiet_NaN();
  const auto nan =
      load_and_run(writer_of(qwen3(), "blk.0.attn_k_norm.weight", nullptr, [&](GgufWriter& w) {
        add_f32(w, "blk.0.attn_k_norm.weight", nan_norm);
      }));
  expect_error(nan, ErrorCode::kInvalidInput, {"blk.0.attn_k_norm.weight", "non-finite"});
}

TEST(ArchBadInputTest, Qwen3WithAnOddHeadDimLoadsAndRuns) {
  // head_dim 17 (key_length) with 16 rotated dimensions: 32 query heads (q_dim 544, a multiple
  // of the matmul's 32-value blocks, as attn_output's n_in must be) and 2 KV heads (kv_dim 34).
  TinySpec s = qwen3();
  s.n_head = 32;
  s.n_head_kv = 2;
  GgufWriter w;
  add_tiny_metadata(w, s);
  w.add("qwen3.attention.key_length", gguf_u32(17));
  w.add("qwen3.attention.value_length", gguf_u32(17));
  w.add("qwen3.rope.dimension_count", gguf_u32(16));
  const int64_t q_dim = 32 * 17, kv_dim = 2 * 17;
  add_q8_matrix(w, "token_embd.weight", 64, s.n_vocab);
  add_f32(w, "output_norm.weight", std::vector<float>(64, 1.0f));
  for (int il = 0; il < 2; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    add_f32(w, p + "attn_norm.weight", std::vector<float>(64, 1.0f));
    add_q8_matrix(w, p + "attn_q.weight", 64, q_dim);
    add_q8_matrix(w, p + "attn_k.weight", 64, kv_dim);
    add_q8_matrix(w, p + "attn_v.weight", 64, kv_dim);
    add_f32(w, p + "attn_q_norm.weight", std::vector<float>(17, 1.1f));
    add_f32(w, p + "attn_k_norm.weight", std::vector<float>(17, 0.9f));
    add_q8_matrix(w, p + "attn_output.weight", q_dim, 64);
    add_f32(w, p + "ffn_norm.weight", std::vector<float>(64, 1.0f));
    add_q8_matrix(w, p + "ffn_gate.weight", 64, 96);
    add_q8_matrix(w, p + "ffn_up.weight", 64, 96);
    add_q8_matrix(w, p + "ffn_down.weight", 96, 64);
  }
  const Status st = load_and_run(w);
  EXPECT_TRUE(st.ok()) << st.error().message;

  // Without rope.dimension_count, RoPE would rotate all 17: refused at the config.
  GgufWriter odd;
  add_tiny_metadata(odd, qwen3());
  odd.add("qwen3.attention.key_length", gguf_u32(17));
  add_tiny_tensors(odd, qwen3());
  expect_error(load_and_run(odd), ErrorCode::kInvalidInput, {"rope.dimension_count", "even"});
}

// phi3 with LongRoPE factor tensors `short_f` and `long_f` (null: not written).
// A phi3 file with LongRoPE factor tensors and (unless `original_context` is 0) the required
// original context key; `extra` adds further keys.
GgufWriter phi3_longrope(const std::vector<float>* short_f, const std::vector<float>* long_f,
                         const std::function<void(GgufWriter&)>& extra = nullptr,
                         uint32_t original_context = 32) {
  const auto keys = [&](GgufWriter& w) {
    if (original_context > 0) {
      w.add("phi3.rope.scaling.original_context_length", gguf_u32(original_context));
    }
    if (extra) extra(w);
  };
  return writer_of(phi3(), "", keys, [&](GgufWriter& w) {
    if (short_f != nullptr) add_f32(w, "rope_factors_short.weight", *short_f);
    if (long_f != nullptr) add_f32(w, "rope_factors_long.weight", *long_f);
  });
}

TEST(ArchBadInputTest, LongRopeFactorsMustBeFinitePositiveAndOfHalfTheRotatedDims) {
  const std::vector<float> good(8, 1.5f);
  EXPECT_TRUE(load_and_run(phi3_longrope(&good, &good)).ok());
  for (float bad : {std::numeric_limits<float>::infinity(), std::numeric_limits<float>::quiet_NaN(),
                    0.0f, -2.0f}) {
    SCOPED_TRACE(bad);
    std::vector<float> f = good;
    f[3] = bad;
    const Status st = load_and_run(phi3_longrope(&f, &good));
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput) << st.error().message;
  }
  const std::vector<float> short_list(7, 1.5f);
  expect_error(load_and_run(phi3_longrope(&short_list, &good)), ErrorCode::kInvalidInput,
               {"rope_factors_short.weight", "[7]", "[8]"});
}

TEST(ArchBadInputTest, LongRopeWithoutItsTensorsOrOnAnotherArchIsRefused) {
  const auto typed = [](GgufWriter& w) {
    w.add("phi3.rope.scaling.type", gguf_string("longrope"));
  };
  expect_error(load_and_run(phi3_longrope(nullptr, nullptr, typed)), ErrorCode::kNotFound,
               {"LongRoPE", "rope_factors_short.weight"});
  const std::vector<float> good(8, 1.5f);
  // Only the long factors: still no short ones to run with.
  expect_error(load_and_run(phi3_longrope(nullptr, &good, typed)), ErrorCode::kNotFound,
               {"rope_factors_short.weight"});

  TinySpec llama;
  GgufWriter w = writer_of(
      llama, "", [](GgufWriter& gw) { gw.add("llama.rope.scaling.type", gguf_string("longrope")); },
      [&](GgufWriter& gw) { add_f32(gw, "rope_factors_short.weight", good); });
  expect_error(load_and_run(w), ErrorCode::kUnsupported, {"phi3"});
}

TEST(ArchBadInputTest, LongRopeKeysOutOfRangeAreNamed) {
  const std::vector<float> good(8, 1.5f);
  for (float attn : {std::numeric_limits<float>::quiet_NaN(),
                     std::numeric_limits<float>::infinity(), 0.0f, -1.0f}) {
    SCOPED_TRACE(attn);
    const auto key = [attn](GgufWriter& w) {
      w.add("phi3.rope.scaling.attn_factor", gguf_f32(attn));
    };
    expect_error(load_and_run(phi3_longrope(&good, &good, key)), ErrorCode::kInvalidInput,
                 {"phi3.rope.scaling.attn_factor"});
  }
  const auto zero_ctx = [](GgufWriter& w) {
    w.add("phi3.rope.scaling.original_context_length", gguf_u32(0));
  };
  expect_error(load_and_run(phi3_longrope(&good, &good, zero_ctx, 0)), ErrorCode::kInvalidInput,
               {"phi3.rope.scaling.original_context_length"});
  expect_error(load_and_run(phi3_longrope(&good, &good, nullptr, 0)), ErrorCode::kNotFound,
               {"phi3.rope.scaling.original_context_length"});
}

}  // namespace
}  // namespace novaserve
