// Tests of the tensor-core Q4_0 decode GEMM (gpu::gemm_q4_0_mma, gemm_q4_0_mma_gpu.cu) against
// the CPU matmul, plus its determinism, row independence and batch invariance, graph replay, and
// a timing report on Llama-3-8B shapes (printed, not asserted).
//
// Two references per shape: the exact f32 CPU matmul (the GEMM rounds activations and decoded
// weights to fp16: NMSE ~1e-7, bound 1e-5 as for the fp16 BLAS path), and the same CPU matmul on
// fp16-rounded activations and F16 weights decoded as dequantize_to_f16 does, which leaves only
// the f32 summation order (NMSE ~1e-11 expected; bound 1e-8, while a weight or activation
// rounding other than nearest-even on fp16 would show ~2e-8 and a wrong nibble order ~1).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/gpu/kernels/gemm_q4_0_mma.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "common/thread_pool.h"
#include "gpu_test_util.h"
#include "quant/dequantize.h"
#include "quant/half.h"
#if defined(NOVASERVE_GPU_HAS_BLAS)
#include "backend/gpu/dispatch/gpu_blas.h"
#endif

namespace novaserve::gpu {
namespace {

using test::DeviceBuffer;
using test::nmse;
using test::random_floats;
using test::same_bits;

constexpr double kF32RefNmse = 1e-5;
constexpr double kF16RefNmse = 1e-8;
constexpr int64_t kRowCounts[] = {1, 9, 16, 17, 31, 32, 33, 64};
constexpr int64_t kMaxRows = kGemmQ4_0MmaMaxRows;

std::string plan_text(const GemmQ4_0MmaPlan& p) {
  return std::to_string(p.out_tiles) + " tiles of " + std::to_string(p.outs_per_block) +
         " outputs x " + std::to_string(p.k_splits) + " k-splits, " +
         std::to_string(p.padded_rows) + " padded rows, " + std::to_string(p.smem_bytes / 1024) +
         " KiB smem";
}

// A random Q4_0 matrix on the device in the split layout, random activations, and the CPU
// references for kMaxRows rows.
struct Case {
  int64_t n_in = 0, n_out = 0;
  std::unique_ptr<DeviceBuffer<uint8_t>> split;
  std::vector<float> x;      // [kMaxRows][n_in]
  std::vector<float> ref32;  // exact f32 CPU matmul
  std::vector<float> ref16;  // CPU matmul of fp16-rounded x and weights
};

class GemmQ4_0MmaTest : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    const WeightMatrix probe{nullptr, GgmlType::kQ4_0, 4096, 4096};
    if (!gemm_q4_0_mma_supported(probe, 32)) {
      GTEST_SKIP() << "gemm_q4_0_mma is not supported here (HIP build or a GPU before sm_80)";
    }
  }

  Case make_case(int64_t n_in, int64_t n_out, ThreadPool& pool) {
    Case c;
    c.n_in = n_in, c.n_out = n_out;
    const auto w = test::random_quantized(GgmlType::kQ4_0, n_in, n_out, rng_);
    c.x = random_floats(static_cast<size_t>(kMaxRows * n_in), rng_);
    c.ref32.resize(static_cast<size_t>(kMaxRows * n_out));
    matmul(w.data(), GgmlType::kQ4_0, n_in, n_out, c.x.data(), kMaxRows, c.ref32.data(), pool,
           ActQuant::kNone);

    std::vector<float> decoded(static_cast<size_t>(n_in * n_out));
    EXPECT_TRUE(dequantize_row(GgmlType::kQ4_0, w.data(), decoded.data(), n_in * n_out).ok());
    std::vector<uint16_t> w16(decoded.size());
    for (size_t i = 0; i < decoded.size(); ++i) w16[i] = f32_to_fp16(decoded[i]);
    std::vector<float> x16(c.x.size());
    for (size_t i = 0; i < x16.size(); ++i) x16[i] = fp16_to_f32(f32_to_fp16(c.x[i]));
    c.ref16.resize(c.ref32.size());
    matmul(w16.data(), GgmlType::kF16, n_in, n_out, x16.data(), kMaxRows, c.ref16.data(), pool,
           ActQuant::kNone);

    DeviceBuffer<uint8_t> d_w(w);
    c.split = std::make_unique<DeviceBuffer<uint8_t>>(w.size());
    EXPECT_TRUE(repack_q4_0_split(d_w.get(), n_in, n_out, c.split->get(), stream_).ok());
    sync();
    return c;
  }

  // y for the first n_rows rows of x_host.
  std::vector<float> run(const WeightMatrix& wm, const std::vector<float>& x_host, int64_t n_rows) {
    DeviceBuffer<float> d_x(x_host), d_y(static_cast<size_t>(n_rows * wm.n_out));
    const Status st = gemm_q4_0_mma(wm, d_x.get(), n_rows, d_y.get(), stream_);
    EXPECT_TRUE(st.ok()) << st.error().message;
    sync();
    return d_y.download();
  }
};

template <typename T>
std::vector<T> first_rows(const std::vector<T>& v, int64_t rows, int64_t width) {
  return std::vector<T>(v.begin(), v.begin() + rows * width);
}

TEST_F(GemmQ4_0MmaTest, MatchesCpuMatmulAndIsBatchInvariantAndDeterministic) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(0);
  // (n_in, n_out): one-stage and odd-sized matrices, K/V, Q/O and FFN-down shapes (split-K
  // clusters on sm_90), an FFN-up shape (2 splits) and a many-tile one (no split, several waves).
  const std::pair<int64_t, int64_t> shapes[] = {{128, 1},      {256, 37},     {384, 577},
                                                {1536, 300},   {4096, 1024},  {4096, 4096},
                                                {14336, 4096}, {4096, 14336}, {512, 40000}};
  for (auto [n_in, n_out] : shapes) {
    SCOPED_TRACE(::testing::Message() << "[" << n_in << " -> " << n_out << "]");
    const Case c = make_case(n_in, n_out, pool);
    const WeightMatrix wm{c.split->get(), GgmlType::kQ4_0, n_in, n_out};
    const auto plan = gemm_q4_0_mma_plan(wm, kMaxRows);
    ASSERT_TRUE(plan.ok()) << plan.error().message;

    const auto all = run(wm, c.x, kMaxRows);
    double worst32 = 0.0, worst16 = 0.0;
    for (int64_t rows : kRowCounts) {
      SCOPED_TRACE(::testing::Message() << "rows " << rows);
      const auto got = rows == kMaxRows ? all : run(wm, first_rows(c.x, rows, n_in), rows);
      const double e32 = nmse(got, first_rows(c.ref32, rows, n_out));
      const double e16 = nmse(got, first_rows(c.ref16, rows, n_out));
      // Over a handful of values the NMSE is one dot product's relative error, which
      // cancellation can inflate past any fixed bound (seen: 1.5e-5 for one output of 128
      // terms); the comparison with the fp16-rounded reference checks those results tightly.
      if (rows * n_out >= 32) EXPECT_LT(e32, kF32RefNmse);
      EXPECT_LT(e16, kF16RefNmse);
      worst32 = std::max(worst32, e32), worst16 = std::max(worst16, e16);
      // Batch invariance: the same bits as these rows inside the 64-row call.
      EXPECT_TRUE(same_bits(got, first_rows(all, rows, n_out)))
          << "a row's result changed with the number of rows in the call";
    }
    // Determinism: a second launch gives the same bits.
    EXPECT_TRUE(same_bits(run(wm, c.x, kMaxRows), all)) << "two launches differ";
    // Row independence: row 5's bits do not depend on the other rows' values.
    auto other = random_floats(c.x.size(), rng_, 3.0f);
    std::copy(c.x.begin() + 5 * n_in, c.x.begin() + 6 * n_in, other.begin() + 5 * n_in);
    const auto mixed = run(wm, other, kMaxRows);
    EXPECT_EQ(0, std::memcmp(mixed.data() + 5 * n_out, all.data() + 5 * n_out,
                             static_cast<size_t>(n_out) * sizeof(float)))
        << "row 5 changed when the other rows changed";
    std::printf("gemm_q4_0_mma [%lld -> %lld] %s: NMSE vs f32 %.2e, vs fp16-rounded %.2e\n",
                static_cast<long long>(n_in), static_cast<long long>(n_out),
                plan_text(plan.value()).c_str(), worst32, worst16);
  }
}

TEST_F(GemmQ4_0MmaTest, GraphReplayEqualsEagerLaunch) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(0);
  const int64_t n_in = 4096, n_out = 1024, rows = 32;  // split-K through a cluster on sm_90
  const Case c = make_case(n_in, n_out, pool);
  const WeightMatrix wm{c.split->get(), GgmlType::kQ4_0, n_in, n_out};
  DeviceBuffer<float> d_x(c.x), d_eager(rows * n_out), d_graph(rows * n_out);
  ASSERT_TRUE(gemm_q4_0_mma(wm, d_x.get(), rows, d_eager.get(), stream_).ok());
  sync();

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status st = gemm_q4_0_mma(wm, d_x.get(), rows, d_graph.get(), stream_);
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(graph_instantiate(&exec, graph), cudaSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  sync();
  EXPECT_TRUE(same_bits(d_graph.download(), d_eager.download()));
  EXPECT_LT(nmse(d_graph.download(), first_rows(c.ref32, rows, n_out)), kF32RefNmse);
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
}

TEST_F(GemmQ4_0MmaTest, RejectsBadArguments) {
  DeviceBuffer<uint8_t> d_w(4096 * 18);
  DeviceBuffer<float> d_x(65 * 128), d_y(65 * 64);
  const WeightMatrix ok{d_w.get(), GgmlType::kQ4_0, 128, 64};
  EXPECT_TRUE(gemm_q4_0_mma(ok, d_x.get(), 0, d_y.get(), stream_).ok());  // no-op
  const auto code = [&](const WeightMatrix& wm, const float* x, int64_t rows) {
    const Status st = gemm_q4_0_mma(wm, x, rows, d_y.get(), stream_);
    return st.ok() ? std::string("ok") : st.error().message;
  };
  EXPECT_EQ(gemm_q4_0_mma(WeightMatrix{d_w.get(), GgmlType::kQ8_0, 128, 64}, d_x.get(), 9,
                          d_y.get(), stream_)
                .error()
                .code,
            ErrorCode::kUnsupported);
  EXPECT_NE(code(WeightMatrix{d_w.get(), GgmlType::kQ4_0, 96, 64}, d_x.get(), 9), "ok");
  EXPECT_NE(code(WeightMatrix{d_w.get(), GgmlType::kQ4_0, 128, 0}, d_x.get(), 9), "ok");
  EXPECT_NE(code(WeightMatrix{d_w.get() + 2, GgmlType::kQ4_0, 128, 64}, d_x.get(), 9), "ok");
  EXPECT_NE(code(ok, d_x.get() + 1, 9), "ok");  // misaligned activations
  EXPECT_NE(code(ok, d_x.get(), 65), "ok");
  EXPECT_NE(code(ok, d_x.get(), -1), "ok");
  EXPECT_FALSE(gemm_q4_0_mma_supported(ok, 65));
  EXPECT_TRUE(gemm_q4_0_mma_supported(ok, 64));
  sync();
}

// ---- Timing (printed only) --------------------------------------------------------------------

// Weight copies cycled through so that the 50 MB L2 never holds the next call's weights.
int64_t copies_for(int64_t bytes) {
  constexpr int64_t kColdBytes = int64_t{256} << 20;
  return std::max<int64_t>(2, (kColdBytes + bytes - 1) / bytes);
}

// Microseconds per call of launch(copy) averaged over kCalls calls after a warm-up, cycling
// through n_copies weight copies.
template <typename Launch>
double time_us(cudaStream_t stream, int64_t n_copies, Launch&& launch) {
  constexpr int kWarmup = 5, kCalls = 50;
  for (int i = 0; i < kWarmup; ++i) launch(i % n_copies);
  const float ms = test::elapsed_ms(stream, [&] {
    for (int i = 0; i < kCalls; ++i) launch((kWarmup + i) % n_copies);
  });
  return 1000.0 * ms / kCalls;
}

TEST_F(GemmQ4_0MmaTest, TimingOnLlama3_8BShapes) {
  struct Shape {
    const char* name;
    int64_t n_in, n_out;
    int per_step;  // matrices of this shape per decode step (32 layers)
  };
  const Shape shapes[] = {{"q/o", 4096, 4096, 64},
                          {"k/v", 4096, 1024, 64},
                          {"gate/up", 4096, 14336, 64},
                          {"down", 14336, 4096, 32},
                          {"lm_head", 4096, 128256, 1}};
#if defined(NOVASERVE_GPU_HAS_BLAS)
  auto blas = GpuBlas::create(stream_);
  ASSERT_TRUE(blas.ok()) << blas.error().message;
  DeviceBuffer<uint8_t> blas_ws(size_t{32} << 20);
  ASSERT_TRUE((*blas)->set_workspace(blas_ws.get(), blas_ws.size()).ok());
#endif
  for (int64_t m : {16, 32, 64}) {
    double step_us = 0.0;
#if defined(NOVASERVE_GPU_HAS_BLAS)
    double step_blas_us = 0.0;
#endif
    for (const Shape& s : shapes) {
      const int64_t q4_bytes = s.n_out * (s.n_in / 32) * 18;
      const int64_t n_copies = copies_for(q4_bytes);
      // Any bytes are valid split Q4_0; 0x3c makes every scale 1.06 and every value finite.
      DeviceBuffer<uint8_t> d_w(static_cast<size_t>(n_copies * q4_bytes));
      ASSERT_EQ(cudaMemset(d_w.get(), 0x3c, d_w.size()), cudaSuccess);
      DeviceBuffer<float> d_x(random_floats(static_cast<size_t>(m * s.n_in), rng_));
      DeviceBuffer<float> d_y(static_cast<size_t>(m * s.n_out));
      const auto matrix = [&](int64_t copy) {
        return WeightMatrix{d_w.get() + copy * q4_bytes, GgmlType::kQ4_0, s.n_in, s.n_out};
      };
      const auto plan = gemm_q4_0_mma_plan(matrix(0), m);
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      const double us = time_us(stream_, n_copies, [&](int64_t copy) {
        EXPECT_TRUE(gemm_q4_0_mma(matrix(copy), d_x.get(), m, d_y.get(), stream_).ok());
      });
      step_us += us * s.per_step;
      std::printf("gemm_q4_0_mma M=%-2lld %-7s %5lld -> %-6lld %8.2f us  %7.1f GB/s  (%s)\n",
                  static_cast<long long>(m), s.name, static_cast<long long>(s.n_in),
                  static_cast<long long>(s.n_out), us, static_cast<double>(q4_bytes) / us * 1e-3,
                  plan_text(plan.value()).c_str());
#if defined(NOVASERVE_GPU_HAS_BLAS)
      const int64_t f16_bytes = s.n_out * s.n_in * 2;
      const int64_t n_copies16 = copies_for(f16_bytes);
      DeviceBuffer<__half> d_w16(static_cast<size_t>(n_copies16 * s.n_out * s.n_in));
      ASSERT_EQ(cudaMemset(d_w16.get(), 0x3c, static_cast<size_t>(n_copies16 * f16_bytes)),
                cudaSuccess);
      DeviceBuffer<__half> d_x16(static_cast<size_t>(m * s.n_in));
      ASSERT_TRUE(convert_f32_to_f16(d_x.get(), m * s.n_in, d_x16.get(), stream_).ok());
      const double blas_us = time_us(stream_, n_copies16, [&](int64_t copy) {
        EXPECT_TRUE((*blas)
                        ->gemm_f16_nt(m, s.n_out, s.n_in, d_x16.get(),
                                      d_w16.get() + copy * s.n_out * s.n_in, d_y.get())
                        .ok());
      });
      step_blas_us += blas_us * s.per_step;
      std::printf("cuBLAS f16    M=%-2lld %-7s %5lld -> %-6lld %8.2f us  %7.1f GB/s of fp16\n",
                  static_cast<long long>(m), s.name, static_cast<long long>(s.n_in),
                  static_cast<long long>(s.n_out), blas_us,
                  static_cast<double>(f16_bytes) / blas_us * 1e-3);
#endif
    }
    std::printf("Llama-3-8B matmuls per decode step at M=%lld: gemm_q4_0_mma %.3f ms",
                static_cast<long long>(m), step_us * 1e-3);
#if defined(NOVASERVE_GPU_HAS_BLAS)
    std::printf(", cuBLAS f16 %.3f ms (without the activation conversion)", step_blas_us * 1e-3);
#endif
    std::printf("\n");
  }
}

}  // namespace
}  // namespace novaserve::gpu
