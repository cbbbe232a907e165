// CpuBackend ops other than matmul, against hand-computed values.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/cpu/vec_f32.h"
#include "quant/dequantize.h"
#include "quant/quantize.h"

namespace novaserve {
namespace {

// Plans a one-sequence step (layer 0) and stores its new K and V rows.
void store(CpuBackend& b, const float* k, const float* v, const AttentionSeq& seq,
           const AttentionShape& shape) {
  const AttentionStep step{&seq, 1, seq.n_new, seq.n_new, shape};
  ASSERT_TRUE(b.plan_attention(step).ok());
  ASSERT_TRUE(b.store_kv(k, v, 0).ok());
}

TEST(CpuOpsTest, RmsNormWithFusedResidualAdd) {
  CpuBackend b(1);
  // Row 0: x = [1, 2] + delta [2, 2] = [3, 4]; mean square 12.5.
  // Row 1: x = [0, 1] + delta [0, 0]; mean square 0.5.
  std::vector<float> x = {1, 2, 0, 1};
  std::vector<float> delta = {2, 2, 0, 0};
  std::vector<float> w = {1, 2};
  std::vector<float> out(4);
  ASSERT_TRUE(b.add_rms_norm(x.data(), delta.data(), w.data(), 2, 2, 0.0f, out.data()).ok());
  EXPECT_FLOAT_EQ(x[0], 3);
  EXPECT_FLOAT_EQ(x[1], 4);
  EXPECT_NEAR(out[0], 3 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(out[1], 2 * 4 / std::sqrt(12.5), 1e-6);
  EXPECT_NEAR(out[2], 0, 1e-6);
  EXPECT_NEAR(out[3], 2 / std::sqrt(0.5), 1e-5);
  // Without delta and with eps: x = [3, 4] -> r = 1/sqrt(12.5 + 0.5).
  ASSERT_TRUE(b.add_rms_norm(x.data(), nullptr, w.data(), 1, 2, 0.5f, out.data()).ok());
  EXPECT_FLOAT_EQ(x[0], 3);
  EXPECT_NEAR(out[0], 3 / std::sqrt(13.0), 1e-6);
}

TEST(CpuOpsTest, AddBias) {
  CpuBackend b(1);
  std::vector<float> x = {1, 2, 3, 4};
  std::vector<float> bias = {10, 20};
  ASSERT_TRUE(b.add_bias(x.data(), bias.data(), 2, 2).ok());
  EXPECT_EQ(x, (std::vector<float>{11, 22, 13, 24}));
}

TEST(CpuOpsTest, RopeNormalOrderingRotatesAdjacentPairs) {
  CpuBackend b(1);
  // head_dim 4, n_rot 4, base 100: theta_0 = pos, theta_1 = pos / 10.
  RopeParams p;
  p.n_rot = 4;
  p.freq_base = 100.0f;
  const int32_t pos[] = {2};
  std::vector<float> table(4);
  ASSERT_TRUE(b.rope_table(pos, 1, p, table.data()).ok());
  EXPECT_NEAR(table[0], std::cos(2.0), 1e-7);
  EXPECT_NEAR(table[1], std::cos(0.2), 1e-7);
  EXPECT_NEAR(table[2], std::sin(2.0), 1e-7);
  EXPECT_NEAR(table[3], std::sin(0.2), 1e-7);
  std::vector<float> x = {1, 0, 0, 1};  // pair (x0, x1) = (1, 0), pair (x2, x3) = (0, 1)
  ASSERT_TRUE(b.rope(x.data(), 1, 1, 4, 4, RopeOrdering::kNormal, table.data()).ok());
  EXPECT_NEAR(x[0], std::cos(2.0), 1e-6);
  EXPECT_NEAR(x[1], std::sin(2.0), 1e-6);
  EXPECT_NEAR(x[2], -std::sin(0.2), 1e-6);
  EXPECT_NEAR(x[3], std::cos(0.2), 1e-6);
}

TEST(CpuOpsTest, RopeNeoxOrderingRotatesHalvesAndPassesTheRest) {
  CpuBackend b(1);
  // head_dim 6, n_rot 4: pairs (0, 2) with theta_0, (1, 3) with theta_1; dims 4, 5 untouched.
  RopeParams p;
  p.n_rot = 4;
  p.freq_base = 100.0f;
  p.ordering = RopeOrdering::kNeox;
  const int32_t pos[] = {3};
  std::vector<float> table(4);
  ASSERT_TRUE(b.rope_table(pos, 1, p, table.data()).ok());
  // Two heads; the second must get the same rotation.
  std::vector<float> x = {1, 1, 0, 0, 7, 8, 1, 1, 0, 0, 7, 8};
  ASSERT_TRUE(b.rope(x.data(), 1, 2, 6, 4, RopeOrdering::kNeox, table.data()).ok());
  for (int h = 0; h < 2; ++h) {
    const float* xh = x.data() + 6 * h;
    EXPECT_NEAR(xh[0], std::cos(3.0), 1e-6);
    EXPECT_NEAR(xh[2], std::sin(3.0), 1e-6);
    EXPECT_NEAR(xh[1], std::cos(0.3), 1e-6);
    EXPECT_NEAR(xh[3], std::sin(0.3), 1e-6);
    EXPECT_EQ(xh[4], 7);
    EXPECT_EQ(xh[5], 8);
  }
}

TEST(CpuOpsTest, RopeLinearScalingAndFrequencyFactors) {
  CpuBackend b(1);
  RopeParams p;
  p.n_rot = 4;
  p.freq_base = 100.0f;
  p.freq_scale = 0.5f;             // linear scaling by 2: theta_i = pos / 2 * inv_freq_i
  const float factors[] = {1, 4};  // and theta_1 divided by 4
  p.freq_factors = factors;
  const int32_t pos[] = {8};
  std::vector<float> table(4);
  ASSERT_TRUE(b.rope_table(pos, 1, p, table.data()).ok());
  EXPECT_NEAR(table[0], std::cos(4.0), 1e-7);        // 8 * 0.5 * 1
  EXPECT_NEAR(table[1], std::cos(0.4 / 4.0), 1e-7);  // 8 * 0.5 * 0.1 / 4
  EXPECT_NEAR(table[3], std::sin(0.1), 1e-7);
}

// One head, head_dim 2, two cached positions.
TEST(CpuOpsTest, AttentionIsCausalSoftmaxOverCache) {
  CpuBackend b(2);
  AttentionShape shape{1, 1, 2, 1.0f};
  std::vector<float> kcache(2 * 4, 0.0f), vcache(2 * 4, 0.0f);  // one block of 4 positions
  const int32_t table[] = {0};
  AttentionSeq seq;
  seq.row_begin = 0;
  seq.n_new = 2;
  seq.pos0 = 0;
  seq.kv = KvLayerView{kcache.data(), vcache.data(), table, 1, 4};
  const std::vector<float> k = {1, 0, 0, 1};  // k0 = (1, 0), k1 = (0, 1)
  const std::vector<float> v = {1, 2, 3, 4};  // v0 = (1, 2), v1 = (3, 4)
  store(b, k.data(), v.data(), seq, shape);
  EXPECT_EQ(kcache[2], 0);
  EXPECT_EQ(kcache[3], 1);
  EXPECT_EQ(vcache[2], 3);
  const std::vector<float> q = {5, 5, std::log(3.0f), 0};
  std::vector<float> out(4);
  ASSERT_TRUE(b.attention(q.data(), 0, out.data()).ok());
  // Row 0 sees only position 0: out = v0.
  EXPECT_FLOAT_EQ(out[0], 1);
  EXPECT_FLOAT_EQ(out[1], 2);
  // Row 1: scores (ln 3, 0) -> weights (3/4, 1/4): out = 0.75 v0 + 0.25 v1 = (1.5, 2.5).
  EXPECT_NEAR(out[2], 1.5, 1e-6);
  EXPECT_NEAR(out[3], 2.5, 1e-6);
}

TEST(CpuOpsTest, AttentionGroupsQueryHeadsOntoKvHeads) {
  CpuBackend b(2);
  // 4 query heads, 2 KV heads, head_dim 1, one cached position plus the new one.
  AttentionShape shape{4, 2, 1, 1.0f};
  const int32_t cap = 2;
  const int32_t table[] = {0};
  std::vector<float> kc(2 * cap, 0.0f), vc(2 * cap, 0.0f);
  AttentionSeq first{0, 1, 0, KvLayerView{kc.data(), vc.data(), table, 1, cap}};
  const std::vector<float> k0 = {0, 0}, v0 = {10, 20};  // position 0: KV head 0 -> 10, head 1 -> 20
  store(b, k0.data(), v0.data(), first, shape);
  AttentionSeq second{0, 1, 1, KvLayerView{kc.data(), vc.data(), table, 1, cap}};
  const std::vector<float> k1 = {0, 0}, v1 = {30, 40};  // position 1
  store(b, k1.data(), v1.data(), second, shape);
  // All scores 0: each head averages its KV head's two values.
  const std::vector<float> q = {1, 2, 3, 4};
  std::vector<float> out(4);
  ASSERT_TRUE(b.attention(q.data(), 0, out.data()).ok());
  EXPECT_FLOAT_EQ(out[0], 20);  // heads 0, 1 -> KV head 0: (10 + 30) / 2
  EXPECT_FLOAT_EQ(out[1], 20);
  EXPECT_FLOAT_EQ(out[2], 30);  // heads 2, 3 -> KV head 1: (20 + 40) / 2
  EXPECT_FLOAT_EQ(out[3], 30);
}

TEST(CpuOpsTest, LongPrefillAttentionIndependentOfThreadCount) {
  // 40 rows split into blocks of query rows across threads: same bits as one thread.
  AttentionShape shape{2, 1, 16, 0.25f};
  const int64_t n = 40, cap = 48;
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> q(n * 32), k(n * 16), v(n * 16);
  for (auto* vec : {&q, &k, &v}) {
    for (auto& x : *vec) x = dist(rng);
  }
  std::vector<float> out1(n * 32), out2(n * 32);
  for (int threads : {1, 2}) {
    CpuBackend b(threads);
    std::vector<float> kc(16 * cap), vc(16 * cap);
    const int32_t table[] = {0};
    AttentionSeq seq{0, static_cast<int32_t>(n), 0,
                     KvLayerView{kc.data(), vc.data(), table, 1, static_cast<int32_t>(cap)}};
    store(b, k.data(), v.data(), seq, shape);
    ASSERT_TRUE(b.attention(q.data(), 0, threads == 1 ? out1.data() : out2.data()).ok());
  }
  EXPECT_EQ(out1, out2);
}

TEST(CpuOpsTest, PagedAttentionWithScatteredBlocksMatchesOneBlockBitForBit) {
  // GQA (4 query heads on 2 KV heads), 37 positions: a prefill of 30 rows, then 7 decode rows.
  // Layout A: one block of 40 positions. Layout B: blocks of 8 placed out of order in a pool
  // of 6. Attention must give the same bits: paging changes addresses, not arithmetic.
  AttentionShape shape{4, 2, 16, 0.25f};
  const int64_t q_dim = 64, kv_dim = 32;
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> dist(-1, 1);
  std::vector<float> q(37 * q_dim), k(37 * kv_dim), v(37 * kv_dim);
  for (auto* vec : {&q, &k, &v}) {
    for (auto& x : *vec) x = dist(rng);
  }
  const int32_t one_block[] = {0};
  const int32_t scattered[] = {4, 0, 5, 2, 1};  // logical block i -> physical block
  std::vector<float> ka(40 * kv_dim), va(40 * kv_dim), kb(6 * 8 * kv_dim), vb(6 * 8 * kv_dim);
  const KvLayerView view_a{ka.data(), va.data(), one_block, 1, 40};
  const KvLayerView view_b{kb.data(), vb.data(), scattered, 5, 8};
  CpuBackend b(2);
  std::vector<float> out_a(37 * q_dim), out_b(37 * q_dim);
  for (const auto& [pos0, n] : {std::pair<int32_t, int32_t>{0, 30}, {30, 7}}) {
    for (const auto& [view, out] : {std::pair{view_a, &out_a}, std::pair{view_b, &out_b}}) {
      AttentionSeq seq{0, n, pos0, view};
      store(b, k.data() + pos0 * kv_dim, v.data() + pos0 * kv_dim, seq, shape);
      ASSERT_TRUE(b.attention(q.data() + pos0 * q_dim, 0, out->data() + pos0 * q_dim).ok());
    }
  }
  EXPECT_EQ(out_a, out_b);
  // Position 9 of KV head 1 lives in logical block 1 = physical block 0, offset 1.
  for (int d = 0; d < 16; ++d) {
    EXPECT_EQ(kb[((0 * 2 + 1) * 8 + 1) * 16 + d], k[9 * kv_dim + 16 + d]) << d;
  }
}

TEST(CpuOpsTest, QuantizedKvCacheAttentionStaysCloseToF32) {
  // GQA 4 on 2 KV heads, head_dim 64, 50 positions in blocks of 16 (the last one partial). The
  // NMSE bounds follow from each format's rounding step on unit-variance data: f16 keeps 11
  // significant bits (~1e-7), Q8_0 steps by max/127 per 32 values (~3e-5 on K and V), Q4_0 by
  // max/8 (~1e-2); softmax and the weighted sum average the error down further.
  AttentionShape shape{4, 2, 64, 0.125f};
  const int64_t q_dim = 256, kv_dim = 128, n = 50;
  std::mt19937 rng(5);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(n * q_dim), k(n * kv_dim), v(n * kv_dim);
  for (auto* vec : {&q, &k, &v}) {
    for (auto& x : *vec) x = dist(rng);
  }
  const int32_t table[] = {2, 0, 3, 1};
  CpuBackend b(2);
  auto run = [&](GgmlType type) {
    const size_t row_bytes = *ggml_row_bytes(type, 64);
    std::vector<uint8_t> kc(4 * 2 * 16 * row_bytes), vc(kc.size());
    AttentionSeq seq{0, static_cast<int32_t>(n), 0,
                     KvLayerView{kc.data(), vc.data(), table, 4, 16, type}};
    store(b, k.data(), v.data(), seq, shape);
    std::vector<float> out(n * q_dim);
    EXPECT_TRUE(b.attention(q.data(), 0, out.data()).ok());
    return out;
  };
  const std::vector<float> ref = run(GgmlType::kF32);
  for (const auto& [type, bound] :
       {std::pair{GgmlType::kF16, 1e-5}, {GgmlType::kQ8_0, 1e-3}, {GgmlType::kQ4_0, 5e-2}}) {
    const std::vector<float> got = run(type);
    double err = 0, norm = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      err += (got[i] - ref[i]) * double(got[i] - ref[i]);
      norm += double(ref[i]) * ref[i];
    }
    const double nmse = err / norm;
    EXPECT_LT(nmse, bound) << ggml_type_traits(type).name;
    EXPECT_GT(nmse, 0.0) << ggml_type_traits(type).name << " should round something";
    std::printf("[ kv cache ] %s attention NMSE %.2e (bound %.0e)\n",
                std::string(ggml_type_traits(type).name).c_str(), nmse, bound);
  }
}

TEST(CpuOpsTest, Swiglu) {
  CpuBackend b(1);
  const std::vector<float> gate = {0, 1, -2};
  const std::vector<float> up = {5, 2, 1};
  std::vector<float> out(3);
  ASSERT_TRUE(b.swiglu(gate.data(), up.data(), 1, 3, out.data()).ok());
  EXPECT_FLOAT_EQ(out[0], 0);
  EXPECT_NEAR(out[1], 2.0 / (1.0 + std::exp(-1.0)), 1e-6);
  EXPECT_NEAR(out[2], -2.0 / (1.0 + std::exp(2.0)), 1e-6);
}

TEST(CpuOpsTest, ArgmaxRowsTakesTheLowestIndexOfEqualMaxima) {
  CpuBackend b(1);
  const std::vector<float> logits = {1, 3, 3, -1, -5, -2, -7, -2};
  int32_t ids[2] = {-1, -1};
  ASSERT_TRUE(b.argmax_rows(logits.data(), 2, 4, ids).ok());
  EXPECT_EQ(ids[0], 1);
  EXPECT_EQ(ids[1], 1);
}

TEST(CpuOpsTest, EmbedGathersQuantizedRows) {
  CpuBackend b(1);
  // A Q8_0 table of 3 rows x 32: row r holds r + j/32.
  std::vector<float> rows(3 * 32);
  for (int r = 0; r < 3; ++r) {
    for (int j = 0; j < 32; ++j) rows[r * 32 + j] = r + j / 32.0f;
  }
  const uint64_t rb = *ggml_row_bytes(GgmlType::kQ8_0, 32);
  std::vector<uint8_t> q(3 * rb);
  for (int r = 0; r < 3; ++r) {
    ASSERT_TRUE(quantize_row(GgmlType::kQ8_0, rows.data() + r * 32, q.data() + r * rb, 32).ok());
  }
  WeightMatrix table{q.data(), GgmlType::kQ8_0, 32, 3};
  const int32_t ids[] = {2, 0};
  std::vector<float> out(64);
  ASSERT_TRUE(b.embed(table, ids, 2, out.data()).ok());
  std::vector<float> want(32);
  ASSERT_TRUE(dequantize_row(GgmlType::kQ8_0, q.data() + 2 * rb, want.data(), 32).ok());
  EXPECT_EQ(std::vector<float>(out.begin(), out.begin() + 32), want);
  for (int j = 0; j < 32; ++j) EXPECT_NEAR(out[j], 2 + j / 32.0f, 2.0 / 127);  // Q8_0 step
  for (int j = 0; j < 32; ++j) EXPECT_NEAR(out[32 + j], j / 32.0f, 1.0 / 127);
}

TEST(CpuOpsTest, VecRowKernelsMatchPlainArithmetic) {
  // 3 keys of 37 values (not a multiple of 8: exercises the tails).
  const int64_t n = 37, n_keys = 3;
  std::vector<float> q(n), k(n_keys * n);
  std::iota(q.begin(), q.end(), 1.0f);
  std::iota(k.begin(), k.end(), -50.0f);
  std::vector<float> scores(n_keys);
  vec::dot_rows(q.data(), k.data(), n_keys, n, 0.5f, scores.data());
  for (int64_t j = 0; j < n_keys; ++j) {
    double want = 0;
    for (int64_t i = 0; i < n; ++i) want += double(q[i]) * k[j * n + i];
    EXPECT_NEAR(scores[j], 0.5 * want, 1e-3) << j;
  }
  const std::vector<float> w = {0.5f, 0.25f, 2.0f};
  std::vector<float> out(n, 123.0f);  // accumulated into, one key at a time
  vec::mix_rows(w.data(), k.data(), n_keys, n, out.data());
  for (int64_t i = 0; i < n; ++i) {
    EXPECT_FLOAT_EQ(out[i], 123.0f + 0.5f * k[i] + 0.25f * k[n + i] + 2.0f * k[2 * n + i]) << i;
  }
}

}  // namespace
}  // namespace novaserve
