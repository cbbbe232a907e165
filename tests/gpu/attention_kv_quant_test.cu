// gpu::store_kv into Q8_0/Q4_0 caches on the corner cases of quantize_row (quant/quantize.cpp),
// against CpuBackend::store_kv byte for byte: the GPU reproduces the CPU's arithmetic exactly
// (first-index arg-max, IEEE divisions, fp16 scale rounded away from zero, ties-to-even codes),
// so any difference is a bug, not rounding. Random rows (attention_op_test.cu's
// StoreKvMatchesCpuCacheBitForBit) rarely hit these cases; here every block kind is planted in
// its own head row among random ones. DecodeReadsCornerCaseBlocksLikeCpu then runs decode
// attention over such caches, so the kernel's dequantizing loads meet every block kind too.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <iterator>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "attention_harness.h"
#include "backend/gpu/kernels/attention_ops.h"
#include "gpu_test_util.h"
#include "quant/ggml_type.h"

namespace novaserve::gpu {
namespace {

using test::AttentionHarness;
using test::AttnGeometry;
using test::SeqSpec;

constexpr int kBlock = 32;  // values per Q8_0/Q4_0 block

enum class Plant {
  kZeros,           // all zero, some -0.0: scale 0 (Q4_0: -0.0, from +0 / -8)
  kTiePositive,     // +a before -a at the maximum magnitude: Q4_0 takes the first (d < 0)
  kTieNegative,     // -a before +a
  kHalves,          // x / d exactly k + 0.5: ties to even; Q4_0's +8 clamps to 7
  kTinyScale,       // d below the smallest fp16 subnormal: rounds up to it
  kSubnormalScale,  // d an fp16 subnormal
  kLargeScale,      // d = 60000, near the top of fp16
  kScaleOverflow,   // d beyond fp16: the whole head row is stored as zeros
  kNaN,             // a NaN: the whole head row is stored as zeros
  kInf,             // an infinity: likewise
};
constexpr Plant kPlants[] = {Plant::kZeros,      Plant::kTiePositive,   Plant::kTieNegative,
                             Plant::kHalves,     Plant::kTinyScale,     Plant::kSubnormalScale,
                             Plant::kLargeScale, Plant::kScaleOverflow, Plant::kNaN,
                             Plant::kInf};

// Writes one block of `kind` at x[0 .. 31] for a `type` cache (Q8_0's scale is amax / 127, Q4_0's
// the first maximum-magnitude value over -8, so some kinds differ by type).
void plant_block(float* x, Plant kind, GgmlType type, std::mt19937& rng) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const bool q4 = type == GgmlType::kQ4_0;
  for (int j = 0; j < kBlock; ++j) x[j] = 0.4f * normal(rng);
  switch (kind) {
    case Plant::kZeros:
      for (int j = 0; j < kBlock; ++j) x[j] = j % 5 == 0 ? -0.0f : 0.0f;
      break;
    case Plant::kTiePositive:
    case Plant::kTieNegative: {
      for (int j = 0; j < kBlock; ++j) x[j] = std::clamp(x[j], -1.4f, 1.4f);
      const float first = kind == Plant::kTiePositive ? 1.5f : -1.5f;
      x[3] = first;
      x[17] = -first;
      break;
    }
    case Plant::kHalves: {
      // d = 1/16 exactly: Q8_0 from amax = 127/16, Q4_0 from vmax = -8/16 (first), with +8/16
      // last (x / d = 8, clamped to 7). Others (k + 0.5) / 16, exact in f32.
      if (q4) {
        for (int j = 1; j < kBlock - 1; ++j) x[j] = (static_cast<float>(j % 15 - 8) + 0.5f) / 16;
        x[0] = -0.5f;
        x[kBlock - 1] = 0.5f;
      } else {
        for (int j = 1; j < kBlock; ++j) x[j] = (static_cast<float>(j * 7 % 200 - 100) + 0.5f) / 16;
        x[0] = 127.0f / 16;
      }
      break;
    }
    case Plant::kTinyScale:
      for (int j = 0; j < kBlock; ++j) x[j] = 1e-6f * normal(rng);
      break;
    case Plant::kSubnormalScale:
      for (int j = 0; j < kBlock; ++j) x[j] = 1e-4f * normal(rng);
      break;
    case Plant::kLargeScale:
      for (int j = 0; j < kBlock; ++j) x[j] *= 1e5f;
      x[7] = q4 ? -60000.0f * 8 : 60000.0f * 127;
      break;
    case Plant::kScaleOverflow:
      x[9] = 1e7f;
      break;
    case Plant::kNaN:
      x[11] = std::numeric_limits<float>::quiet_NaN();
      break;
    case Plant::kInf:
      x[2] = -std::numeric_limits<float>::infinity();
      break;
  }
}

class AttentionKvQuantTest : public test::GpuTest {
 protected:
  CpuBackend cpu_{0};
};

TEST_F(AttentionKvQuantTest, StoreKvCornerCasesMatchCpuBytes) {
  SCOPED_TRACE(seed_note());
  // Stage 1 (the rows planted) has 9 + 3 stored rows, one per plant kind at least.
  const std::vector<SeqSpec> seqs = {{0, 9}, {4, 3}, {0, 1, true}};
  const AttnGeometry geometries[] = {{"smollm2 9:3 d64 bs16", 9, 3, 64, 16},
                                     {"gqa 8:2 d128 bs5", 8, 2, 128, 5}};
  for (const AttnGeometry& g : geometries) {
    for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
      SCOPED_TRACE(std::string(g.name) + " " + std::string(ggml_type_traits(type).name));
      AttentionHarness h(g, seqs, rng_);
      const int32_t blocks_per_row = g.head_dim / kBlock;
      // Plant i goes to stored row i: K head i % n_head_kv, V the next head, in varying blocks.
      for (int i = 0; i < static_cast<int>(std::size(kPlants)); ++i) {
        const int64_t k_at =
            i * h.kv_dim() + (i % g.n_head_kv) * g.head_dim + (i % blocks_per_row) * kBlock;
        const int64_t v_at = i * h.kv_dim() + ((i + 1) % g.n_head_kv) * g.head_dim +
                             ((i + 1) % blocks_per_row) * kBlock;
        plant_block(h.mutable_k(1).data() + k_at, kPlants[i], type, rng_);
        plant_block(h.mutable_v(1).data() + v_at, kPlants[i], type, rng_);
      }
      const auto ref = h.run_cpu(cpu_, type);
      const auto run = h.store_gpu(type, stream_);
      EXPECT_TRUE(test::same_bits(run->k_pool.download(), ref.k_pool));
      EXPECT_TRUE(test::same_bits(run->v_pool.download(), ref.v_pool));
    }
  }
}

// decode_attention on caches whose history holds every corner-case block, against the CPU on
// the same cache type: both read the same bytes and dequantize them the same way, so only
// summation order differs (NMSE < 1e-10, attention_op_test.cu's same-cache bound; on the
// tensor-core path, which keeps the codes exact and the scales apart, kMmaDecodeVsCpuQ8Nmse: a
// planted scale of 60000 must not overflow its fp16 operands). K gets every
// kind but kLargeScale, whose ~1e6 keys would make the softmax hinge on the rounding of huge
// scores; V gets them all.
TEST_F(AttentionKvQuantTest, DecodeReadsCornerCaseBlocksLikeCpu) {
  SCOPED_TRACE(seed_note());
  const std::vector<SeqSpec> seqs = {{40, 1}, {0, 1, true}, {23, 1}, {70, 1}};
  const AttnGeometry geometries[] = {{"smollm2 9:3 d64 bs16", 9, 3, 64, 16},
                                     {"qwen2 28:4 d128 bs5", 28, 4, 128, 5}};
  const DecodeAttentionPlan plans[] = {{}, {4, 16}};
  for (const AttnGeometry& g : geometries) {
    for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0}) {
      SCOPED_TRACE(std::string(g.name) + " " + std::string(ggml_type_traits(type).name));
      AttentionHarness h(g, seqs, rng_);
      const int32_t blocks_per_row = g.head_dim / kBlock;
      // History row r gets plant r % 10 in one block of K head r % n_head_kv and of V head
      // (r + 1) % n_head_kv.
      for (int64_t r = 0; r < h.csr(0).n_rows; ++r) {
        const Plant kind = kPlants[r % std::size(kPlants)];
        const int64_t k_at =
            r * h.kv_dim() + (r % g.n_head_kv) * g.head_dim + (r % blocks_per_row) * kBlock;
        const int64_t v_at = r * h.kv_dim() + ((r + 1) % g.n_head_kv) * g.head_dim +
                             ((r + 1) % blocks_per_row) * kBlock;
        if (kind != Plant::kLargeScale) plant_block(h.mutable_k(0).data() + k_at, kind, type, rng_);
        plant_block(h.mutable_v(0).data() + v_at, kind, type, rng_);
      }
      const auto ref = h.run_cpu(cpu_, type);
      const auto run = h.store_gpu(type, stream_);
      // decode_attention (tensor cores on Q8_0 where it has them) and its CUDA-core kernel.
      const bool mma = attention_mma_enabled() && decode_attention_mma_supported(type, g.head_dim);
      for (const DecodeAttentionPlan& plan : plans) {
        for (const bool simt : {false, true}) {
          SCOPED_TRACE("splits " + std::to_string(plan.n_splits) + (simt ? " simt" : ""));
          const int32_t batch = run->csr.batch.batch;
          test::DeviceBuffer<uint8_t> ws(decode_attention_workspace_bytes(batch, h.shape(), plan));
          test::DeviceBuffer<float> out(h.q().size());
          const auto fn = simt ? decode_attention_simt : decode_attention;
          const Status st = fn(run->q.get(), run->layer, run->csr.batch, h.shape(), plan, ws.get(),
                               out.get(), stream_);
          ASSERT_TRUE(st.ok()) << st.error().message;
          ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
          EXPECT_LT(test::nmse(out.download(), ref.out),
                    mma && !simt ? test::kMmaDecodeVsCpuQ8Nmse : 1e-10);
        }
      }
    }
  }
}

}  // namespace
}  // namespace novaserve::gpu
