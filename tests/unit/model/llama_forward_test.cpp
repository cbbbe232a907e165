// Forward pass of LlamaModel on tiny random models: against a naive double-precision reference
// written from the formulas, and the invariances the engine relies on (prefill == step-by-step
// decode, batch invariance, thread-count invariance).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>

#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"
#include "model/llama_model.h"
#include "quant/dequantize.h"
#include "tiny_model.h"

namespace novaserve {
namespace {

using testing::make_tiny_model;
using testing::TinyFile;
using testing::TinySpec;
using Mat = std::vector<double>;

// Dequantized tensor `name` as doubles (row-major [n_out][n_in] for matrices).
Mat tensor(const GgufFile& f, const std::string& name) {
  const GgufTensorInfo* t = f.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  std::vector<float> v(t->n_elements());
  EXPECT_TRUE(dequantize_row(t->type, f.tensor_data(*t), v.data(), v.size()).ok());
  return Mat(v.begin(), v.end());
}

std::vector<double> matvec(const Mat& w, const std::vector<double>& x, size_t n_out) {
  const size_t n_in = x.size();
  std::vector<double> y(n_out, 0.0);
  for (size_t o = 0; o < n_out; ++o) {
    for (size_t i = 0; i < n_in; ++i) y[o] += w[o * n_in + i] * x[i];
  }
  return y;
}

std::vector<double> rms_norm(const std::vector<double>& x, const Mat& w, double eps) {
  double ss = 0.0;
  for (double v : x) ss += v * v;
  const double r = 1.0 / std::sqrt(ss / x.size() + eps);
  std::vector<double> y(x.size());
  for (size_t i = 0; i < x.size(); ++i) y[i] = x[i] * r * w[i];
  return y;
}

// RoPE with optional per-frequency divisors and a cos/sin multiplier (LongRoPE).
void rope(std::vector<double>& x, int64_t n_heads, int64_t hd, int64_t pos, double base, bool neox,
          const Mat& divisors = {}, double mscale = 1.0) {
  for (int64_t h = 0; h < n_heads; ++h) {
    for (int64_t i = 0; i < hd / 2; ++i) {
      double theta = pos * std::pow(base, -2.0 * i / hd);
      if (!divisors.empty()) theta /= divisors[i];
      const double c = std::cos(theta) * mscale, sn = std::sin(theta) * mscale;
      const int64_t a = h * hd + (neox ? i : 2 * i);
      const int64_t b = neox ? a + hd / 2 : a + 1;
      const double x0 = x[a], x1 = x[b];
      x[a] = x0 * c - x1 * sn;
      x[b] = x0 * sn + x1 * c;
    }
  }
}

// Rows [first, first + n) of a row-major matrix with n_in columns.
Mat rows(const Mat& w, int64_t first, int64_t n, int64_t n_in) {
  return Mat(w.begin() + first * n_in, w.begin() + (first + n) * n_in);
}

// Every head_dim slice of x normalised with w (qwen3's q/k norm).
void head_norm(std::vector<double>& x, int64_t hd, const Mat& w, double eps) {
  for (size_t h0 = 0; h0 < x.size(); h0 += hd) {
    std::vector<double> head(x.begin() + h0, x.begin() + h0 + hd);
    head = rms_norm(head, w, eps);
    std::copy(head.begin(), head.end(), x.begin() + h0);
  }
}

// Logits of every position of `tokens`, straight from the Llama formulas in double precision.
std::vector<std::vector<double>> reference_logits(const GgufFile& f, const TinySpec& s,
                                                  const std::vector<int32_t>& tokens) {
  const int64_t hd = s.n_embd / s.n_head, qd = s.n_head * hd, kvd = s.n_head_kv * hd;
  const bool neox = s.arch != "llama";
  const bool phi3 = s.arch == "phi3";
  const double eps = 1e-5;
  const Mat divisors = s.longrope ? tensor(f, "rope_factors_short.weight") : Mat{};
  const double mscale = s.longrope ? s.longrope_attn_factor : 1.0;
  const Mat embd = tensor(f, "token_embd.weight");
  std::vector<std::vector<double>> x;
  for (int32_t t : tokens)
    x.emplace_back(embd.begin() + t * s.n_embd, embd.begin() + (t + 1) * s.n_embd);
  const size_t n = tokens.size();
  for (int64_t il = 0; il < s.n_layer; ++il) {
    const std::string p = "blk." + std::to_string(il) + ".";
    std::vector<std::vector<double>> q(n), k(n), v(n);
    const Mat qkv = phi3 ? tensor(f, p + "attn_qkv.weight") : Mat{};
    const Mat wq = phi3 ? rows(qkv, 0, qd, s.n_embd) : tensor(f, p + "attn_q.weight");
    const Mat wk = phi3 ? rows(qkv, qd, kvd, s.n_embd) : tensor(f, p + "attn_k.weight");
    const Mat wv = phi3 ? rows(qkv, qd + kvd, kvd, s.n_embd) : tensor(f, p + "attn_v.weight");
    for (size_t t = 0; t < n; ++t) {
      const auto h = rms_norm(x[t], tensor(f, p + "attn_norm.weight"), eps);
      q[t] = matvec(wq, h, qd);
      k[t] = matvec(wk, h, kvd);
      v[t] = matvec(wv, h, kvd);
      if (s.qkv_bias) {
        const Mat bq = tensor(f, p + "attn_q.bias"), bk = tensor(f, p + "attn_k.bias"),
                  bv = tensor(f, p + "attn_v.bias");
        for (int64_t i = 0; i < qd; ++i) q[t][i] += bq[i];
        for (int64_t i = 0; i < kvd; ++i) k[t][i] += bk[i], v[t][i] += bv[i];
      }
      if (s.arch == "qwen3") {
        head_norm(q[t], hd, tensor(f, p + "attn_q_norm.weight"), eps);
        head_norm(k[t], hd, tensor(f, p + "attn_k_norm.weight"), eps);
      }
      rope(q[t], s.n_head, hd, t, s.rope_base, neox, divisors, mscale);
      rope(k[t], s.n_head_kv, hd, t, s.rope_base, neox, divisors, mscale);
    }
    for (size_t t = 0; t < n; ++t) {
      std::vector<double> attn(qd, 0.0);
      for (int64_t h = 0; h < s.n_head; ++h) {
        const int64_t g = h / (s.n_head / s.n_head_kv);
        std::vector<double> sc(t + 1);
        double mx = -1e300, sum = 0.0;
        for (size_t j = 0; j <= t; ++j) {
          double d = 0.0;
          for (int64_t i = 0; i < hd; ++i) d += q[t][h * hd + i] * k[j][g * hd + i];
          sc[j] = d / std::sqrt(static_cast<double>(hd));
          mx = std::max(mx, sc[j]);
        }
        for (size_t j = 0; j <= t; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
        for (size_t j = 0; j <= t; ++j) {
          for (int64_t i = 0; i < hd; ++i) attn[h * hd + i] += sc[j] / sum * v[j][g * hd + i];
        }
      }
      const auto o = matvec(tensor(f, p + "attn_output.weight"), attn, s.n_embd);
      for (int64_t i = 0; i < s.n_embd; ++i) x[t][i] += o[i];
      const auto h = rms_norm(x[t], tensor(f, p + "ffn_norm.weight"), eps);
      const Mat gate_up = phi3 ? tensor(f, p + "ffn_up.weight") : Mat{};
      const auto g = matvec(
          phi3 ? rows(gate_up, 0, s.n_ff, s.n_embd) : tensor(f, p + "ffn_gate.weight"), h, s.n_ff);
      const auto u =
          matvec(phi3 ? rows(gate_up, s.n_ff, s.n_ff, s.n_embd) : tensor(f, p + "ffn_up.weight"), h,
                 s.n_ff);
      std::vector<double> a(s.n_ff);
      for (int64_t i = 0; i < s.n_ff; ++i) a[i] = g[i] / (1.0 + std::exp(-g[i])) * u[i];
      const auto d = matvec(tensor(f, p + "ffn_down.weight"), a, s.n_embd);
      for (int64_t i = 0; i < s.n_embd; ++i) x[t][i] += d[i];
    }
  }
  const Mat head = tensor(f, s.tied ? "token_embd.weight" : "output.weight");
  std::vector<std::vector<double>> logits;
  for (size_t t = 0; t < n; ++t) {
    logits.push_back(matvec(head, rms_norm(x[t], tensor(f, "output_norm.weight"), eps), s.n_vocab));
  }
  return logits;
}

struct Loaded {
  TinyFile file;
  std::unique_ptr<LlamaModel> model;
};

Loaded load(const TinySpec& s, int threads = 2) {
  Loaded l{make_tiny_model(s), nullptr};
  auto m = LlamaModel::create(l.file.file, std::make_unique<CpuBackend>(threads));
  EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
  if (m.ok()) l.model = std::move(m.value());
  return l;
}

// Runs `tokens` as one prefill and returns every position's logits.
std::vector<std::vector<float>> prefill(LlamaModel& m, const std::vector<int32_t>& tokens,
                                        ActQuant mode) {
  auto kv = SequenceKvCache::create(m.config(), 32);
  EXPECT_TRUE(kv.ok());
  ForwardSeq seq{tokens, 0, kv->view(), true};
  EXPECT_TRUE(m.forward({&seq, 1}, mode).ok());
  std::vector<std::vector<float>> out;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const float* l = m.logits(0, static_cast<int32_t>(t));
    out.emplace_back(l, l + m.config().n_vocab);
  }
  return out;
}

double relative_error(const std::vector<std::vector<float>>& ours,
                      const std::vector<std::vector<double>>& ref) {
  double err = 0.0, scale = 0.0;
  for (size_t t = 0; t < ref.size(); ++t) {
    for (size_t i = 0; i < ref[t].size(); ++i) {
      err = std::max(err, std::fabs(ours[t][i] - ref[t][i]));
      scale = std::max(scale, std::fabs(ref[t][i]));
    }
  }
  return err / scale;
}

const std::vector<int32_t> kTokens = {3, 17, 25, 0, 39, 8, 8, 12, 30};

TEST(LlamaForwardTest, ExactModeMatchesNaiveReferenceLlama) {
  TinySpec s;
  auto l = load(s);
  ASSERT_TRUE(l.model);
  const auto ref = reference_logits(*l.file.file, s, kTokens);
  EXPECT_LT(relative_error(prefill(*l.model, kTokens, ActQuant::kNone), ref), 1e-5);
  // 8-bit activations: same computation with a quantization error of about 1%.
  EXPECT_LT(relative_error(prefill(*l.model, kTokens, ActQuant::kQ8), ref), 5e-2);
}

TEST(LlamaForwardTest, ExactModeMatchesNaiveReferenceQwen2) {
  TinySpec s;
  s.arch = "qwen2";  // NeoX rope, QKV bias, separate output head
  s.qkv_bias = true;
  s.tied = false;
  s.matrix_type = GgmlType::kQ4_1;
  s.embd_type = GgmlType::kF16;
  s.rope_base = 1000.0f;
  auto l = load(s);
  ASSERT_TRUE(l.model);
  const auto ref = reference_logits(*l.file.file, s, kTokens);
  EXPECT_LT(relative_error(prefill(*l.model, kTokens, ActQuant::kNone), ref), 1e-5);
}

TEST(LlamaForwardTest, ExactModeMatchesNaiveReferenceQwen3) {
  TinySpec s;
  s.arch = "qwen3";  // NeoX rope, per-head q/k RMSNorm, no biases
  s.matrix_type = GgmlType::kQ8_0;
  auto l = load(s);
  ASSERT_TRUE(l.model);
  EXPECT_TRUE(l.model->config().qk_norm);
  const auto ref = reference_logits(*l.file.file, s, kTokens);
  EXPECT_LT(relative_error(prefill(*l.model, kTokens, ActQuant::kNone), ref), 1e-5);
}

TEST(LlamaForwardTest, ExactModeMatchesNaiveReferencePhi3WithLongRope) {
  TinySpec s;
  s.arch = "phi3";  // fused attn_qkv and gate+up tensors, NeoX rope
  s.tied = false;
  s.matrix_type = GgmlType::kQ4_0;
  s.longrope = true;
  s.longrope_attn_factor = 1.19f;
  auto l = load(s);
  ASSERT_TRUE(l.model);
  EXPECT_EQ(l.model->config().rope_scaling.type, RopeScalingType::kLongRope);
  // Only the short factors are implemented: the context stops at the original length.
  EXPECT_EQ(l.model->config().n_ctx_train, s.longrope_original_context);
  const auto ref = reference_logits(*l.file.file, s, kTokens);
  EXPECT_LT(relative_error(prefill(*l.model, kTokens, ActQuant::kNone), ref), 1e-5);
}

// A pipeline stage runs layers [0, 1), hands its hidden state to a second model that runs
// [1, 2): the logits equal one model's whole forward bit for bit.
TEST(LlamaForwardTest, LayerRangesHandOnTheHiddenStateBitForBit) {
  for (const char* arch : {"llama", "phi3"}) {
    SCOPED_TRACE(arch);
    TinySpec s;
    s.arch = arch;
    auto whole = load(s);
    auto first = load(s);
    auto second = load(s);
    ASSERT_TRUE(whole.model && first.model && second.model);
    auto kv_whole = SequenceKvCache::create(whole.model->config(), 32);
    auto kv_first = SequenceKvCache::create(first.model->config(), 32);
    auto kv_second = SequenceKvCache::create(second.model->config(), 32);
    ASSERT_TRUE(kv_whole.ok() && kv_first.ok() && kv_second.ok());
    ForwardSeq seq{kTokens, 0, kv_whole->view(), true};
    ASSERT_TRUE(whole.model->forward({&seq, 1}, ActQuant::kNone).ok());
    seq.kv = kv_first->view();
    ASSERT_TRUE(first.model->forward_layers({&seq, 1}, {0, 1}, ActQuant::kNone).ok());
    const std::vector<float> hidden(first.model->hidden().begin(), first.model->hidden().end());
    EXPECT_EQ(hidden.size(), kTokens.size() * s.n_embd);
    ASSERT_TRUE(second.model->set_hidden(hidden).ok());
    seq.kv = kv_second->view();
    ASSERT_TRUE(second.model->forward_layers({&seq, 1}, {1, 2}, ActQuant::kNone).ok());
    for (size_t t = 0; t < kTokens.size(); ++t) {
      const float* a = whole.model->logits(0, static_cast<int32_t>(t));
      const float* b = second.model->logits(0, static_cast<int32_t>(t));
      EXPECT_EQ(std::memcmp(a, b, s.n_vocab * sizeof(float)), 0) << "position " << t;
    }
    EXPECT_FALSE(first.model->forward_layers({&seq, 1}, {1, 1}, ActQuant::kNone).ok());
    EXPECT_FALSE(first.model->forward_layers({&seq, 1}, {0, 3}, ActQuant::kNone).ok());
    // A hidden state that is not whole rows, or not this step's rows, is refused.
    EXPECT_FALSE(second.model->set_hidden({hidden.data(), hidden.size() - 1}).ok());
    EXPECT_FALSE(second.model->set_hidden({}).ok());
    ASSERT_TRUE(second.model->set_hidden({hidden.data(), static_cast<size_t>(s.n_embd)}).ok());
    const auto st = second.model->forward_layers({&seq, 1}, {1, 2}, ActQuant::kNone);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(st.error().message.find("hidden state of 1 rows"), std::string::npos)
        << st.error().message;
  }
}

TEST(LlamaForwardTest, MultiQueryAttentionMatchesReference) {
  TinySpec s;
  s.n_head_kv = 1;  // every query head shares one KV head
  auto l = load(s);
  ASSERT_TRUE(l.model);
  const auto ref = reference_logits(*l.file.file, s, kTokens);
  EXPECT_LT(relative_error(prefill(*l.model, kTokens, ActQuant::kNone), ref), 1e-5);
}

// Prefill in one step and token-by-token decode compute each row with the same operations, so
// the logits are bit-identical.
TEST(LlamaForwardTest, StepByStepDecodeEqualsPrefillBitForBit) {
  TinySpec s;
  auto l = load(s);
  ASSERT_TRUE(l.model);
  for (ActQuant mode : {ActQuant::kNone, ActQuant::kQ8}) {
    const auto full = prefill(*l.model, kTokens, mode);
    auto kv = SequenceKvCache::create(l.model->config(), 32);
    ASSERT_TRUE(kv.ok());
    // Chunks of 4, 1, then the rest.
    const size_t cuts[] = {0, 4, 5, kTokens.size()};
    for (int c = 0; c < 3; ++c) {
      ForwardSeq seq{{kTokens.data() + cuts[c], cuts[c + 1] - cuts[c]},
                     static_cast<int32_t>(kv->size()),
                     kv->view(),
                     true};
      ASSERT_TRUE(l.model->forward({&seq, 1}, mode).ok());
      ASSERT_TRUE(kv->advance(cuts[c + 1] - cuts[c]).ok());
      for (size_t t = cuts[c]; t < cuts[c + 1]; ++t) {
        const float* got = l.model->logits(0, static_cast<int32_t>(t - cuts[c]));
        EXPECT_EQ(0, std::memcmp(got, full[t].data(), full[t].size() * sizeof(float)))
            << "position " << t;
      }
    }
  }
}

TEST(LlamaForwardTest, BatchInvariantAcrossSequencesAndThreads) {
  TinySpec s;
  auto two = load(s, 2);
  auto one = load(s, 1);
  ASSERT_TRUE(two.model && one.model);
  const std::vector<int32_t> a = {5, 9, 1, 33, 2};
  const std::vector<int32_t> b = {7, 7, 21};
  const std::vector<int32_t> c = {38};
  for (ActQuant mode : {ActQuant::kNone, ActQuant::kQ8}) {
    // A alone, single-threaded.
    auto kv_alone = SequenceKvCache::create(one.model->config(), 16);
    ForwardSeq alone{a, 0, kv_alone->view(), true};
    ASSERT_TRUE(one.model->forward({&alone, 1}, mode).ok());
    std::vector<float> a_logits(one.model->logits(0, 0), one.model->logits(0, 0) + 5 * s.n_vocab);
    int32_t next = 11;
    ASSERT_TRUE(kv_alone->advance(5).ok());
    ForwardSeq alone_step{{&next, 1}, 5, kv_alone->view(), false};
    ASSERT_TRUE(one.model->forward({&alone_step, 1}, mode).ok());
    std::vector<float> a_step(one.model->logits(0), one.model->logits(0) + s.n_vocab);

    // B, A, C together on two threads: A's rows sit in the middle of the batch.
    auto kv_a = SequenceKvCache::create(two.model->config(), 16);
    auto kv_b = SequenceKvCache::create(two.model->config(), 16);
    auto kv_c = SequenceKvCache::create(two.model->config(), 16);
    ForwardSeq batch[] = {
        {b, 0, kv_b->view(), false}, {a, 0, kv_a->view(), true}, {c, 0, kv_c->view(), true}};
    ASSERT_TRUE(two.model->forward(batch, mode).ok());
    EXPECT_EQ(
        0, std::memcmp(two.model->logits(1, 0), a_logits.data(), a_logits.size() * sizeof(float)));
    // Decode step of A batched with a 3-token chunk of B at another position.
    ASSERT_TRUE(kv_a->advance(5).ok());
    ASSERT_TRUE(kv_b->advance(3).ok());
    const std::vector<int32_t> b_more = {1, 2, 3};
    ForwardSeq step[] = {{b_more, 3, kv_b->view(), false}, {{&next, 1}, 5, kv_a->view(), false}};
    ASSERT_TRUE(two.model->forward(step, mode).ok());
    EXPECT_EQ(0, std::memcmp(two.model->logits(1), a_step.data(), a_step.size() * sizeof(float)));
  }
}

TEST(LlamaForwardTest, RejectsBadInputWithoutComputing) {
  TinySpec s;
  auto l = load(s);
  ASSERT_TRUE(l.model);
  auto kv = SequenceKvCache::create(l.model->config(), 16);  // one block of 16 positions
  const std::vector<int32_t> bad_id = {1, 40};
  ForwardSeq seq{bad_id, 0, kv->view(), false};
  auto st = l.model->forward({&seq, 1}, ActQuant::kNone);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(st.error().message.find("token id 40"), std::string::npos);

  const std::vector<int32_t> seventeen(17, 1);
  ForwardSeq too_long{seventeen, 0, kv->view(), false};
  EXPECT_FALSE(l.model->forward({&too_long, 1}, ActQuant::kNone).ok());

  ForwardSeq empty{{}, 0, kv->view(), false};
  EXPECT_FALSE(l.model->forward({&empty, 1}, ActQuant::kNone).ok());

  const std::vector<int32_t> one = {1};
  ForwardSeq negative{one, -1, kv->view(), false};
  EXPECT_FALSE(l.model->forward({&negative, 1}, ActQuant::kNone).ok());
}

}  // namespace
}  // namespace novaserve
