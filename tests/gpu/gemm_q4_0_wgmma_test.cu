// Tests of the Hopper W4A16 GEMM (gpu::gemm_q4_0_wgmma, gemm_q4_0_wgmma_gpu.cu; Q4_0, Q4_1, Q8_0,
// Q4_K, Q6_K)
// against the CPU matmul at every row-tile size (8 to 128 rows, and several tiles), plus its
// determinism, row independence and batch invariance, graph replay, argument checks, and a timing
// report on Llama-3-8B shapes against cuBLAS on fp16 weights and the mma.sync kernel (printed, not
// asserted). The references and the timing loop: q4_0_gemm_harness.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "backend/gpu/dispatch/gpu_matmul.h"
#include "backend/gpu/kernels/gemm_q4_0_mma.h"
#include "backend/gpu/kernels/gemm_q4_0_wgmma.h"
#include "q4_0_gemm_harness.h"
#include "quant/ggml_type.h"
#if defined(NOVASERVE_GPU_HAS_BLAS)
#include "backend/gpu/dispatch/gpu_blas.h"
#endif

namespace novaserve::gpu {
namespace {

using test::DeviceBuffer;
using test::first_rows;
using test::nmse;
using test::Q4GemmCase;
using test::random_floats;
using test::same_bits;

// Every tile size (8, 16, 32, 64, 128 rows), their edges, and two and three 128-row tiles.
constexpr int64_t kRowCounts[] = {1, 8, 9, 16, 17, 32, 33, 64, 65, 100, 128, 129, 272};
constexpr int64_t kMaxRows = 272;

std::string plan_text(const GemmQ4_0WgmmaPlan& p) {
  return std::to_string(p.out_tiles) + " tiles of 128 outputs x " + std::to_string(p.k_splits) +
         " k-splits x " + std::to_string(p.row_tiles) + " row tiles of " +
         std::to_string(p.tile_rows) + (p.serial_splits ? " (splits in turn)" : "") + ", " +
         std::to_string(p.stages) + " stages, " + std::to_string(p.smem_bytes / 1024) +
         " KiB smem, " + std::to_string(p.blocks_per_sm) + " blocks per SM";
}

class GemmQ4_0WgmmaTest : public test::GpuTest {
 protected:
  void SetUp() override {
    test::GpuTest::SetUp();
    if (IsSkipped()) return;
    const WeightMatrix probe{nullptr, GgmlType::kQ4_0, 4096, 4096};
    const auto plan = gemm_q4_0_wgmma_plan(probe, 32);
    if (!plan.ok() && plan.error().code == ErrorCode::kUnsupported) {
      GTEST_SKIP() << "gemm_q4_0_wgmma is not available here: " << plan.error().message;
    }
  }

  // y for the first n_rows rows of x_host.
  std::vector<float> run(const WeightMatrix& wm, const std::vector<float>& x_host, int64_t n_rows) {
    DeviceBuffer<float> d_x(x_host), d_y(static_cast<size_t>(n_rows * wm.n_out));
    DeviceBuffer<__half> scratch(gemm_q4_0_wgmma_scratch_bytes(n_rows, wm.n_in) / 2);
    const Status st = gemm_q4_0_wgmma(wm, d_x.get(), n_rows, d_y.get(), scratch.get(), stream_);
    EXPECT_TRUE(st.ok()) << st.error().message;
    sync();
    return d_y.download();
  }

  // The outputs of one gemm_q4_0_wgmma_multi launch over `ws` for the first n_rows rows of x.
  std::vector<std::vector<float>> run_multi(std::span<const WeightMatrix> ws, const float* x,
                                            int64_t n_rows,
                                            const GemmQ4_0WgmmaOptions& options = {}) {
    std::vector<std::unique_ptr<DeviceBuffer<float>>> bufs;
    std::vector<float*> yp;
    for (const WeightMatrix& w : ws) {
      bufs.push_back(std::make_unique<DeviceBuffer<float>>(static_cast<size_t>(n_rows * w.n_out)));
      yp.push_back(bufs.back()->get());
    }
    DeviceBuffer<__half> scratch(gemm_q4_0_wgmma_scratch_bytes(n_rows, ws[0].n_in) / 2);
    const Status st =
        gemm_q4_0_wgmma_multi(ws, x, n_rows, yp, scratch.get(), stream_, false, options);
    EXPECT_TRUE(st.ok()) << st.error().message;
    sync();
    std::vector<std::vector<float>> out;
    for (auto& b : bufs) out.push_back(b->download());
    return out;
  }

  // Every row count of kRowCounts against both CPU references, batch invariance, determinism and
  // row independence, for `type` matrices of each shape.
  void matches_cpu(GgmlType type, std::span<const std::pair<int64_t, int64_t>> shapes);

  // GgmlTypesMultiMatchesOneLaunchPerMatrix for one type.
  void kquant_multi_matches_one_launch_per_matrix(GgmlType type);

  // MatmulTakesGgmlTypesWithoutCopy for one type.
  void matmul_takes_without_copy(GgmlType type);
};

void GemmQ4_0WgmmaTest::matches_cpu(GgmlType type,
                                    std::span<const std::pair<int64_t, int64_t>> shapes) {
  ThreadPool pool(0);
  for (auto [n_in, n_out] : shapes) {
    SCOPED_TRACE(::testing::Message() << "[" << n_in << " -> " << n_out << "]");
    const Q4GemmCase c = test::make_q4_gemm_case(n_in, n_out, kMaxRows, rng_, pool, stream_, type);
    const WeightMatrix wm{c.split->get(), type, n_in, n_out};
    const auto plan = gemm_q4_0_wgmma_plan(wm, kMaxRows);
    ASSERT_TRUE(plan.ok()) << plan.error().message;

    const auto all = run(wm, c.x, kMaxRows);
    double worst32 = 0.0, worst16 = 0.0;
    for (int64_t rows : kRowCounts) {
      SCOPED_TRACE(::testing::Message() << "rows " << rows);
      const auto got = rows == kMaxRows ? all : run(wm, first_rows(c.x, rows, n_in), rows);
      const double e32 = nmse(got, first_rows(c.ref32, rows, n_out));
      const double e16 = nmse(got, first_rows(c.ref16, rows, n_out));
      // Over a handful of values the NMSE is one dot product's relative error, which
      // cancellation can inflate past any fixed bound; the fp16-rounded reference checks those
      // results tightly.
      if (rows * n_out >= 32) EXPECT_LT(e32, test::kQ4GemmF32RefNmse);
      EXPECT_LT(e16, test::kQ4GemmF16RefNmse);
      worst32 = std::max(worst32, e32), worst16 = std::max(worst16, e16);
      // Batch invariance: the same bits as these rows inside the largest call.
      EXPECT_TRUE(same_bits(got, first_rows(all, rows, n_out)))
          << "a row's result changed with the number of rows in the call";
    }
    EXPECT_TRUE(same_bits(run(wm, c.x, kMaxRows), all)) << "two launches differ";
    // Row independence: row 5's and row 200's bits do not depend on the other rows' values.
    auto other = random_floats(c.x.size(), rng_, 3.0f);
    for (int64_t r : {5, 200}) {
      std::copy(c.x.begin() + r * n_in, c.x.begin() + (r + 1) * n_in, other.begin() + r * n_in);
    }
    const auto mixed = run(wm, other, kMaxRows);
    for (int64_t r : {5, 200}) {
      EXPECT_EQ(0, std::memcmp(mixed.data() + r * n_out, all.data() + r * n_out,
                               static_cast<size_t>(n_out) * sizeof(float)))
          << "row " << r << " changed when the other rows changed";
    }
    std::printf("gemm_q4_0_wgmma %s [%lld -> %lld] %s: NMSE vs f32 %.2e, vs fp16-rounded %.2e\n",
                ggml_type_traits(type).name.data(), static_cast<long long>(n_in),
                static_cast<long long>(n_out), plan_text(plan.value()).c_str(), worst32, worst16);
  }
}

TEST_F(GemmQ4_0WgmmaTest, MatchesCpuMatmulAndIsBatchInvariantAndDeterministic) {
  SCOPED_TRACE(seed_note());
  // (n_in, n_out): one-stage and odd-sized matrices, K/V, Q/O and FFN-down shapes (split-K
  // clusters), an FFN-up shape and a many-tile one.
  const std::pair<int64_t, int64_t> shapes[] = {{128, 1},      {256, 37},     {384, 577},
                                                {1536, 300},   {4096, 1024},  {4096, 4096},
                                                {14336, 4096}, {4096, 14336}, {512, 40000}};
  matches_cpu(GgmlType::kQ4_0, shapes);
}

// Q4_K in ggml's layout: a stage is half a super-block, so a split that starts at an odd stage
// (the 14336-input shape's second of 3 k-splits on an H100 or H200 starts at stage 37) reads the
// second half's scales first.
TEST_F(GemmQ4_0WgmmaTest, Q4KMatchesCpuMatmulAndIsBatchInvariantAndDeterministic) {
  SCOPED_TRACE(seed_note());
  const std::pair<int64_t, int64_t> shapes[] = {{256, 37},     {1536, 300},   {4096, 1024},
                                                {14336, 4096}, {4096, 14336}, {512, 40000}};
  matches_cpu(GgmlType::kQ4_K, shapes);
}

// Q6_K in ggml's layout, read through aligned windows: rows of 256 inputs (210 bytes) start at
// every even offset within their 16-byte chunks, those of 1536 (1260 bytes) at 0, 4, 8 and 12,
// and the super-blocks of a row at every even offset; the 14336-input shape's odd-start split as
// for Q4_K; the last super-block's scales window runs past the end of the matrix (zero-filled).
TEST_F(GemmQ4_0WgmmaTest, Q6KMatchesCpuMatmulAndIsBatchInvariantAndDeterministic) {
  SCOPED_TRACE(seed_note());
  const std::pair<int64_t, int64_t> shapes[] = {{256, 37},     {1536, 300},   {4096, 1024},
                                                {14336, 4096}, {4096, 14336}, {512, 40000}};
  matches_cpu(GgmlType::kQ6_K, shapes);
}

// Q8_0 and Q4_1 in ggml's layout, read through one window per stage: a Q8_0 stage is 136 bytes,
// so odd stages start 8 bytes into a chunk.
TEST_F(GemmQ4_0WgmmaTest, Q8_0AndQ4_1MatchCpuMatmulAndAreBatchInvariantAndDeterministic) {
  SCOPED_TRACE(seed_note());
  const std::pair<int64_t, int64_t> shapes[] = {{128, 1},     {384, 577},    {1536, 300},
                                                {4096, 1024}, {14336, 4096}, {4096, 14336}};
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_1}) {
    SCOPED_TRACE(ggml_type_traits(type).name);
    matches_cpu(type, shapes);
  }
}

// The windowed types need only their blocks' alignment (2 bytes for Q6_K and Q8_0, 4 for Q4_1;
// GGUF tensors are 32-byte aligned, but a matrix inside a bigger buffer need not be): the same
// matrix at such offsets past an aligned address gives the aligned call's bits, at a
// cluster-split and a tile-of-128 row count.
TEST_F(GemmQ4_0WgmmaTest, WindowedTypesAtOffsetsGiveTheSameBits) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(0);
  const int64_t n_out = 300;
  struct Case {
    GgmlType type;
    int64_t n_in;
    std::vector<int64_t> shifts;
  };
  // Rows of 384 Q8_0 inputs (3 stages) put the matrix's last stage at other offsets, some with a
  // window chunk wholly past the end (copied from nowhere, zero-filled).
  for (const Case& k :
       {Case{GgmlType::kQ6_K, 1536, {2, 6}}, Case{GgmlType::kQ8_0, 1536, {2, 6}},
        Case{GgmlType::kQ8_0, 384, {2, 4, 6, 12, 14}}, Case{GgmlType::kQ4_1, 1536, {4, 12}}}) {
    const Q4GemmCase c = test::make_q4_gemm_case(k.n_in, n_out, 130, rng_, pool, stream_, k.type);
    const std::vector<uint8_t> bytes = c.split->download();
    for (int64_t shift : k.shifts) {
      SCOPED_TRACE(::testing::Message() << ggml_type_traits(k.type).name << " [" << k.n_in << " -> "
                                        << n_out << "] at offset " << shift);
      std::vector<uint8_t> shifted(static_cast<size_t>(shift), 0);
      shifted.insert(shifted.end(), bytes.begin(), bytes.end());
      DeviceBuffer<uint8_t> d_shifted(shifted);
      const WeightMatrix at{c.split->get(), k.type, k.n_in, n_out};
      const WeightMatrix off{d_shifted.get() + shift, k.type, k.n_in, n_out};
      for (int64_t rows : {9, 130}) {
        SCOPED_TRACE(::testing::Message() << "rows " << rows);
        const auto x = first_rows(c.x, rows, k.n_in);
        const auto got = run(off, x, rows);
        EXPECT_TRUE(same_bits(got, run(at, x, rows)));
        EXPECT_LT(nmse(got, first_rows(c.ref16, rows, n_out)), test::kQ4GemmF16RefNmse);
      }
    }
  }
}

// q/k/v-like matrices of each type read in ggml's layout in one launch: each matches its own launch
// within f32 rounding and the CPU, the bits do not change with the row count; two types in one
// launch are refused.
TEST_F(GemmQ4_0WgmmaTest, GgmlTypesMultiMatchesOneLaunchPerMatrix) {
  SCOPED_TRACE(seed_note());
  for (GgmlType type : {GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ8_0, GgmlType::kQ4_1}) {
    SCOPED_TRACE(ggml_type_traits(type).name);
    kquant_multi_matches_one_launch_per_matrix(type);
  }
}

void GemmQ4_0WgmmaTest::kquant_multi_matches_one_launch_per_matrix(GgmlType type) {
  ThreadPool pool(0);
  const int64_t n_in = 4096, rows = 300;
  const int64_t n_outs[] = {2048, 1000, 512};
  std::vector<Q4GemmCase> cases;
  std::vector<WeightMatrix> ws;
  for (int64_t n_out : n_outs) {  // only the first case's activations and references are used
    cases.push_back(
        test::make_q4_gemm_case(n_in, n_out, cases.empty() ? rows : 1, rng_, pool, stream_, type));
  }
  for (const Q4GemmCase& c : cases) {
    ws.push_back(WeightMatrix{c.split->get(), type, n_in, c.n_out});
  }
  // The three cases drew different activations: every matrix multiplies the first case's.
  const std::vector<float>& x = cases[0].x;
  DeviceBuffer<float> d_x(x);
  const auto multi = [&](int64_t n_rows) { return run_multi(ws, d_x.get(), n_rows); };
  const auto plan = gemm_q4_0_wgmma_plan(ws, rows);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  std::printf("gemm_q4_0_wgmma_multi %s, 3 matrices, %lld rows: %s\n",
              ggml_type_traits(type).name.data(), static_cast<long long>(rows),
              plan_text(plan.value()).c_str());
  const auto all = multi(rows);
  for (int64_t n_rows : {9, 32, 300}) {
    SCOPED_TRACE(::testing::Message() << "rows " << n_rows);
    const auto got = n_rows == rows ? all : multi(n_rows);
    EXPECT_LT(nmse(got[0], first_rows(cases[0].ref32, n_rows, n_outs[0])), test::kQ4GemmF32RefNmse);
    EXPECT_LT(nmse(got[0], first_rows(cases[0].ref16, n_rows, n_outs[0])), test::kQ4GemmF16RefNmse);
    for (size_t i = 0; i < ws.size(); ++i) {
      EXPECT_LT(nmse(got[i], run(ws[i], first_rows(x, n_rows, n_in), n_rows)), 1e-10)
          << "matrix " << i;
      EXPECT_TRUE(same_bits(got[i], first_rows(all[i], n_rows, ws[i].n_out)))
          << "a row's result changed with the number of rows in the call, matrix " << i;
    }
  }
  const WeightMatrix mixed[] = {ws[0], {ws[1].data, GgmlType::kQ4_0, n_in, 1000}};
  EXPECT_EQ(gemm_q4_0_wgmma_plan(mixed, 9).error().code, ErrorCode::kInvalidInput);
}

// Prefill-sized calls walk the k-splits in turn in one block (plan.serial_splits) instead of a
// cluster: the same sums in the same order, so a row's bits match a cluster-split call's.
TEST_F(GemmQ4_0WgmmaTest, SplitsInTurnEqualClusterSplitsBitForBit) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(0);
  struct Case {
    int64_t n_in, n_out, rows;
    GgmlType type;
  };
  // Q/O and down (3 splits) at 5 tiles of 128 rows, the last partial; K/V (8 output tiles, 8
  // splits) at 16 tiles, which its plan needs before the 8 splits go in turn; down in Q4_K, Q6_K
  // and Q8_0.
  for (const auto [n_in, n_out, n_rows, type] :
       {Case{4096, 4096, 520, GgmlType::kQ4_0}, Case{14336, 4096, 520, GgmlType::kQ4_0},
        Case{4096, 1024, 2000, GgmlType::kQ4_0}, Case{14336, 4096, 520, GgmlType::kQ4_K},
        Case{14336, 4096, 520, GgmlType::kQ6_K}, Case{14336, 4096, 520, GgmlType::kQ8_0}}) {
    SCOPED_TRACE(::testing::Message()
                 << ggml_type_traits(type).name << " [" << n_in << " -> " << n_out << "]");
    const Q4GemmCase c = test::make_q4_gemm_case(n_in, n_out, n_rows, rng_, pool, stream_, type);
    const WeightMatrix wm{c.split->get(), type, n_in, n_out};
    const auto big = gemm_q4_0_wgmma_plan(wm, n_rows);
    const auto small = gemm_q4_0_wgmma_plan(wm, 100);
    ASSERT_TRUE(big.ok() && small.ok());
    if (!big->serial_splits) {
      GTEST_SKIP() << "this GPU's multiprocessors are not filled by " << plan_text(big.value());
    }
    ASSERT_FALSE(small->serial_splits);
    ASSERT_GT(small->k_splits, 1) << "the small call must split through a cluster";
    const auto all = run(wm, c.x, n_rows);
    EXPECT_LT(nmse(all, c.ref32), test::kQ4GemmF32RefNmse);
    EXPECT_LT(nmse(all, c.ref16), test::kQ4GemmF16RefNmse);
    EXPECT_TRUE(same_bits(run(wm, first_rows(c.x, 100, n_in), 100), first_rows(all, 100, n_out)))
        << plan_text(big.value()) << " vs " << plan_text(small.value());
    EXPECT_TRUE(same_bits(run(wm, c.x, n_rows), all)) << "two launches differ";
  }
}

// q/k/v-like matrices in one launch (gemm_q4_0_wgmma_multi), and a gate/up-like pair: each
// matrix matches its own launch within f32 rounding (their k-splits differ: 2 for the 48 tiles of
// q/k/v, 3 for q alone, 8 for k alone on an H100), q matches the CPU, a partial tile in the middle
// matrix (k: 1000 outputs) lands in its own matrix, and a row's bits do not depend on the row
// count (300 rows: tiles of 128 with the splits in turn; fewer: cluster splits), at one and at
// two blocks per multiprocessor for tiles of up to 64 rows (each with half the ring; the k-splits
// do not change with it).
TEST_F(GemmQ4_0WgmmaTest, MultiMatchesOneLaunchPerMatrixAndIsBatchInvariant) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(0);
  const int64_t n_in = 4096, rows = 300;
  const Q4GemmCase cq = test::make_q4_gemm_case(n_in, 4096, rows, rng_, pool, stream_);
  const Q4GemmCase ck = test::make_q4_gemm_case(n_in, 1000, 1, rng_, pool, stream_);
  const Q4GemmCase cv = test::make_q4_gemm_case(n_in, 1024, 1, rng_, pool, stream_);
  const WeightMatrix qkv[] = {{cq.split->get(), GgmlType::kQ4_0, n_in, 4096},
                              {ck.split->get(), GgmlType::kQ4_0, n_in, 1000},
                              {cv.split->get(), GgmlType::kQ4_0, n_in, 1024}};
  DeviceBuffer<float> d_x(cq.x);
  // ys for the first ws.size() matrices of `qkv`.
  const auto multi = [&](std::span<const WeightMatrix> ws, int64_t n_rows, int blocks_per_sm) {
    return run_multi(ws, d_x.get(), n_rows, GemmQ4_0WgmmaOptions{blocks_per_sm, 0});
  };
  for (const auto& [n_mats, occupancy] : {std::pair<size_t, int>{3, 1}, {2, 1}, {3, 2}}) {
    SCOPED_TRACE(::testing::Message() << n_mats << " matrices, " << occupancy << " blocks per SM");
    const std::span<const WeightMatrix> ws(qkv, n_mats);
    const GemmQ4_0WgmmaOptions options{occupancy, 0};
    const auto plan = gemm_q4_0_wgmma_plan(ws, rows, options);
    const auto plan9 = gemm_q4_0_wgmma_plan(ws, 9, options);
    ASSERT_TRUE(plan.ok()) << plan.error().message;
    ASSERT_TRUE(plan9.ok()) << plan9.error().message;
    EXPECT_EQ(plan9->blocks_per_sm, occupancy);
    EXPECT_EQ(plan->k_splits, plan9->k_splits) << "the splits must not depend on the row count";
    std::printf("gemm_q4_0_wgmma_multi, %zu matrices, %lld rows: %s; 9 rows: %s\n", n_mats,
                static_cast<long long>(rows), plan_text(plan.value()).c_str(),
                plan_text(plan9.value()).c_str());
    const auto all = multi(ws, rows, occupancy);
    for (int64_t n_rows : {9, 32, 64, 300}) {
      SCOPED_TRACE(::testing::Message() << "rows " << n_rows);
      const auto got = n_rows == rows ? all : multi(ws, n_rows, occupancy);
      const auto x = first_rows(cq.x, n_rows, n_in);
      EXPECT_LT(nmse(got[0], first_rows(cq.ref32, n_rows, 4096)), test::kQ4GemmF32RefNmse);
      EXPECT_LT(nmse(got[0], first_rows(cq.ref16, n_rows, 4096)), test::kQ4GemmF16RefNmse);
      for (size_t i = 0; i < n_mats; ++i) {
        // Only the order of f32 additions may differ from a launch of its own.
        EXPECT_LT(nmse(got[i], run(ws[i], x, n_rows)), 1e-10) << "matrix " << i;
        if (n_rows != rows) {
          EXPECT_TRUE(same_bits(got[i], first_rows(all[i], n_rows, ws[i].n_out)))
              << "a row's result changed with the number of rows in the call, matrix " << i;
        }
      }
    }
    EXPECT_TRUE(same_bits(multi(ws, rows, occupancy)[n_mats - 1], all[n_mats - 1]))
        << "two launches differ";
  }
  const std::span<const WeightMatrix> ws(qkv);
  // Arguments the multi form refuses.
  float* const three[] = {nullptr, nullptr, nullptr};
  DeviceBuffer<__half> scratch(gemm_q4_0_wgmma_scratch_bytes(9, n_in) / 2);
  const WeightMatrix four[] = {ws[0], ws[1], ws[2], ws[0]};
  EXPECT_EQ(gemm_q4_0_wgmma_plan(four, 9).error().code, ErrorCode::kInvalidInput);
  const WeightMatrix mixed[] = {ws[0], {ws[1].data, GgmlType::kQ4_0, 512, 256}};
  EXPECT_EQ(gemm_q4_0_wgmma_plan(mixed, 9).error().code, ErrorCode::kInvalidInput);
  for (const GemmQ4_0WgmmaOptions& bad : {GemmQ4_0WgmmaOptions{3, 0}, {-1, 0}, {0, 9}, {0, -1}}) {
    EXPECT_EQ(gemm_q4_0_wgmma_plan(ws, 9, bad).error().code, ErrorCode::kInvalidInput);
  }
  const WeightMatrix one_stage{ws[0].data, GgmlType::kQ4_0, 128, 256};  // n_k 1: one split only
  EXPECT_EQ(gemm_q4_0_wgmma_plan({&one_stage, 1}, 9, {0, 2}).error().code,
            ErrorCode::kInvalidInput);
  EXPECT_TRUE(gemm_q4_0_wgmma_plan({&one_stage, 1}, 9, {0, 1}).ok());
  EXPECT_EQ(gemm_q4_0_wgmma_multi(ws, d_x.get(), 9, three, scratch.get(), stream_).error().code,
            ErrorCode::kInvalidInput);
  EXPECT_EQ(
      gemm_q4_0_wgmma_multi(ws, d_x.get(), 9, {three, 2}, scratch.get(), stream_).error().code,
      ErrorCode::kInvalidInput);
}

#if defined(NOVASERVE_GPU_HAS_BLAS)
// GpuMatmul's BLAS on a transient fp16 copy of a split Q4_0 matrix
// (NOVASERVE_GPU_DEQUANT_MIN_ROWS, read at create(); unset again after), plain and accumulating:
// both match the CPU within the fp16 GEMM bound.
TEST_F(GemmQ4_0WgmmaTest, DequantBlasMatchesCpu) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(0);
  const int64_t n_in = 4096, n_out = 1000, rows = 300;
  const Q4GemmCase c = test::make_q4_gemm_case(n_in, n_out, rows, rng_, pool, stream_);
  const WeightMatrix wm{c.split->get(), GgmlType::kQ4_0, n_in, n_out};
  setenv("NOVASERVE_GPU_DEQUANT_MIN_ROWS", "9", 1);
  auto mm = GpuMatmul::create(stream_);
  unsetenv("NOVASERVE_GPU_DEQUANT_MIN_ROWS");
  ASSERT_TRUE(mm.ok()) << mm.error().message;
  DeviceBuffer<float> d_x(c.x), d_y(static_cast<size_t>(rows * n_out));
  ASSERT_TRUE((*mm)->run(wm, nullptr, d_x.get(), rows, d_y.get(), true).ok());
  sync();
  const auto y = d_y.download();
  EXPECT_LT(nmse(y, c.ref32), test::kQ4GemmF32RefNmse);
  EXPECT_LT(nmse(y, c.ref16), test::kQ4GemmF16RefNmse);
  ASSERT_TRUE((*mm)->accumulates(wm, nullptr, rows, true));
  ASSERT_TRUE((*mm)->accumulate(wm, nullptr, d_x.get(), rows, d_y.get()).ok());
  sync();
  std::vector<float> twice(c.ref16.size());
  for (size_t i = 0; i < twice.size(); ++i) twice[i] = 2.0f * c.ref16[i];
  EXPECT_LT(nmse(d_y.download(), twice), test::kQ4GemmF16RefNmse);
}
#endif

#if defined(NOVASERVE_GPU_HAS_BLAS)
// GpuMatmul with a Q4_1, Q8_0, Q4_K or Q6_K matrix on a device where the wgmma GEMM takes it: no
// fp16 copy, and run() without one (9 and 300 rows), accumulate() and run_multi() match the CPU;
// with NOVASERVE_GPU_WGMMA_MAX_ROWS=0 (the A/B switch back to fp16 copies) it needs a copy again.
TEST_F(GemmQ4_0WgmmaTest, MatmulTakesGgmlTypesWithoutCopy) {
  SCOPED_TRACE(seed_note());
  for (GgmlType type : {GgmlType::kQ4_1, GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K}) {
    SCOPED_TRACE(ggml_type_traits(type).name);
    matmul_takes_without_copy(type);
  }
}

void GemmQ4_0WgmmaTest::matmul_takes_without_copy(GgmlType type) {
  ThreadPool pool(0);
  const int64_t n_in = 4096, n_out = 1000, rows = 300;
  const Q4GemmCase c = test::make_q4_gemm_case(n_in, n_out, rows, rng_, pool, stream_, type);
  const WeightMatrix wm{c.split->get(), type, n_in, n_out};
  auto mm = GpuMatmul::create(stream_);
  ASSERT_TRUE(mm.ok()) << mm.error().message;
  EXPECT_FALSE((*mm)->needs_f16_copy(wm));
  DeviceBuffer<float> d_x(c.x), d_y(static_cast<size_t>(rows * n_out));
  for (int64_t n : {int64_t{9}, rows}) {
    SCOPED_TRACE(::testing::Message() << "rows " << n);
    ASSERT_TRUE((*mm)->run(wm, nullptr, d_x.get(), n, d_y.get(), false).ok());
    sync();
    const auto y = first_rows(d_y.download(), n, n_out);
    EXPECT_LT(nmse(y, first_rows(c.ref32, n, n_out)), test::kQ4GemmF32RefNmse);
    EXPECT_LT(nmse(y, first_rows(c.ref16, n, n_out)), test::kQ4GemmF16RefNmse);
  }
  ASSERT_TRUE((*mm)->accumulates(wm, nullptr, rows, false));
  ASSERT_TRUE((*mm)->accumulate(wm, nullptr, d_x.get(), rows, d_y.get()).ok());
  sync();
  std::vector<float> twice(c.ref16.size());
  for (size_t i = 0; i < twice.size(); ++i) twice[i] = 2.0f * c.ref16[i];
  EXPECT_LT(nmse(d_y.download(), twice), test::kQ4GemmF16RefNmse);
  const WeightMatrix pair[] = {wm, wm};
  ASSERT_TRUE((*mm)->takes_wgmma_multi(pair, rows));
  DeviceBuffer<float> d_y2(static_cast<size_t>(rows * n_out));
  float* const ys[] = {d_y.get(), d_y2.get()};
  ASSERT_TRUE((*mm)->run_multi(pair, d_x.get(), rows, ys).ok());
  sync();
  EXPECT_LT(nmse(d_y.download(), c.ref16), test::kQ4GemmF16RefNmse);
  EXPECT_LT(nmse(d_y2.download(), c.ref16), test::kQ4GemmF16RefNmse);
  setenv("NOVASERVE_GPU_WGMMA_MAX_ROWS", "0", 1);
  auto copies = GpuMatmul::create(stream_);
  unsetenv("NOVASERVE_GPU_WGMMA_MAX_ROWS");
  ASSERT_TRUE(copies.ok()) << copies.error().message;
  EXPECT_TRUE((*copies)->needs_f16_copy(wm));
}
#endif

TEST_F(GemmQ4_0WgmmaTest, GraphReplayEqualsEagerLaunch) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(0);
  const int64_t n_in = 4096, n_out = 1024, rows = 40;  // split-K through a cluster
  const Q4GemmCase c = test::make_q4_gemm_case(n_in, n_out, rows, rng_, pool, stream_);
  const WeightMatrix wm{c.split->get(), GgmlType::kQ4_0, n_in, n_out};
  DeviceBuffer<float> d_x(c.x), d_eager(rows * n_out), d_graph(rows * n_out);
  DeviceBuffer<__half> scratch(gemm_q4_0_wgmma_scratch_bytes(rows, n_in) / 2);
  ASSERT_TRUE(gemm_q4_0_wgmma(wm, d_x.get(), rows, d_eager.get(), scratch.get(), stream_).ok());
  sync();

  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status st = gemm_q4_0_wgmma(wm, d_x.get(), rows, d_graph.get(), scratch.get(), stream_);
  ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(graph_instantiate(&exec, graph), cudaSuccess);
  for (int i = 0; i < 3; ++i) ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);
  sync();
  EXPECT_TRUE(same_bits(d_graph.download(), d_eager.download()));
  EXPECT_LT(nmse(d_graph.download(), c.ref32), test::kQ4GemmF32RefNmse);
  (void)cudaGraphExecDestroy(exec);
  (void)cudaGraphDestroy(graph);
}

// The transient fp16 copy behind GpuMatmul's dequant path: the bits dequantize_to_f16 gives for
// the matrix in ggml's layout.
TEST_F(GemmQ4_0WgmmaTest, SplitDequantMatchesDequantizeToF16) {
  SCOPED_TRACE(seed_note());
  const int64_t n_in = 4096, n_out = 300;
  const auto w = test::random_quantized(GgmlType::kQ4_0, n_in, n_out, rng_);
  DeviceBuffer<uint8_t> d_w(w), d_split(w.size());
  ASSERT_TRUE(repack_q4_0_split(d_w.get(), n_in, n_out, d_split.get(), stream_).ok());
  DeviceBuffer<__half> ref(static_cast<size_t>(n_in * n_out)), got(ref.size());
  ASSERT_TRUE(
      dequantize_to_f16(WeightMatrix{d_w.get(), GgmlType::kQ4_0, n_in, n_out}, ref.get(), stream_)
          .ok());
  ASSERT_TRUE(dequantize_q4_0_split_to_f16(
                  WeightMatrix{d_split.get(), GgmlType::kQ4_0, n_in, n_out}, got.get(), stream_)
                  .ok());
  sync();
  const auto a = ref.download(), b = got.download();
  EXPECT_EQ(0, std::memcmp(a.data(), b.data(), a.size() * sizeof(__half)));
}

TEST_F(GemmQ4_0WgmmaTest, RejectsBadArguments) {
  DeviceBuffer<uint8_t> d_w(4096 * 18);
  DeviceBuffer<float> d_x(65 * 128), d_y(65 * 64);
  DeviceBuffer<__half> scratch(128 * 128);
  const WeightMatrix ok{d_w.get(), GgmlType::kQ4_0, 128, 64};
  EXPECT_TRUE(gemm_q4_0_wgmma(ok, d_x.get(), 0, d_y.get(), scratch.get(), stream_).ok());
  const auto code = [&](const WeightMatrix& wm, const float* x, int64_t rows, __half* s) {
    const Status st = gemm_q4_0_wgmma(wm, x, rows, d_y.get(), s, stream_);
    return st.ok() ? std::string("ok") : st.error().message;
  };
  EXPECT_EQ(gemm_q4_0_wgmma(WeightMatrix{d_w.get(), GgmlType::kQ5_K, 256, 64}, d_x.get(), 9,
                            d_y.get(), scratch.get(), stream_)
                .error()
                .code,
            ErrorCode::kUnsupported);
  EXPECT_NE(code(WeightMatrix{d_w.get(), GgmlType::kQ4_0, 96, 64}, d_x.get(), 9, scratch.get()),
            "ok");
  // Weights: (type, byte offset from an aligned address, n_in, n_out, whether taken). Q4_0 takes
  // stages of 128 inputs, Q4_K and Q6_K whole super-blocks of 256; Q4_0 and Q4_K need 16-byte
  // alignment, Q6_K and Q8_0 2-byte, Q4_1 4-byte.
  struct WeightCase {
    GgmlType type;
    int64_t offset, n_in, n_out;
    bool ok;
  };
  for (const WeightCase& k : {WeightCase{GgmlType::kQ4_K, 0, 128, 64, false},
                              WeightCase{GgmlType::kQ6_K, 0, 128, 64, false},
                              WeightCase{GgmlType::kQ6_K, 1, 256, 64, false},
                              WeightCase{GgmlType::kQ6_K, 2, 256, 64, true},
                              WeightCase{GgmlType::kQ8_0, 0, 96, 64, false},
                              WeightCase{GgmlType::kQ8_0, 1, 128, 64, false},
                              WeightCase{GgmlType::kQ4_1, 2, 128, 64, false},
                              WeightCase{GgmlType::kQ4_1, 4, 128, 64, true},
                              WeightCase{GgmlType::kQ4_0, 0, 128, 0, false},
                              WeightCase{GgmlType::kQ4_0, 2, 128, 64, false}}) {
    SCOPED_TRACE(::testing::Message() << ggml_type_traits(k.type).name << " at offset " << k.offset
                                      << ", " << k.n_in << " x " << k.n_out);
    const std::string got = code(WeightMatrix{d_w.get() + k.offset, k.type, k.n_in, k.n_out},
                                 d_x.get(), 9, scratch.get());
    if (k.ok) {
      EXPECT_EQ(got, "ok");
    } else {
      EXPECT_NE(got, "ok");
    }
  }
  EXPECT_NE(code(ok, d_x.get() + 1, 9, scratch.get()), "ok");  // misaligned activations
  EXPECT_NE(code(ok, d_x.get(), 9, nullptr), "ok");
  EXPECT_NE(code(ok, d_x.get(), -1, scratch.get()), "ok");
  sync();
}

// ---- Timing (printed only) --------------------------------------------------------------------

TEST_F(GemmQ4_0WgmmaTest, TimingOnLlama3_8BShapes) {
  struct Shape {
    const char* name;
    int64_t n_in, n_out;
    int per_step;  // matrices of this shape per forward step (32 layers)
  };
  const Shape shapes[] = {{"q/o", 4096, 4096, 64},
                          {"k/v", 4096, 1024, 64},
                          {"gate/up", 4096, 14336, 64},
                          {"down", 14336, 4096, 32}};
#if defined(NOVASERVE_GPU_HAS_BLAS)
  auto blas = GpuBlas::create(stream_);
  ASSERT_TRUE(blas.ok()) << blas.error().message;
  DeviceBuffer<uint8_t> blas_ws(size_t{32} << 20);
  ASSERT_TRUE((*blas)->set_workspace(blas_ws.get(), blas_ws.size()).ok());
#endif
  // NOVASERVE_TIMING_ROWS=M times only that row count (for a profiler run on one shape).
  std::vector<int64_t> row_counts = {8, 16, 32, 64, 128, 256, 512, 1024, 2048};
  if (const char* env = std::getenv("NOVASERVE_TIMING_ROWS"); env != nullptr) {
    row_counts = {std::atoll(env)};
    ASSERT_GT(row_counts[0], 0) << "NOVASERVE_TIMING_ROWS=" << env;
  }
  for (int64_t m : row_counts) {
    double step_wg = 0.0, step_pairs = 0.0, step_mma = 0.0, step_blas = 0.0, step_deq = 0.0;
    double step_q4k = 0.0, step_q6k = 0.0, step_q8 = 0.0;
    for (const Shape& s : shapes) {
      const int64_t q4_bytes = s.n_out * (s.n_in / 32) * 18;
      const int64_t n_copies = test::cold_copies_for(q4_bytes);
      // Any bytes are valid split Q4_0; 0x3c makes every scale 1.06 and every value finite.
      DeviceBuffer<uint8_t> d_w(static_cast<size_t>(n_copies * q4_bytes));
      ASSERT_EQ(cudaMemset(d_w.get(), 0x3c, d_w.size()), cudaSuccess);
      DeviceBuffer<float> d_x(random_floats(static_cast<size_t>(m * s.n_in), rng_));
      DeviceBuffer<float> d_y(static_cast<size_t>(m * s.n_out));
      DeviceBuffer<__half> scratch(gemm_q4_0_wgmma_scratch_bytes(m, s.n_in) / 2);
      const auto matrix = [&](int64_t copy) {
        return WeightMatrix{d_w.get() + copy * q4_bytes, GgmlType::kQ4_0, s.n_in, s.n_out};
      };
      const auto plan = gemm_q4_0_wgmma_plan(matrix(0), m);
      ASSERT_TRUE(plan.ok()) << plan.error().message;
      const double us = test::time_us(stream_, n_copies, [&](int64_t copy) {
        EXPECT_TRUE(
            gemm_q4_0_wgmma(matrix(copy), d_x.get(), m, d_y.get(), scratch.get(), stream_).ok());
      });
      step_wg += us * s.per_step;
      const double flops = 2.0 * static_cast<double>(m * s.n_in * s.n_out);
      std::printf(
          "wgmma  M=%-4lld %-7s %5lld -> %-6lld %9.2f us %7.1f GB/s Q4_0 %6.1f TFLOP/s (%s)\n",
          static_cast<long long>(m), s.name, static_cast<long long>(s.n_in),
          static_cast<long long>(s.n_out), us, static_cast<double>(q4_bytes) / us * 1e-3,
          flops / us * 1e-6, plan_text(plan.value()).c_str());
      // k and v, or gate and up, in one launch (gemm_q4_0_wgmma_multi; two copies of the matrix
      // stand in for the pair), which is what the runner issues.
      double pair_us = 2.0 * us;
      if (s.per_step == 64 && s.n_out != s.n_in) {
        DeviceBuffer<float> d_y2(static_cast<size_t>(m * s.n_out));
        pair_us = test::time_us(stream_, n_copies, [&](int64_t copy) {
          const WeightMatrix ws[] = {matrix(copy), matrix((copy + 1) % n_copies)};
          float* const ys[] = {d_y.get(), d_y2.get()};
          EXPECT_TRUE(gemm_q4_0_wgmma_multi(ws, d_x.get(), m, ys, scratch.get(), stream_).ok());
        });
        std::printf("wgmma  M=%-4lld %-7s both in one launch: %9.2f us (%.2f us per matrix)\n",
                    static_cast<long long>(m), s.name, pair_us, pair_us / 2);
      }
      step_pairs += pair_us * s.per_step / 2;
      // The same shape in Q4_K, Q6_K and Q8_0 (ggml's layouts; 0x3c bytes: finite scales, mins
      // and values).
      for (GgmlType kq : {GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kQ8_0}) {
        const int64_t kq_bytes =
            s.n_out * static_cast<int64_t>(*ggml_row_bytes(kq, static_cast<uint64_t>(s.n_in)));
        const int64_t k_copies = test::cold_copies_for(kq_bytes);
        DeviceBuffer<uint8_t> d_k(static_cast<size_t>(k_copies * kq_bytes));
        ASSERT_EQ(cudaMemset(d_k.get(), 0x3c, d_k.size()), cudaSuccess);
        const double k_us = test::time_us(stream_, k_copies, [&](int64_t copy) {
          const WeightMatrix wk{d_k.get() + copy * kq_bytes, kq, s.n_in, s.n_out};
          EXPECT_TRUE(gemm_q4_0_wgmma(wk, d_x.get(), m, d_y.get(), scratch.get(), stream_).ok());
        });
        (kq == GgmlType::kQ4_K   ? step_q4k
         : kq == GgmlType::kQ6_K ? step_q6k
                                 : step_q8) += k_us * s.per_step;
        std::printf("wgmma  M=%-4lld %-7s %s %9.2f us %7.1f GB/s\n", static_cast<long long>(m),
                    s.name, ggml_type_traits(kq).name.data(), k_us,
                    static_cast<double>(kq_bytes) / k_us * 1e-3);
      }
      if (m <= kGemmQ4_0MmaMaxRows && gemm_q4_0_mma_supported(matrix(0), m)) {
        const double mma_us = test::time_us(stream_, n_copies, [&](int64_t copy) {
          EXPECT_TRUE(gemm_q4_0_mma(matrix(copy), d_x.get(), m, d_y.get(), stream_).ok());
        });
        step_mma += mma_us * s.per_step;
        std::printf("mma    M=%-4lld %-7s %9.2f us\n", static_cast<long long>(m), s.name, mma_us);
      }
#if defined(NOVASERVE_GPU_HAS_BLAS)
      const int64_t f16_bytes = s.n_out * s.n_in * 2;
      const int64_t n_copies16 = test::cold_copies_for(f16_bytes);
      DeviceBuffer<__half> d_w16(static_cast<size_t>(n_copies16 * s.n_out * s.n_in));
      ASSERT_EQ(cudaMemset(d_w16.get(), 0x3c, static_cast<size_t>(n_copies16 * f16_bytes)),
                cudaSuccess);
      DeviceBuffer<__half> d_x16(static_cast<size_t>(m * s.n_in));
      const double blas_us = test::time_us(stream_, n_copies16, [&](int64_t copy) {
        EXPECT_TRUE(convert_f32_to_f16(d_x.get(), m * s.n_in, d_x16.get(), stream_).ok());
        EXPECT_TRUE((*blas)
                        ->gemm_f16_nt(m, s.n_out, s.n_in, d_x16.get(),
                                      d_w16.get() + copy * s.n_out * s.n_in, d_y.get())
                        .ok());
      });
      step_blas += blas_us * s.per_step;
      std::printf("cuBLAS M=%-4lld %-7s %9.2f us %6.1f TFLOP/s (fp16 weights, x converted)\n",
                  static_cast<long long>(m), s.name, blas_us, flops / blas_us * 1e-6);
      if (m >=
          64) {  // BLAS on a transient fp16 copy decoded just before (GpuMatmul's kDequantBlas)
        DeviceBuffer<__half> d_tmp(static_cast<size_t>(s.n_out * s.n_in));
        const double deq_us = test::time_us(stream_, n_copies, [&](int64_t copy) {
          EXPECT_TRUE(dequantize_q4_0_split_to_f16(matrix(copy), d_tmp.get(), stream_).ok());
          EXPECT_TRUE(convert_f32_to_f16(d_x.get(), m * s.n_in, d_x16.get(), stream_).ok());
          EXPECT_TRUE(
              (*blas)->gemm_f16_nt(m, s.n_out, s.n_in, d_x16.get(), d_tmp.get(), d_y.get()).ok());
        });
        step_deq += deq_us * s.per_step;
        std::printf("deq+BLAS M=%-4lld %-7s %9.2f us %6.1f TFLOP/s (transient fp16 copy)\n",
                    static_cast<long long>(m), s.name, deq_us, flops / deq_us * 1e-6);
      }
#endif
    }
    std::printf(
        "Llama-3-8B matmuls per step at M=%lld (no head): wgmma %.3f ms (k+v and gate+up as "
        "pairs: %.3f ms), wgmma Q4_K %.3f ms, Q6_K %.3f ms, Q8_0 %.3f ms, mma %.3f ms, cuBLAS "
        "f16 %.3f ms, dequant + cuBLAS %.3f ms (0: not run)\n",
        static_cast<long long>(m), step_wg * 1e-3, step_pairs * 1e-3, step_q4k * 1e-3,
        step_q6k * 1e-3, step_q8 * 1e-3, step_mma * 1e-3, step_blas * 1e-3, step_deq * 1e-3);
  }
}

// The launches a Llama-3-8B decode step issues (q/k/v together, o, gate/up together, down) at
// every k-split count and both occupancies: the data behind the plan's defaults. Prints only;
// NOVASERVE_WGMMA_SWEEP=1 runs it (a few seconds of GPU time that the suite does not need).
TEST_F(GemmQ4_0WgmmaTest, SweepOfSplitsAndOccupancy) {
  if (std::getenv("NOVASERVE_WGMMA_SWEEP") == nullptr) {
    GTEST_SKIP() << "timing sweep: set NOVASERVE_WGMMA_SWEEP=1 to run it";
  }
  struct Launch {
    const char* name;
    int64_t n_in;
    std::vector<int64_t> n_outs;
    int per_step;  // launches per step (32 layers)
  };
  const Launch launches[] = {{"qkv", 4096, {4096, 1024, 1024}, 32},
                             {"o", 4096, {4096}, 32},
                             {"gate+up", 4096, {14336, 14336}, 32},
                             {"down", 14336, {4096}, 32}};
  for (int64_t m : {16, 32, 64, 128}) {
    double step_default = 0.0, step_best = 0.0;
    for (const Launch& l : launches) {
      // Split Q4_0 keeps the GGUF's bytes per row (q4_0_split.h).
      const auto matrix_bytes = [&](int64_t n_out) {
        return n_out * static_cast<int64_t>(*ggml_row_bytes(GgmlType::kQ4_0, l.n_in));
      };
      int64_t group_bytes = 0;
      for (int64_t n_out : l.n_outs) group_bytes += matrix_bytes(n_out);
      const int64_t n_copies = test::cold_copies_for(group_bytes);
      DeviceBuffer<uint8_t> d_w(static_cast<size_t>(n_copies * group_bytes));
      ASSERT_EQ(cudaMemset(d_w.get(), 0x3c, d_w.size()), cudaSuccess);
      DeviceBuffer<float> d_x(random_floats(static_cast<size_t>(m * l.n_in), rng_));
      std::vector<std::unique_ptr<DeviceBuffer<float>>> d_y;
      std::vector<float*> ys;
      for (int64_t n_out : l.n_outs) {
        d_y.push_back(std::make_unique<DeviceBuffer<float>>(static_cast<size_t>(m * n_out)));
        ys.push_back(d_y.back()->get());
      }
      DeviceBuffer<__half> scratch(gemm_q4_0_wgmma_scratch_bytes(m, l.n_in) / 2);
      const auto group = [&](int64_t copy) {
        std::vector<WeightMatrix> ws;
        int64_t offset = copy * group_bytes;
        for (int64_t n_out : l.n_outs) {
          ws.push_back({d_w.get() + offset, GgmlType::kQ4_0, l.n_in, n_out});
          offset += matrix_bytes(n_out);
        }
        return ws;
      };
      const auto time = [&](const GemmQ4_0WgmmaOptions& o) {
        return test::time_us(stream_, n_copies, [&](int64_t copy) {
          const auto ws = group(copy);
          EXPECT_TRUE(
              gemm_q4_0_wgmma_multi(ws, d_x.get(), m, ys, scratch.get(), stream_, false, o).ok());
        });
      };
      const auto ws0 = group(0);
      const auto def = gemm_q4_0_wgmma_plan(ws0, m);
      ASSERT_TRUE(def.ok()) << def.error().message;
      const double def_us = time({});
      double best_us = def_us;
      std::string best = "default";
      for (int occ : {1, 2}) {
        if (occ == 2 && def->tile_rows == 128) continue;
        for (int splits = 1; splits <= 8; ++splits) {
          const GemmQ4_0WgmmaOptions o{occ, splits};
          const auto plan = gemm_q4_0_wgmma_plan(ws0, m, o);
          if (!plan.ok()) continue;
          const double us = time(o);
          std::printf(
              "sweep M=%-3lld %-7s %d blocks/SM %d splits: %8.2f us (%lld blocks, %d "
              "stages)\n",
              static_cast<long long>(m), l.name, occ, splits, us,
              static_cast<long long>(plan->out_tiles * plan->row_tiles *
                                     (plan->serial_splits ? 1 : splits)),
              plan->stages);
          if (us < best_us) {
            best_us = us;
            best = std::to_string(occ) + " blocks/SM, " + std::to_string(splits) + " splits";
          }
        }
      }
      std::printf("sweep M=%-3lld %-7s default (%s): %8.2f us; best: %s, %8.2f us\n",
                  static_cast<long long>(m), l.name, plan_text(def.value()).c_str(), def_us,
                  best.c_str(), best_us);
      step_default += def_us * l.per_step;
      step_best += best_us * l.per_step;
    }
    std::printf(
        "sweep M=%lld: matmuls per step (no head) %.3f ms at the defaults, %.3f ms at each "
        "launch's best\n",
        static_cast<long long>(m), step_default * 1e-3, step_best * 1e-3);
  }
}

}  // namespace
}  // namespace novaserve::gpu
