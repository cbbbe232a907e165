// Op tests of the paged attention kernels (store_kv, decode_attention, prefill_attention) against
// CpuBackend::store_kv + CpuBackend::attention on the same random inputs, block tables and
// batches (attention_harness.h): mixed context lengths 1 .. 8200, odd lengths, GQA 1:1 to 12:1,
// head_dim 64 and 128, block sizes 1 to 32, F32, F16, Q8_0 and Q4_0 caches.
//
// Thresholds (NMSE, gpu_test_util.h):
// - Same cache type on both sides (F32 vs CPU F32, F16 vs CPU F16, Q8_0 vs CPU Q8_0, ...): both
//   read identical cached values (store_kv writes the CPU's bytes, checked bit for bit below, and
//   kv_load dequantizes with the CPU's one-rounding d * q); they differ in summation order (dot
//   products, softmax sums, split/tile merging), exp2f of log2-scaled scores vs std::exp, and
//   when the weights are normalized. Each is a relative error of a few f32 ulps (~1e-7), so NMSE
//   ~1e-13; 1e-10 leaves margin, while one wrong key or value row among a thousand (or one
//   misplaced nibble or scale) gives ~1e-4 or more.
// - Lossy cache vs the CPU's F32 cache. A cached value's error e has variance s^2 (relative to
//   the unit-normal values); through a score (scale 1/sqrt(head_dim)) and through V each adds
//   about s^2 to the output NMSE, so NMSE ~2 s^2:
//     F16: relative rounding error <= 2^-11, s^2 ~ 3e-8 -> NMSE ~1e-7 (the CPU's own F16 vs F32
//       NMSE over these cases and 12 seeds: <= 1e-7); bound 1e-6.
//     Q8_0: e uniform in +-d/2, d = amax/127, amax of 32 normals ~2.1 -> s^2 ~ d^2/12 ~ 2.4e-5,
//       NMSE ~5e-5 (measured as for F16: <= 6.3e-5); bound 2e-4.
//     Q4_0: d = |vmax|/8 -> s^2 ~ 6e-3, NMSE ~1.2e-2 (measured <= 1.6e-2); bound 4e-2.
//   The bounds stay far below what a broken dequantization gives (a wrong nibble half or sign:
//   NMSE ~1 or more).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "attention_harness.h"
#include "backend/cpu/cpu_kernels.h"
#include "backend/gpu/attention_ops.h"
#include "gpu_test_util.h"

namespace novaserve::gpu {
namespace {

using test::AttentionHarness;
using test::AttnGeometry;
using test::DeviceBuffer;
using test::nmse;
using test::SeqSpec;

constexpr double kSameCacheNmse = 1e-10;
constexpr double kF16VsF32Nmse = 1e-6;
constexpr double kQ8VsF32Nmse = 2e-4;
constexpr double kQ4VsF32Nmse = 4e-2;
const GgmlType kCacheTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0, GgmlType::kQ4_0};
constexpr float kSentinel = 1e30f;  // output rows a kernel must not touch keep this value

// Shapes: SmolLM2-135M (9:3, 64), Llama-3-8B (32:8, 128), 8:1, Qwen2-7B (28:4 = 7:1), MHA 1:1,
// and 12:1, whose group spans two thread blocks of decode (8 + 4 heads).
const AttnGeometry kSmol{"smollm2 9:3 d64 bs16", 9, 3, 64, 16};
const AttnGeometry kLlama3{"llama3 32:8 d128 bs16", 32, 8, 128, 16};
const AttnGeometry kGqa8{"gqa 32:4 d128 bs16", 32, 4, 128, 16};
const AttnGeometry kQwen2{"qwen2 28:4 d128 bs16", 28, 4, 128, 16};
const AttnGeometry kMha{"mha 8:8 d64 bs32", 8, 8, 64, 32};
const AttnGeometry kGroup12{"gqa 12:1 d64 bs7", 12, 1, 64, 7};
const AttnGeometry kBlock1{"gqa 32:4 d128 bs1", 32, 4, 128, 1};

// NMSE bound of a GPU result on a `type` cache against the CPU's F32 cache (header).
double vs_f32_bound(GgmlType type) {
  switch (type) {
    case GgmlType::kF16:
      return kF16VsF32Nmse;
    case GgmlType::kQ8_0:
      return kQ8VsF32Nmse;
    case GgmlType::kQ4_0:
      return kQ4VsF32Nmse;
    default:
      return kSameCacheNmse;
  }
}

std::string type_name(GgmlType type) {
  return std::string(ggml_type_traits(type).name);
}

std::vector<SeqSpec> decode_batch(const std::vector<int32_t>& kv_lens) {
  std::vector<SeqSpec> seqs;
  for (int32_t n : kv_lens) seqs.push_back({n - 1, 1, false});
  return seqs;
}

class AttentionOpTest : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    int dev = 0;
    ASSERT_EQ(cudaGetDevice(&dev), cudaSuccess);
    cudaDeviceProp prop{};
    ASSERT_EQ(cudaGetDeviceProperties(&prop, dev), cudaSuccess);
    n_sm_ = prop.multiProcessorCount;
  }

  // Decode attention of h's new rows on the GPU cache `run` with `plan`; output starts as the
  // sentinel.
  std::vector<float> decode(const AttentionHarness& h, const AttentionHarness::GpuRun& run,
                            const DecodeAttentionPlan& plan) {
    const int32_t batch = run.csr.batch.batch;
    DeviceBuffer<uint8_t> ws(decode_attention_workspace_bytes(batch, h.shape(), plan));
    DeviceBuffer<float> out(std::vector<float>(h.q().size(), kSentinel));
    const Status st = decode_attention(run.q.get(), run.layer, run.csr.batch, h.shape(), plan,
                                       ws.get(), out.get(), stream_);
    EXPECT_TRUE(st.ok()) << st.error().message;
    sync();
    return out.download();
  }

  std::vector<float> prefill(const AttentionHarness& h, const AttentionHarness::GpuRun& run,
                             int32_t max_new) {
    DeviceBuffer<float> out(std::vector<float>(h.q().size(), kSentinel));
    const Status st = prefill_attention(run.q.get(), run.layer, run.csr.batch, h.shape(), max_new,
                                        out.get(), stream_);
    EXPECT_TRUE(st.ok()) << st.error().message;
    sync();
    return out.download();
  }

  // A GPU output on a `type` cache against the CPU on the same cache type (kSameCacheNmse) and,
  // for the lossy types, against the CPU's F32 cache `ref32` (vs_f32_bound).
  void expect_matches_cpu(const std::vector<float>& got, const AttentionHarness& h, GgmlType type,
                          const std::vector<float>& ref32) {
    if (type != GgmlType::kF32) {
      EXPECT_LT(nmse(got, h.run_cpu(cpu_, type).out), kSameCacheNmse) << "vs CPU, same cache";
    }
    EXPECT_LT(nmse(got, ref32), vs_f32_bound(type)) << "vs CPU, F32 cache";
  }

  int n_sm_ = 0;
  CpuBackend cpu_{0};
};

TEST_F(AttentionOpTest, StoreKvMatchesCpuCacheBitForBit) {
  SCOPED_TRACE(seed_note());
  const std::vector<SeqSpec> seqs = {{0, 37}, {16, 16}, {45, 3}, {0, 1}, {100, 1}, {0, 1, true}};
  for (const AttnGeometry& g : {kSmol, kGroup12, kBlock1}) {
    for (GgmlType type : kCacheTypes) {
      SCOPED_TRACE(std::string(g.name) + " " + type_name(type));
      const AttentionHarness h(g, seqs, rng_);
      const auto ref = h.run_cpu(cpu_, type);
      const auto run = h.store_gpu(type, stream_);
      // Untouched blocks are zero on both sides, so whole pools compare.
      EXPECT_TRUE(test::same_bits(run->k_pool.download(), ref.k_pool));
      EXPECT_TRUE(test::same_bits(run->v_pool.download(), ref.v_pool));
    }
  }
}

TEST_F(AttentionOpTest, StoreKvWithFusedRopeMatchesRopeThenStore) {
  SCOPED_TRACE(seed_note());
  const AttnGeometry g = kSmol;
  const std::vector<SeqSpec> seqs = {{0, 20}, {30, 9}, {7, 1}};
  // Quantized caches quantize the rotated K, so their bytes match the CPU's too.
  for (RopeOrdering ord : {RopeOrdering::kNormal, RopeOrdering::kNeox}) {
    for (int32_t n_rot : {g.head_dim, g.head_dim / 2}) {
      for (GgmlType type : kCacheTypes) {
        SCOPED_TRACE(std::string(ord == RopeOrdering::kNeox ? "neox" : "normal") + " n_rot " +
                     std::to_string(n_rot) + " " + type_name(type));
        const AttentionHarness h(g, seqs, rng_);
        const auto& csr = h.csr(1);
        // The table of each new row's position, and the CPU's rotate-then-store.
        RopeParams p;
        p.n_rot = n_rot;
        p.freq_base = 10000.0f;
        std::vector<float> table(csr.n_rows * n_rot);
        for (size_t i = 0; i < seqs.size(); ++i) {
          for (int32_t r = csr.qo_indptr[i]; r < csr.qo_indptr[i + 1]; ++r) {
            cpu::rope_table_row(seqs[i].pos0 + r - csr.qo_indptr[i], p, &table[r * n_rot]);
          }
        }
        std::vector<float> k_rot = h.k(1);
        for (int64_t r = 0; r < csr.n_rows; ++r) {
          cpu::rope_row(k_rot.data() + r * h.kv_dim(), g.n_head_kv, g.head_dim, n_rot, ord,
                        &table[r * n_rot]);
        }
        std::vector<uint8_t> k_ref(h.pool_bytes(type)), v_ref(k_ref.size());
        const auto cpu_seqs = h.cpu_seqs(1, k_ref.data(), v_ref.data(), type);
        cpu_.store_kv(k_rot.data(), h.v(1).data(), cpu_seqs.data(),
                      static_cast<int32_t>(cpu_seqs.size()), h.shape());

        AttentionHarness::GpuRun run(h, type);
        DeviceBuffer<float> k(h.k(1)), v(h.v(1)), d_table(table);
        const StoreKvRope rope{d_table.get(), n_rot, ord};
        const Status st = store_kv(k.get(), v.get(), csr.n_rows, run.layer, run.csr.batch,
                                   h.shape(), &rope, stream_);
        ASSERT_TRUE(st.ok()) << st.error().message;
        sync();
        EXPECT_TRUE(test::same_bits(run.k_pool.download(), k_ref));
        EXPECT_TRUE(test::same_bits(run.v_pool.download(), v_ref));
        EXPECT_TRUE(test::same_bits(k.download(), h.k(1))) << "store_kv modified its input";
      }
    }
  }
}

TEST_F(AttentionOpTest, DecodeMatchesCpu) {
  SCOPED_TRACE(seed_note());
  const std::vector<std::pair<AttnGeometry, std::vector<int32_t>>> cases = {
      {kSmol, {1, 2, 15, 16, 17, 100, 777, 2047, 3000}},
      {kLlama3, {1, 33, 500, 1999, 3000, 8200}},
      {kGqa8, {3, 1024, 2500}},
      {kQwen2, {64, 65, 1500}},
      {kMha, {5, 64, 1300}},
      {kGroup12, {1, 50, 1000}},
  };
  for (const auto& [g, lens] : cases) {
    const AttentionHarness h(g, decode_batch(lens), rng_);
    const auto ref32 = h.run_cpu(cpu_, GgmlType::kF32);
    const int32_t max_len = *std::max_element(lens.begin(), lens.end());
    const DecodeAttentionPlan plan =
        plan_decode_attention(static_cast<int32_t>(lens.size()), h.shape(), max_len, n_sm_);
    for (GgmlType type : kCacheTypes) {
      SCOPED_TRACE(std::string(g.name) + " " + type_name(type) + " splits " +
                   std::to_string(plan.n_splits) + " chunk " + std::to_string(plan.kv_chunk));
      const auto run = h.store_gpu(type, stream_);
      expect_matches_cpu(decode(h, *run, plan), h, type, ref32.out);
    }
  }
}

TEST_F(AttentionOpTest, DecodeSplitKMatchesNoSplit) {
  SCOPED_TRACE(seed_note());
  // Chunks smaller and larger than a tile, odd ones, and a grid with fewer splits than the
  // longest sequence needs (its last split then takes the rest).
  const std::vector<DecodeAttentionPlan> plans = {
      {2, 64}, {64, 64}, {40, 100}, {3, 1000}, {8, 777}};
  for (const AttnGeometry& g : {kSmol, kLlama3}) {
    const AttentionHarness h(g, decode_batch({1, 63, 64, 65, 999, 3000, 4097}), rng_);
    const auto ref = h.run_cpu(cpu_, GgmlType::kF32);
    const auto run = h.store_gpu(GgmlType::kF32, stream_);
    const auto whole = decode(h, *run, DecodeAttentionPlan{});
    EXPECT_LT(nmse(whole, ref.out), kSameCacheNmse) << g.name;
    for (const DecodeAttentionPlan& plan : plans) {
      SCOPED_TRACE(std::string(g.name) + " splits " + std::to_string(plan.n_splits) + " chunk " +
                   std::to_string(plan.kv_chunk));
      const auto split = decode(h, *run, plan);
      // Only the merge order changes: f32 rounding, ~1e-7 relative.
      EXPECT_LT(nmse(split, whole), 1e-12);
      EXPECT_LT(nmse(split, ref.out), kSameCacheNmse);
    }
  }
}

TEST_F(AttentionOpTest, PrefillMatchesCpuOnMixedBatches) {
  SCOPED_TRACE(seed_note());
  const std::vector<std::pair<AttnGeometry, std::vector<SeqSpec>>> cases = {
      {kLlama3, {{0, 257}, {2000, 33}, {700, 100}, {15, 5}, {2999, 1}, {0, 1}, {31, 64}}},
      {kSmol, {{0, 300}, {1000, 47}, {16, 16}, {3, 1}, {0, 1, true}}},
      {kBlock1, {{0, 40}, {100, 70}}},
      {kGroup12, {{500, 129}, {0, 2}}},
      {kMha, {{3000, 50}, {0, 1}}},
      {kQwen2, {{1, 31}, {95, 33}}},
  };
  for (const auto& [g, seqs] : cases) {
    const AttentionHarness h(g, seqs, rng_);
    const auto ref32 = h.run_cpu(cpu_, GgmlType::kF32);
    for (GgmlType type : kCacheTypes) {
      SCOPED_TRACE(std::string(g.name) + " " + type_name(type));
      const auto run = h.store_gpu(type, stream_);
      const auto got = prefill(h, *run, h.csr(1).max_new);
      expect_matches_cpu(got, h, type, ref32.out);
      // A grid too small for the longest sequence loops over its row tiles: same bits.
      EXPECT_TRUE(test::same_bits(prefill(h, *run, 1), got));
      // Decode on the same batch writes exactly the single-row sequences' rows.
      const auto dec = decode(h, *run, DecodeAttentionPlan{});
      const auto& csr = h.csr(1);
      for (size_t i = 0; i + 1 < csr.qo_indptr.size(); ++i) {
        const int32_t n = csr.qo_indptr[i + 1] - csr.qo_indptr[i];
        const auto begin = dec.begin() + csr.qo_indptr[i] * h.q_dim();
        const std::vector<float> rows(begin, begin + n * h.q_dim());
        if (n == 1) {
          const auto rbegin = got.begin() + csr.qo_indptr[i] * h.q_dim();
          EXPECT_LT(nmse(rows, std::vector<float>(rbegin, rbegin + h.q_dim())), kSameCacheNmse)
              << "sequence " << i;
        } else {
          EXPECT_TRUE(std::all_of(rows.begin(), rows.end(), [](float x) { return x == kSentinel; }))
              << "decode wrote rows of multi-row sequence " << i;
        }
      }
    }
  }
}

TEST_F(AttentionOpTest, PaddingSequencesGetZeroOutputs) {
  SCOPED_TRACE(seed_note());
  const AttentionHarness h(kLlama3, {{10, 1}, {0, 1, true}, {300, 1}, {0, 1, true}}, rng_);
  const auto ref = h.run_cpu(cpu_, GgmlType::kF32);  // padding rows stay 0 in the reference
  const auto run = h.store_gpu(GgmlType::kF32, stream_);
  EXPECT_LT(nmse(decode(h, *run, DecodeAttentionPlan{}), ref.out), kSameCacheNmse);
  EXPECT_LT(nmse(decode(h, *run, DecodeAttentionPlan{4, 64}), ref.out), kSameCacheNmse);
  EXPECT_LT(nmse(prefill(h, *run, 1), ref.out), kSameCacheNmse);
  for (int64_t row : {1, 3}) {
    const auto out = prefill(h, *run, 1);
    for (int64_t i = 0; i < h.q_dim(); ++i) ASSERT_EQ(out[row * h.q_dim() + i], 0.0f);
  }
}

// Argument checks happen before any device call, so these run without a GPU too.
TEST(AttentionOpArgs, LaunchersRejectBadShapesAndPlans) {
  int32_t zeros[2] = {0, 0};
  float dummy = 0.0f;
  PagedKvBatch b{1, zeros, zeros, zeros, zeros};
  PagedKvLayer kv{&dummy, &dummy, GgmlType::kF16, 16};
  const AttentionShape ok_shape{8, 2, 64, 0.125f};
  auto code = [](const Status& st) { return st.ok() ? std::string("ok") : st.error().message; };

  AttentionShape d96 = ok_shape;
  d96.head_dim = 96;
  const Status st_dim = prefill_attention(&dummy, kv, b, d96, 1, &dummy, nullptr);
  ASSERT_FALSE(st_dim.ok());
  EXPECT_EQ(st_dim.error().code, ErrorCode::kUnsupported) << code(st_dim);
  AttentionShape ragged = ok_shape;
  ragged.n_head_kv = 3;
  const Status st_gqa = decode_attention(&dummy, kv, b, ragged, {}, nullptr, &dummy, nullptr);
  ASSERT_FALSE(st_gqa.ok());
  EXPECT_EQ(st_gqa.error().code, ErrorCode::kInvalidInput) << code(st_gqa);
  PagedKvLayer q4_1 = kv;  // a CPU weight type that no KV cache uses
  q4_1.type = GgmlType::kQ4_1;
  const Status st_q4_1 = store_kv(&dummy, &dummy, 1, q4_1, b, ok_shape, nullptr, nullptr);
  ASSERT_FALSE(st_q4_1.ok());
  EXPECT_EQ(st_q4_1.error().code, ErrorCode::kUnsupported) << code(st_q4_1);
  EXPECT_FALSE(decode_attention(&dummy, kv, b, ok_shape, {0, 64}, nullptr, &dummy, nullptr).ok());
  EXPECT_FALSE(decode_attention(&dummy, kv, b, ok_shape, {4, 0}, &dummy, &dummy, nullptr).ok());
  EXPECT_FALSE(decode_attention(&dummy, kv, b, ok_shape, {4, 64}, nullptr, &dummy, nullptr).ok());
  EXPECT_FALSE(prefill_attention(&dummy, kv, b, ok_shape, 0, &dummy, nullptr).ok());
  const StoreKvRope odd_rot{&dummy, 7, RopeOrdering::kNormal};
  EXPECT_FALSE(store_kv(&dummy, &dummy, 1, kv, b, ok_shape, &odd_rot, nullptr).ok());
  PagedKvLayer bad_block = kv;
  bad_block.block_size = 0;
  EXPECT_FALSE(prefill_attention(&dummy, bad_block, b, ok_shape, 1, &dummy, nullptr).ok());
  // An empty batch is a no-op that launches nothing.
  PagedKvBatch empty;
  EXPECT_TRUE(prefill_attention(&dummy, kv, empty, ok_shape, 1, &dummy, nullptr).ok());
}

TEST(AttentionOpArgs, DecodePlanCoversTheContextAndSizesTheWorkspace) {
  const AttentionShape llama3{32, 8, 128, 0.088f};
  // A batch that gives 132 SMs 8 blocks each by itself needs no split; half of it does.
  EXPECT_EQ(plan_decode_attention(132, llama3, 8192, 132).n_splits, 1);
  EXPECT_GT(plan_decode_attention(66, llama3, 8192, 132).n_splits, 1);
  // Chunks do not grow with the planned context until 64 splits would not cover it.
  EXPECT_EQ(plan_decode_attention(32, llama3, 8192, 132).kv_chunk, 256);
  EXPECT_EQ(plan_decode_attention(32, llama3, 32768, 132).kv_chunk, 512);
  EXPECT_EQ(plan_decode_attention(1, llama3, 200, 132).n_splits, 1);  // too short to split
  for (int32_t len : {257, 1000, 8192, 32768}) {
    const DecodeAttentionPlan p = plan_decode_attention(1, llama3, len, 132);
    SCOPED_TRACE("max_kv_len " + std::to_string(len));
    ASSERT_GT(p.n_splits, 1);
    EXPECT_GE(p.kv_chunk, 256);
    EXPECT_EQ(p.kv_chunk % 64, 0);
    EXPECT_GE(static_cast<int64_t>(p.n_splits) * p.kv_chunk, len);
    EXPECT_LT(static_cast<int64_t>(p.n_splits - 1) * p.kv_chunk, len);  // no empty split
    EXPECT_EQ(decode_attention_workspace_bytes(3, llama3, p),
              size_t{3} * 32 * p.n_splits * (128 + 2) * sizeof(float));
  }
  EXPECT_EQ(decode_attention_workspace_bytes(3, llama3, DecodeAttentionPlan{}), 0u);
}

}  // namespace
}  // namespace novaserve::gpu
