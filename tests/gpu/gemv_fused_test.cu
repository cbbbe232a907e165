// The fused kQ8 decode GEMV epilogues (gemv_q4_0_q8_fused.h) against the ops they fold together,
// bit for bit: gemv_q4_0_q8 + the residual add, + the biases, RoPE and the F16 KV store; the
// norm fused into quantization (rms_norm_quantize_act_q8) against add_rms_norm + quantize_act_q8
// to f32 rounding (its sum of squares is reduced in another order). Plus argument checks and a
// timing report on Llama-3-8B shapes.
#include <gtest/gtest.h>

#include <cstdio>
#include <functional>
#include <memory>
#include <vector>

#include "attention_harness.h"
#include "backend/gpu/kernels/attention_ops.h"
#include "backend/gpu/kernels/gemv_q4_0_q8.h"
#include "backend/gpu/kernels/gemv_q4_0_q8_fused.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/device_buffer.h"
#include "gpu_test_util.h"

namespace novaserve::gpu::test {
namespace {

// The norm's factor may differ from add_rms_norm's in its last bit, which can move a quantized
// value by one step now and then.
constexpr double kNormedNmse = 1e-6;
constexpr float kEps = 1e-5f;

class GemvFusedTest : public GpuTest {
 protected:
  // A random Q4_0 matrix [n_out][n_in] in the split layout on the device.
  WeightMatrix matrix(int64_t n_in, int64_t n_out) {
    const DeviceBuffer<uint8_t> raw(random_quantized(GgmlType::kQ4_0, n_in, n_out, rng_));
    mats_.push_back(std::make_unique<DeviceBuffer<uint8_t>>(raw.size()));
    EXPECT_TRUE(repack_q4_0_split(raw.get(), n_in, n_out, mats_.back()->get(), stream_).ok());
    sync();
    return WeightMatrix{mats_.back()->get(), GgmlType::kQ4_0, n_in, n_out};
  }
  // The unfused input of a GEMV: x, or add_rms_norm(x) when norm_w is set, quantized.
  ActQ8 quantized(const DeviceBuffer<float>& x, const float* norm_w, int64_t rows, int64_t n_in) {
    const float* in = x.get();
    if (norm_w != nullptr) {
      normed_ = std::make_unique<DeviceBuffer<float>>(rows * n_in);
      // add_rms_norm writes x only when there is a delta.
      EXPECT_TRUE(add_rms_norm(const_cast<float*>(x.get()), nullptr, norm_w, rows, n_in, kEps,
                               normed_->get(), stream_)
                      .ok());
      in = normed_->get();
    }
    act_mem_ = std::make_unique<DeviceBuffer<uint8_t>>(act_q8_bytes(rows, n_in));
    const ActQ8 act = act_q8_view(act_mem_->get(), rows, n_in);
    EXPECT_TRUE(quantize_act_q8(in, rows, n_in, act, stream_).ok());
    return act;
  }
  std::vector<std::unique_ptr<DeviceBuffer<uint8_t>>> mats_;
  std::unique_ptr<DeviceBuffer<float>> normed_;
  std::unique_ptr<DeviceBuffer<uint8_t>> act_mem_;
};

TEST_F(GemvFusedTest, AddIsQuantizeGemvAndAddBitForBit) {
  SCOPED_TRACE(seed_note());
  for (int64_t n_in : {int64_t{4096}, int64_t{14336}}) {
    const int64_t n_out = 1030;  // not a multiple of 4: the last group is partial
    const WeightMatrix w = matrix(n_in, n_out);
    for (int64_t rows : {1, 3, 8}) {
      SCOPED_TRACE(::testing::Message() << "n_in " << n_in << ", rows " << rows);
      const DeviceBuffer<float> x(random_floats(rows * n_in, rng_));
      const std::vector<float> y0 = random_floats(rows * n_out, rng_);
      DeviceBuffer<float> prod(rows * n_out), fused(y0);
      float* const ys[] = {prod.get()};
      const ActQ8 xq = quantized(x, nullptr, rows, n_in);
      ASSERT_TRUE(gemv_q4_0_q8({&w, 1}, xq, rows, ys, false, stream_).ok());
      ASSERT_TRUE(gemv_q4_0_q8_add(w, xq, rows, fused.get(), stream_).ok());
      sync();
      const std::vector<float> p = prod.download();
      std::vector<float> ref(y0.size());
      for (size_t i = 0; i < ref.size(); ++i) ref[i] = y0[i] + p[i];
      EXPECT_TRUE(same_bits(fused.download(), ref));
    }
  }
}

TEST_F(GemvFusedTest, NormQuantizeMatchesNormThenQuantize) {
  SCOPED_TRACE(seed_note());
  for (int64_t n_in : {int64_t{4096}, int64_t{14336}, int64_t{96}}) {
    const int64_t rows = 5;
    SCOPED_TRACE(::testing::Message() << "n_in " << n_in);
    const DeviceBuffer<float> x(random_floats(rows * n_in, rng_, 3.0f));
    const DeviceBuffer<float> norm_w(random_floats(n_in, rng_));
    const ActQ8 ref = quantized(x, norm_w.get(), rows, n_in);
    DeviceBuffer<uint8_t> mem(act_q8_bytes(rows, n_in));
    const ActQ8 got = act_q8_view(mem.get(), rows, n_in);
    ASSERT_TRUE(
        rms_norm_quantize_act_q8(x.get(), norm_w.get(), kEps, rows, n_in, got, stream_).ok());
    sync();
    const int64_t nb = rows * n_in / 32;
    std::vector<int8_t> gq(rows * n_in), rq(rows * n_in);
    std::vector<float> gd(nb), rd(nb);
    ASSERT_EQ(cudaMemcpy(gq.data(), got.q, gq.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(rq.data(), ref.q, rq.size(), cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(gd.data(), got.d, nb * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    ASSERT_EQ(cudaMemcpy(rd.data(), ref.d, nb * 4, cudaMemcpyDeviceToHost), cudaSuccess);
    // The dequantized values agree to the quantization's rounding: a value whose scaled input
    // lay on a rounding boundary may move by one step.
    std::vector<float> gv(gq.size()), rv(rq.size());
    int64_t moved = 0;
    for (size_t i = 0; i < gq.size(); ++i) {
      gv[i] = gd[i / 32] * gq[i];
      rv[i] = rd[i / 32] * rq[i];
      EXPECT_LE(std::abs(gq[i] - rq[i]), 1) << "value " << i;
      moved += gq[i] != rq[i];
    }
    EXPECT_LT(nmse(gv, rv), kNormedNmse);
    EXPECT_LT(moved, static_cast<int64_t>(gq.size()) / 100) << "values one step apart";
  }
}

// QKV on Llama-3-8B's attention shape (32:8 heads of 128) and Qwen2's NeoX ordering with biases,
// for a step of decode rows, a 2-row prefill chunk and a padding sequence (its row is not
// stored): the fused kernel's q, its F16 cache rows, and its k/v buffers when there is no cache,
// against gemv_q4_0_q8 + add_bias + rope + store_kv (K rotated on the way), bit for bit.
TEST_F(GemvFusedTest, QkvMatchesTheUnfusedOps) {
  SCOPED_TRACE(seed_note());
  const int64_t n_in = 512;
  const std::vector<SeqSpec> seqs = {{5, 1}, {0, 1, true}, {17, 1}, {3, 2}, {40, 1}};
  const AttentionHarness h(kLlama3, seqs, rng_);
  const int64_t rows = h.csr(1).n_rows;
  ASSERT_LE(rows, kGemvQ4_0Q8MaxRows);
  const int32_t d = kLlama3.head_dim;
  const WeightMatrix wq = matrix(n_in, h.q_dim()), wk = matrix(n_in, h.kv_dim()),
                     wv = matrix(n_in, h.kv_dim());
  const WeightMatrix ws[] = {wq, wk, wv};
  const DeviceBuffer<float> table(random_floats(rows * d, rng_));
  const DeviceBuffer<float> bq(random_floats(h.q_dim(), rng_)), bk(random_floats(h.kv_dim(), rng_)),
      bv(random_floats(h.kv_dim(), rng_));
  const DeviceCsr csr(h.csr(1));
  for (RopeOrdering ordering : {RopeOrdering::kNormal, RopeOrdering::kNeox}) {
    const bool bias = ordering == RopeOrdering::kNeox;
    SCOPED_TRACE(bias ? "neox + bias" : "normal");
    const DeviceBuffer<float> x(random_floats(rows * n_in, rng_));
    const ActQ8 xq = quantized(x, nullptr, rows, n_in);
    // Unfused.
    DeviceBuffer<float> q(rows * h.q_dim()), k(rows * h.kv_dim()), v(rows * h.kv_dim());
    float* const ys[] = {q.get(), k.get(), v.get()};
    ASSERT_TRUE(gemv_q4_0_q8(ws, xq, rows, ys, false, stream_).ok());
    if (bias) {
      ASSERT_TRUE(add_bias(q.get(), bq.get(), rows, h.q_dim(), stream_).ok());
      ASSERT_TRUE(add_bias(k.get(), bk.get(), rows, h.kv_dim(), stream_).ok());
      ASSERT_TRUE(add_bias(v.get(), bv.get(), rows, h.kv_dim(), stream_).ok());
    }
    ASSERT_TRUE(rope(q.get(), rows, kLlama3.n_head, d, d, ordering, table.get(), stream_).ok());
    DeviceBuffer<uint8_t> k_ref(h.pool_bytes(GgmlType::kF16)), v_ref(h.pool_bytes(GgmlType::kF16));
    ASSERT_EQ(cudaMemset(k_ref.get(), 0, k_ref.size()), cudaSuccess);
    ASSERT_EQ(cudaMemset(v_ref.get(), 0, v_ref.size()), cudaSuccess);
    const PagedKvLayer ref_layer{k_ref.get(), v_ref.get(), GgmlType::kF16, kLlama3.block_size};
    const StoreKvRope k_rope{table.get(), d, ordering};
    ASSERT_TRUE(
        store_kv(k.get(), v.get(), rows, ref_layer, csr.batch, h.shape(), &k_rope, stream_).ok());
    ASSERT_TRUE(rope(k.get(), rows, kLlama3.n_head_kv, d, d, ordering, table.get(), stream_).ok());
    // Fused, into the cache and into buffers.
    DeviceBuffer<uint8_t> k_pool(h.pool_bytes(GgmlType::kF16)),
        v_pool(h.pool_bytes(GgmlType::kF16));
    ASSERT_EQ(cudaMemset(k_pool.get(), 0, k_pool.size()), cudaSuccess);
    ASSERT_EQ(cudaMemset(v_pool.get(), 0, v_pool.size()), cudaSuccess);
    DeviceBuffer<float> fq(rows * h.q_dim()), fq2(rows * h.q_dim()), fk(rows * h.kv_dim()),
        fv(rows * h.kv_dim());
    FusedQkvOutput out;
    out.q = fq.get();
    out.rope_table = table.get();
    out.ordering = ordering;
    out.head_dim = d;
    if (bias) {
      out.bias_q = bq.get();
      out.bias_k = bk.get();
      out.bias_v = bv.get();
    }
    out.kv = PagedKvLayer{k_pool.get(), v_pool.get(), GgmlType::kF16, kLlama3.block_size};
    out.batch = csr.batch;
    ASSERT_TRUE(gemv_q4_0_q8_qkv(wq, wk, wv, xq, rows, out, stream_).ok());
    FusedQkvOutput to_buffers = out;
    to_buffers.q = fq2.get();
    to_buffers.k = fk.get();
    to_buffers.v = fv.get();
    to_buffers.kv = PagedKvLayer{};
    ASSERT_TRUE(gemv_q4_0_q8_qkv(wq, wk, wv, xq, rows, to_buffers, stream_).ok());
    sync();
    EXPECT_TRUE(same_bits(fq.download(), fq2.download()));
    EXPECT_TRUE(same_bits(fq.download(), q.download()));
    EXPECT_TRUE(same_bits(fk.download(), k.download()));
    EXPECT_TRUE(same_bits(fv.download(), v.download()));
    EXPECT_TRUE(same_bits(k_pool.download(), k_ref.download()));
    EXPECT_TRUE(same_bits(v_pool.download(), v_ref.download()));
  }
}

TEST(GemvFusedArgs, RejectsBadArguments) {
  alignas(16) static uint8_t buf[4096];
  auto* f = reinterpret_cast<float*>(buf);
  const ActQ8 x{reinterpret_cast<int8_t*>(buf), f, reinterpret_cast<int32_t*>(buf)};
  const WeightMatrix q4{buf, GgmlType::kQ4_0, 32, 8};
  const WeightMatrix f16{buf, GgmlType::kF16, 32, 8};
  EXPECT_FALSE(gemv_q4_0_q8_add(f16, x, 1, f, nullptr).ok());
  EXPECT_FALSE(gemv_q4_0_q8_add(q4, x, 9, f, nullptr).ok());
  EXPECT_FALSE(gemv_q4_0_q8_add(q4, x, -1, f, nullptr).ok());
  EXPECT_FALSE(gemv_q4_0_q8_add(q4, x, 1, nullptr, nullptr).ok());
  const WeightMatrix odd{buf, GgmlType::kQ4_0, 48, 8};
  EXPECT_FALSE(gemv_q4_0_q8_add(odd, x, 1, f, nullptr).ok());
  FusedQkvOutput out;
  out.q = out.k = out.v = f;
  out.rope_table = f;
  out.head_dim = 6;  // not a multiple of 8
  EXPECT_FALSE(gemv_q4_0_q8_qkv(q4, q4, q4, x, 1, out, nullptr).ok());
  out.head_dim = 8;
  out.kv = PagedKvLayer{buf, buf, GgmlType::kQ8_0, 16};  // the epilogue stores F16 only
  out.batch.batch = 1;
  EXPECT_FALSE(gemv_q4_0_q8_qkv(q4, q4, q4, x, 1, out, nullptr).ok());
  EXPECT_FALSE(rms_norm_quantize_act_q8(f, f, 1e-5f, 1, 33, x, nullptr).ok());
  EXPECT_FALSE(rms_norm_quantize_act_q8(f, nullptr, 1e-5f, 1, 32, x, nullptr).ok());
}

// Prints (asserts nothing about speed) the fused kernels' time at one row on Llama-3-8B shapes
// (the projections of a decode layer without its attention),
// weights rotated through copies that outgrow the 50 MB L2, 32 launches of each (one per layer)
// captured in a CUDA graph (with programmatic dependent launch where pdl.h enables it), and the
// same for the unfused ops they replace.
TEST_F(GemvFusedTest, TimingOnLlama3Shapes) {
  constexpr int kLayers = 32;
  const int64_t dim = 4096, ff = 14336, kv = 1024;
  struct Layer {
    WeightMatrix wq, wk, wv, wo, gate, up, down;
  };
  // One layer's worth of weights per copy, 8 copies (~1.7 GB) in rotation.
  std::vector<Layer> layers;
  for (int c = 0; c < 8; ++c) {
    layers.push_back(Layer{matrix(dim, dim), matrix(dim, kv), matrix(dim, kv), matrix(dim, dim),
                           matrix(dim, ff), matrix(dim, ff), matrix(ff, dim)});
  }
  const DeviceBuffer<float> norm_w(random_floats(dim, rng_));
  const DeviceBuffer<float> table(random_floats(128, rng_));
  DeviceBuffer<float> x(random_floats(dim, rng_, 0.1f)), q(dim), k(kv), v(kv), attn(dim), act(ff),
      h(dim), o(dim), gate(ff), up(ff);
  DeviceBuffer<uint8_t> act_mem(act_q8_bytes(1, ff));
  const ActQ8 xq = act_q8_view(act_mem.get(), 1, ff);
  const auto graph_ms = [&](const std::function<void()>& enqueue) {
    cudaGraph_t graph = nullptr;
    EXPECT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
    enqueue();
    EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
    cudaGraphExec_t exec = nullptr;
    EXPECT_EQ(graph_instantiate(&exec, graph), cudaSuccess);
    EXPECT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);  // warm-up
    const float ms = elapsed_ms(stream_, [&] { (void)cudaGraphLaunch(exec, stream_); });
    (void)cudaGraphExecDestroy(exec);
    (void)cudaGraphDestroy(graph);
    return ms;
  };
  const double weight_bytes =
      kLayers * (2.0 * dim * dim + 2.0 * dim * kv + 3.0 * dim * ff) / 32 * 18;
  FusedQkvOutput qkv;
  qkv.q = q.get();
  qkv.k = k.get();
  qkv.v = v.get();
  qkv.rope_table = table.get();
  qkv.head_dim = 128;
  bool ok = true;
  const float fused_ms = graph_ms([&] {
    for (int l = 0; l < kLayers; ++l) {
      const Layer& w = layers[l % layers.size()];
      const WeightMatrix gu[] = {w.gate, w.up};
      float* const gu_y[] = {act.get(), nullptr};
      ok = rms_norm_quantize_act_q8(x.get(), norm_w.get(), kEps, 1, dim, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8_qkv(w.wq, w.wk, w.wv, xq, 1, qkv, stream_).ok() && ok;
      ok = quantize_act_q8(q.get(), 1, dim, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8_add(w.wo, xq, 1, x.get(), stream_).ok() && ok;
      ok = rms_norm_quantize_act_q8(x.get(), norm_w.get(), kEps, 1, dim, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8(gu, xq, 1, gu_y, true, stream_).ok() && ok;
      ok = quantize_act_q8(act.get(), 1, ff, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8_add(w.down, xq, 1, x.get(), stream_).ok() && ok;
    }
  });
  const float unfused_ms = graph_ms([&] {
    for (int l = 0; l < kLayers; ++l) {
      const Layer& w = layers[l % layers.size()];
      const WeightMatrix qkv_w[] = {w.wq, w.wk, w.wv};
      float* const qkv_y[] = {q.get(), k.get(), v.get()};
      const WeightMatrix gu[] = {w.gate, w.up};
      float* const gu_y[] = {act.get(), nullptr};
      float* const o_y[] = {o.get()};
      ok = add_rms_norm(x.get(), o.get(), norm_w.get(), 1, dim, kEps, h.get(), stream_).ok() && ok;
      ok = quantize_act_q8(h.get(), 1, dim, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8(qkv_w, xq, 1, qkv_y, false, stream_).ok() && ok;
      ok = rope(q.get(), 1, 32, 128, 128, RopeOrdering::kNormal, table.get(), stream_).ok() && ok;
      ok = quantize_act_q8(q.get(), 1, dim, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8({&w.wo, 1}, xq, 1, o_y, false, stream_).ok() && ok;
      ok = add_rms_norm(x.get(), o.get(), norm_w.get(), 1, dim, kEps, h.get(), stream_).ok() && ok;
      ok = quantize_act_q8(h.get(), 1, dim, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8(gu, xq, 1, gu_y, true, stream_).ok() && ok;
      ok = quantize_act_q8(act.get(), 1, ff, xq, stream_).ok() && ok;
      ok = gemv_q4_0_q8({&w.down, 1}, xq, 1, o_y, false, stream_).ok() && ok;
    }
  });
  ASSERT_TRUE(ok);
  std::printf(
      "fused decode GEMVs, 32 Llama-3-8B layers at 1 row (8 launches per layer): %.3f ms, %.0f "
      "GB/s of Q4_0 weights\nunfused (norm, quantize, GEMV, rope ops; 11 launches per layer): "
      "%.3f ms, %.0f GB/s\n",
      fused_ms, weight_bytes / fused_ms * 1e-6, unfused_ms, weight_bytes / unfused_ms * 1e-6);
}

}  // namespace
}  // namespace novaserve::gpu::test
