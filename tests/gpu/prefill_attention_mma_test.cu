// Tests of the tensor-core prefill attention (prefill_attention_mma, prefill_attention_mma_gpu.cu)
// on F16 caches against CpuBackend::store_kv + CpuBackend::attention (attention_harness.h):
// head_dim 64 and 128, GQA groups 1, 4 and 7, block sizes 16 and 7 (pages that do not line up with
// the kernel's 64-key tiles), single sequences of 1 .. 1000 rows, a chunk of 100 rows over 1,300
// keys, a batch mixing decode rows, long prefills and padding sequences, and peaked scores; that
// gpu::prefill_attention dispatches F16 caches to it; and a timing report on Llama-3-8B shapes
// against the f32 SIMT kernel (printed, not asserted).
//
// Thresholds (NMSE, gpu_test_util.h). The kernel rounds q * scale * log2(e) and the softmax
// weights P to fp16 (round to nearest: relative error uniform within +-2^-11 of the binade, a
// variance of ~4e-8) and sums in f32; K and V are the cache's fp16 values on both sides.
// - Q's rounding perturbs each score by a normal error of variance ~4e-8 * |q|^2 |k|^2 scale^2
//   = 4e-8 for unit-normal q and k (scale = 1/sqrt(head_dim)); through the softmax that gives an
//   output NMSE of about the same, ~4e-8. P's rounding adds ~4e-8 more. So ~1e-7 against the CPU
//   on the same F16 cache; bound 1e-6. Against the CPU's F32 cache the cache's own rounding adds
//   ~1e-7 (attention_op_test.cu); bound 2e-6.
// - Peaked scores (K scaled by 4: score standard deviation 4, most rows dominated by a few keys,
//   the running max moving between tiles): Q's rounding error in a score grows with |k|^2, 16x,
//   to ~7e-7; bound 1e-5.
// A wrong mask (one future key let in per row), a lost tile or a misplaced head gives 1e-4 or
// more; a wrong fragment layout gives ~1.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attention_harness.h"
#include "backend/gpu/kernels/attention_ops.h"
#include "backend/gpu/kernels/prefill_attention_mma.h"
#include "gpu_test_util.h"

namespace novaserve::gpu::test {
namespace {

constexpr double kVsCpuF16Nmse = kMmaPrefillVsCpuF16Nmse;
constexpr double kVsCpuF32Nmse = 2e-6;
constexpr double kPeakedNmse = 1e-5;

// head_dim 64 and 128 x GQA groups 1, 4, 7 (2 KV heads) x block sizes 16 and 7.
const AttnGeometry kGeometries[] = {
    {"mha 2:2 d64 bs16", 2, 2, 64, 16},     {"gqa 8:2 d64 bs16", 8, 2, 64, 16},
    {"gqa 14:2 d64 bs16", 14, 2, 64, 16},   {"mha 2:2 d64 bs7", 2, 2, 64, 7},
    {"gqa 8:2 d64 bs7", 8, 2, 64, 7},       {"gqa 14:2 d64 bs7", 14, 2, 64, 7},
    {"mha 2:2 d128 bs16", 2, 2, 128, 16},   {"gqa 8:2 d128 bs16", 8, 2, 128, 16},
    {"gqa 14:2 d128 bs16", 14, 2, 128, 16}, {"mha 2:2 d128 bs7", 2, 2, 128, 7},
    {"gqa 8:2 d128 bs7", 8, 2, 128, 7},     {"gqa 14:2 d128 bs7", 14, 2, 128, 7},
};

enum class Kernel { kMma, kSimt, kDispatch };

class PrefillMmaTest : public GpuTest {
 protected:
  void SetUp() override {
    GpuTest::SetUp();
    if (IsSkipped()) return;
    if (!prefill_attention_mma_supported(GgmlType::kF16, 128) ||
        !prefill_attention_mma_supported(GgmlType::kF16, 64)) {
      GTEST_SKIP() << "no mma.sync here (HIP, or a device older than sm_80)";
    }
  }

  // One kernel's output for h's new rows on the GPU cache `run`; the output starts as the
  // sentinel.
  std::vector<float> attend(const AttentionHarness& h, const AttentionHarness::GpuRun& run,
                            int32_t max_new, Kernel kernel) {
    DeviceBuffer<float> out(std::vector<float>(h.q().size(), kSentinel));
    const Status st = launch(h, run, max_new, kernel, out.get());
    EXPECT_TRUE(st.ok()) << st.error().message;
    sync();
    return out.download();
  }

  Status launch(const AttentionHarness& h, const AttentionHarness::GpuRun& run, int32_t max_new,
                Kernel kernel, float* out) {
    const float* q = run.q.get();
    switch (kernel) {
      case Kernel::kMma:
        return prefill_attention_mma(q, run.layer, run.csr.batch, h.shape(), max_new, out, stream_);
      case Kernel::kSimt:
        return prefill_attention_simt(q, run.layer, run.csr.batch, h.shape(), max_new, out,
                                      stream_);
      default:
        return prefill_attention(q, run.layer, run.csr.batch, h.shape(), max_new, out, stream_);
    }
  }

  // The kernel on an F16 cache against the CPU on F16 and F32 caches, plus: every output row
  // written, padding sequences' rows exactly zero, the same bits from a one-slot grid (blocks
  // looping over row tiles) and from gpu::prefill_attention (which must dispatch here).
  void expect_matches_cpu(const AttentionHarness& h, const std::vector<SeqSpec>& seqs) {
    const auto ref16 = h.run_cpu(cpu_, GgmlType::kF16);
    const auto ref32 = h.run_cpu(cpu_, GgmlType::kF32);
    const auto run = h.store_gpu(GgmlType::kF16, stream_);
    const auto got = attend(h, *run, h.csr(1).max_new, Kernel::kMma);
    EXPECT_TRUE(std::none_of(got.begin(), got.end(), [](float x) { return x == kSentinel; }))
        << "rows left unwritten";
    EXPECT_LT(nmse(got, ref16.out), kVsCpuF16Nmse) << "vs CPU, F16 cache";
    EXPECT_LT(nmse(got, ref32.out), kVsCpuF32Nmse) << "vs CPU, F32 cache";
    for (size_t i = 0; i < seqs.size(); ++i) {
      if (!seqs[i].padding) continue;
      const auto begin = got.begin() + h.csr(1).qo_indptr[i] * h.q_dim();
      EXPECT_TRUE(std::all_of(begin, begin + h.q_dim(), [](float x) { return x == 0.0f; }))
          << "padding sequence " << i;
    }
    EXPECT_TRUE(same_bits(attend(h, *run, 1, Kernel::kMma), got)) << "one-slot grid";
    EXPECT_TRUE(same_bits(attend(h, *run, h.csr(1).max_new, Kernel::kDispatch), got))
        << "gpu::prefill_attention did not take the tensor-core kernel";
  }

  CpuBackend cpu_{0};
};

TEST_F(PrefillMmaTest, SingleSequencesMatchCpu) {
  SCOPED_TRACE(seed_note());
  for (const AttnGeometry& g : kGeometries) {
    for (int32_t n : {1, 15, 16, 17, 64, 65, 200, 1000}) {
      SCOPED_TRACE(std::string(g.name) + ", " + std::to_string(n) + " new rows");
      const std::vector<SeqSpec> seqs = {{0, n}};
      expect_matches_cpu(AttentionHarness(g, seqs, rng_), seqs);
    }
  }
}

TEST_F(PrefillMmaTest, ChunkedPrefillMatchesCpu) {
  SCOPED_TRACE(seed_note());
  // 100 new rows over 1,300 keys: every row tile starts 1,200 keys past the diagonal of the
  // first chunk; and a chunk that starts and ends inside pages and key tiles.
  for (const AttnGeometry& g : kGeometries) {
    for (const SeqSpec& s : {SeqSpec{1200, 100}, SeqSpec{333, 77}}) {
      SCOPED_TRACE(std::string(g.name) + ", " + std::to_string(s.n_new) + " rows after " +
                   std::to_string(s.pos0));
      const std::vector<SeqSpec> seqs = {s};
      expect_matches_cpu(AttentionHarness(g, seqs, rng_), seqs);
    }
  }
}

TEST_F(PrefillMmaTest, MixedBatchMatchesCpu) {
  SCOPED_TRACE(seed_note());
  // Long prefills, a chunk, decode rows over 1 .. 2,001 keys, short prompts, padding.
  const std::vector<SeqSpec> seqs = {{0, 300}, {1200, 100}, {0, 1, true}, {49, 1},
                                     {999, 1}, {0, 1},      {16, 17},     {0, 1, true},
                                     {3, 64},  {2000, 1},   {64, 65},     {0, 1, true}};
  for (const AttnGeometry& g : kGeometries) {
    SCOPED_TRACE(g.name);
    expect_matches_cpu(AttentionHarness(g, seqs, rng_), seqs);
  }
}

TEST_F(PrefillMmaTest, PeakedScoresMatchCpu) {
  SCOPED_TRACE(seed_note());
  const std::vector<SeqSpec> seqs = {{0, 500}, {700, 90}, {1500, 1}};
  for (const AttnGeometry& g : {kGeometries[7], kGeometries[5], kLlama3}) {
    SCOPED_TRACE(g.name);
    AttentionHarness h(g, seqs, rng_);
    for (int stage = 0; stage < 2; ++stage) {
      for (float& x : h.mutable_k(stage)) x *= 4.0f;
    }
    const auto ref = h.run_cpu(cpu_, GgmlType::kF16);
    const auto run = h.store_gpu(GgmlType::kF16, stream_);
    EXPECT_LT(nmse(attend(h, *run, h.csr(1).max_new, Kernel::kMma), ref.out), kPeakedNmse);
  }
}

TEST_F(PrefillMmaTest, RejectsMisalignedPools) {
  const std::vector<SeqSpec> seqs = {{0, 5}};
  const AttentionHarness h(kGeometries[0], seqs, rng_);
  const auto run = h.store_gpu(GgmlType::kF16, stream_);
  PagedKvLayer shifted = run->layer;
  shifted.v = static_cast<uint8_t*>(shifted.v) + 8;
  DeviceBuffer<float> out(h.q().size());
  const Status st = prefill_attention_mma(run->q.get(), shifted, run->csr.batch, h.shape(),
                                          h.csr(1).max_new, out.get(), stream_);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
}

// Not a pass/fail check of speed: prints the time per call (cudaEvents over 20 launches after 3
// warm-up ones) and the achieved TFLOP/s of the tensor-core and SIMT kernels on the Llama-3-8B
// shape (32:8, head_dim 128, F16 cache, block size 16): one prompt of 2,048 rows, and 4 chunks
// of 200 rows over 1,300 keys (a shared 1,100-key prefix). FLOP = 4 * head_dim * n_head * the
// keys each row attends (pos + 1: the causal triangle only). The two kernels' outputs are
// compared with each other (the SIMT kernel matches the CPU to f32 rounding).
TEST_F(PrefillMmaTest, TimingReport) {
  SCOPED_TRACE(seed_note());
  constexpr int kWarmup = 3, kIters = 20;
  struct Case {
    const char* name;
    std::vector<SeqSpec> seqs;
  };
  const Case cases[] = {
      {"1 x 2048 new rows (kv_len 2048)", {{0, 2048}}},
      {"4 x 200 new rows over kv_len 1300", std::vector<SeqSpec>(4, SeqSpec{1100, 200})},
  };
  for (const Case& c : cases) {
    const AttentionHarness h(kLlama3, c.seqs, rng_);
    const auto run = h.store_gpu(GgmlType::kF16, stream_);
    double flop = 0.0;
    for (const SeqSpec& s : c.seqs) {
      for (int32_t i = 0; i < s.n_new; ++i) flop += s.pos0 + i + 1;
    }
    flop *= 4.0 * kLlama3.head_dim * kLlama3.n_head;
    std::vector<float> outs[2];
    for (Kernel kernel : {Kernel::kMma, Kernel::kSimt}) {
      DeviceBuffer<float> out(h.q().size());
      const int32_t max_new = h.csr(1).max_new;
      for (int i = 0; i < kWarmup; ++i)
        ASSERT_TRUE(launch(h, *run, max_new, kernel, out.get()).ok());
      bool ok = true;
      const float ms = elapsed_ms(stream_, [&] {
        for (int i = 0; i < kIters; ++i) {
          ok = launch(h, *run, max_new, kernel, out.get()).ok() && ok;
        }
      });
      ASSERT_TRUE(ok);
      const double per_call = ms / kIters;
      std::printf("prefill_attention llama3-8b f16 %-34s %-4s: %8.3f ms/call, %7.2f TFLOP/s\n",
                  c.name, kernel == Kernel::kMma ? "mma" : "simt", per_call,
                  flop / (per_call * 1e-3) * 1e-12);
      outs[kernel == Kernel::kMma ? 0 : 1] = out.download();
    }
    EXPECT_LT(nmse(outs[0], outs[1]), kVsCpuF16Nmse) << c.name << ": mma vs simt";
  }
}

// Argument checks happen before any device call, so these run without a GPU too.
TEST(PrefillMmaArgs, RejectsWhatItDoesNotTake) {
  int32_t zeros[2] = {0, 0};
  float dummy = 0.0f;
  const PagedKvBatch b{1, zeros, zeros, zeros, zeros};
  const AttentionShape shape{8, 2, 64, 0.125f};
  for (GgmlType type : {GgmlType::kF32, GgmlType::kQ8_0, GgmlType::kQ4_0}) {
    EXPECT_FALSE(prefill_attention_mma_supported(type, 64));
    const PagedKvLayer kv{&dummy, &dummy, type, 16};
    const Status st = prefill_attention_mma(&dummy, kv, b, shape, 1, &dummy, nullptr);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kUnsupported) << st.error().message;
  }
  const PagedKvLayer f16{&dummy, &dummy, GgmlType::kF16, 16};
  AttentionShape d96 = shape;
  d96.head_dim = 96;
  EXPECT_FALSE(prefill_attention_mma_supported(GgmlType::kF16, 96));
  EXPECT_EQ(prefill_attention_mma(&dummy, f16, b, d96, 1, &dummy, nullptr).error().code,
            ErrorCode::kUnsupported);
  EXPECT_EQ(prefill_attention_mma(&dummy, f16, b, shape, 0, &dummy, nullptr).error().code,
            ErrorCode::kInvalidInput);
  EXPECT_EQ(prefill_attention_simt(&dummy, f16, b, shape, 0, &dummy, nullptr).error().code,
            ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace novaserve::gpu::test
