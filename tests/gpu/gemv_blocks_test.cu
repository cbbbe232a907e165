// gemv_blocks (gemv_blocks.h), the decode GEMV over ggml's block layouts, for every type it takes
// (F16, BF16, Q8_0, Q4_K, Q5_K, Q6_K): against the CPU's exact f32 matmul under the GEMV bound of
// gemv_reference.h at every row count of one launch and over several launches, on rows of one
// block, odd block counts, Llama-3-8B's 4096 and 14336 inputs and 1 to 5000 outputs; each row's
// bits the same alone as in a batch (batch invariance); repeated launches bit-identical; random
// bytes in every scale and quant field decoded as the CPU decodes them; bad arguments refused
// with a Status before any launch; and a timing report on Llama-3-8B's shapes beside the generic
// gpu::gemv (printed, not asserted).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "backend/cpu/matmul.h"
#include "backend/gpu/kernels/gemv_blocks.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "common/thread_pool.h"
#include "gemv_reference.h"
#include "gpu_test_util.h"

namespace novaserve::gpu::test {
namespace {

const GgmlType kTypes[] = {GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                           GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};

std::string type_name(GgmlType type) {
  return std::string(ggml_type_traits(type).name);
}

// {n_in, n_out}: one block (32 values for F16/BF16, the CPU reference's smallest row), 3, 5 and 7
// blocks (Q6_K's and Q8_0's odd block counts leave every other row 2 bytes off a 4-byte
// boundary), Llama-3-8B's two input widths (one and 3.5 pieces per thread for the K-quants), and
// 5000 outputs.
std::vector<std::pair<int64_t, int64_t>> shapes(GgmlType type) {
  const int64_t unit = std::max<int64_t>(32, ggml_type_traits(type).block_elems);
  return {{unit, 1},    {3 * unit, 5}, {5 * unit, 37},  {7 * unit, 130},
          {4096, 1030}, {14336, 67},   {3 * unit, 5000}};
}

class GemvBlocksTest : public GpuTest {
 protected:
  // y [rows][w.n_out] of gemv_blocks on the first `rows` rows of d_x.
  std::vector<float> run(const WeightMatrix& w, const DeviceBuffer<float>& d_x, int64_t rows) {
    DeviceBuffer<float> d_y(static_cast<size_t>(rows * w.n_out));
    const Status st = gemv_blocks(w, d_x.get(), rows, d_y.get(), stream_);
    EXPECT_TRUE(st.ok()) << st.error().message;
    EXPECT_EQ(cudaStreamSynchronize(stream_), cudaSuccess);
    return d_y.download();
  }

  // The weights `w` (type, n_in, n_out) on 11 random rows: every row alone, then 1..8 rows (one
  // launch each) and all 11 (two launches): each against the CPU's exact matmul, each row's bits
  // against the row alone.
  void expect_matches_cpu(const std::vector<uint8_t>& w, GgmlType type, int64_t n_in,
                          int64_t n_out) {
    constexpr int64_t kRows = 11;
    const auto x = random_floats(static_cast<size_t>(kRows * n_in), rng_);
    std::vector<float> ref(static_cast<size_t>(kRows * n_out));
    matmul(w.data(), type, n_in, n_out, x.data(), kRows, ref.data(), pool_, ActQuant::kNone);
    const DeviceBuffer<uint8_t> d_w(w);
    const DeviceBuffer<float> d_x(x);
    const WeightMatrix wm{d_w.get(), type, n_in, n_out};
    ASSERT_TRUE(gemv_blocks_takes(wm));
    const std::vector<double> magnitudes = term_magnitudes(w, type, n_in, n_out, x, kRows);
    std::vector<std::vector<float>> alone;
    for (int64_t r = 0; r < kRows; ++r) {
      const DeviceBuffer<float> d_row(
          std::vector<float>(x.begin() + r * n_in, x.begin() + (r + 1) * n_in));
      alone.push_back(run(wm, d_row, 1));
    }
    for (int64_t rows : {1, 2, 3, 4, 5, 6, 7, 8, 11}) {
      SCOPED_TRACE(::testing::Message() << "rows " << rows);
      const auto got = run(wm, d_x, rows);
      EXPECT_LT(scaled_error(got, ref, magnitudes), kGemvNmse.at(type));
      for (int64_t r = 0; r < rows; ++r) {
        EXPECT_EQ(0, std::memcmp(got.data() + r * n_out, alone[r].data(), n_out * sizeof(float)))
            << "row " << r << " differs from the row alone";
      }
    }
  }

  ThreadPool pool_{2};
};

TEST_F(GemvBlocksTest, MatchesCpuAtEveryRowCountAndIsBatchInvariant) {
  SCOPED_TRACE(seed_note());
  for (GgmlType type : kTypes) {
    for (auto [n_in, n_out] : shapes(type)) {
      SCOPED_TRACE(type_name(type) + " [" + std::to_string(n_out) + " x " + std::to_string(n_in) +
                   "]");
      const auto w = random_quantized(type, n_in, n_out, rng_);
      ASSERT_NO_FATAL_FAILURE(expect_matches_cpu(w, type, n_in, n_out));
    }
  }
}

// Random bytes in every field but the fp16 scales (which the quantizer leaves finite): all 64
// values of each packed 6-bit Q4_K/Q5_K scale and min, every fifth bit, int8 scales and quants of
// -128, every nibble, through the same CPU decode (quant/dequantize.cpp) as the reference.
TEST_F(GemvBlocksTest, DecodesEveryBitPatternLikeTheCpu) {
  SCOPED_TRACE(seed_note());
  std::uniform_int_distribution<int> byte(0, 255);
  for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
    const auto traits = ggml_type_traits(type);
    // The bytes of a block that hold fp16 scales: d (Q8_0), d and dmin (Q4_K, Q5_K), d (Q6_K).
    const auto is_scale = [&](uint32_t i) {
      return type == GgmlType::kQ6_K ? i >= 208 : i < (type == GgmlType::kQ8_0 ? 2u : 4u);
    };
    for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{traits.block_elems, 3},
                               {5 * int64_t{traits.block_elems}, 37},
                               {4096, 130}}) {
      SCOPED_TRACE(type_name(type) + " [" + std::to_string(n_out) + " x " + std::to_string(n_in) +
                   "]");
      auto w = random_quantized(type, n_in, n_out, rng_);
      for (size_t i = 0; i < w.size(); ++i) {
        if (!is_scale(static_cast<uint32_t>(i % traits.block_bytes))) {
          w[i] = static_cast<uint8_t>(byte(rng_));
        }
      }
      ASSERT_NO_FATAL_FAILURE(expect_matches_cpu(w, type, n_in, n_out));
    }
  }
}

TEST_F(GemvBlocksTest, RepeatedLaunchesGiveTheSameBits) {
  SCOPED_TRACE(seed_note());
  for (GgmlType type : kTypes) {
    for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{4096, 1030}, {14336, 67}}) {
      SCOPED_TRACE(type_name(type) + " [" + std::to_string(n_out) + " x " + std::to_string(n_in) +
                   "]");
      const DeviceBuffer<uint8_t> d_w(random_quantized(type, n_in, n_out, rng_));
      const DeviceBuffer<float> d_x(random_floats(static_cast<size_t>(8 * n_in), rng_));
      const WeightMatrix wm{d_w.get(), type, n_in, n_out};
      for (int64_t rows : {1, 8}) {
        const auto first = run(wm, d_x, rows);
        for (int i = 0; i < 3; ++i) EXPECT_TRUE(same_bits(run(wm, d_x, rows), first));
      }
    }
  }
}

// Every check comes before any device call, so this runs without a GPU.
TEST(GemvBlocksArgs, RejectsBadArgumentsWithAStatus) {
  alignas(16) static uint8_t buf[4096];
  auto* x = reinterpret_cast<float*>(buf);         // 256 floats
  auto* y = reinterpret_cast<float*>(buf + 2048);  // 256 floats
  const uint8_t* wdata = buf + 1024;               // 16-byte aligned, not read
  const WeightMatrix q4k{wdata, GgmlType::kQ4_K, 256, 2};
  const auto invalid = [](const Status& st) {
    return !st.ok() && st.error().code == ErrorCode::kInvalidInput;
  };
  EXPECT_TRUE(gemv_blocks_takes(q4k));
  EXPECT_TRUE(gemv_blocks(q4k, x, 0, y, nullptr).ok());  // no rows: nothing to launch
  EXPECT_TRUE(gemv_blocks(WeightMatrix{wdata, GgmlType::kQ4_K, 256, 0}, x, 1, y, nullptr).ok());
  EXPECT_TRUE(invalid(gemv_blocks(q4k, x, -1, y, nullptr)));
  EXPECT_TRUE(
      invalid(gemv_blocks(WeightMatrix{wdata, GgmlType::kQ4_K, -256, 2}, x, 1, y, nullptr)));
  // Types without this kernel, partial blocks, F16 rows that are not whole 16-byte words.
  for (const WeightMatrix& w :
       {WeightMatrix{wdata, GgmlType::kQ4_0, 256, 2}, WeightMatrix{wdata, GgmlType::kF32, 256, 2},
        WeightMatrix{wdata, GgmlType::kQ2_K, 256, 2}, WeightMatrix{wdata, GgmlType::kQ4_K, 300, 2},
        WeightMatrix{wdata, GgmlType::kQ6_K, 128, 2}, WeightMatrix{wdata, GgmlType::kQ8_0, 48, 2},
        WeightMatrix{wdata, GgmlType::kF16, 12, 2},
        WeightMatrix{wdata, GgmlType::kQ4_K, int64_t{1} << 31, 2},
        WeightMatrix{nullptr, GgmlType::kQ4_K, 256, 2},
        WeightMatrix{wdata + 8, GgmlType::kQ4_K, 256, 2},
        WeightMatrix{wdata + 8, GgmlType::kF16, 256, 2},
        WeightMatrix{wdata + 2, GgmlType::kQ6_K, 256, 2},
        WeightMatrix{wdata + 2, GgmlType::kQ8_0, 256, 2}}) {
    SCOPED_TRACE(type_name(w.type) + " n_in " + std::to_string(w.n_in));
    EXPECT_FALSE(gemv_blocks_takes(w));
    const Status st = gemv_blocks(w, x, 1, y, nullptr);
    EXPECT_TRUE(invalid(st));
    EXPECT_NE(st.error().message.find(type_name(w.type)), std::string::npos) << st.error().message;
  }
  // Q6_K and Q8_0 load 32-bit words: 4-byte aligned data is enough.
  EXPECT_TRUE(gemv_blocks_takes(WeightMatrix{wdata + 4, GgmlType::kQ6_K, 256, 2}));
  EXPECT_TRUE(gemv_blocks_takes(WeightMatrix{wdata + 4, GgmlType::kQ8_0, 256, 2}));
  EXPECT_TRUE(invalid(gemv_blocks(q4k, x + 1, 1, y, nullptr)));  // misaligned x
  EXPECT_TRUE(invalid(gemv_blocks(q4k, nullptr, 1, y, nullptr)));
  EXPECT_TRUE(invalid(gemv_blocks(q4k, x, 1, nullptr, nullptr)));
  EXPECT_TRUE(invalid(gemv_blocks(q4k, x, 1, x + 255, nullptr)));  // y overlaps x
}

// ---- Timing (printed only) --------------------------------------------------------------------

// Llama-3-8B's decode matrices in each type at 1, 2, 4 and 8 rows: ms per call and weight GB/s
// (weight bytes / time) of gemv_blocks and of the generic gemv, and per token for all of the
// model's matrices in that type (32 layers and the output head), for the device runs; nothing
// is asserted. Calls replay from a CUDA graph, as the runner's decode steps do, each on another
// copy of its weights in a zeroed pool (the time does not depend on the values) so that the L2
// does not serve them.
TEST_F(GemvBlocksTest, TimingOnLlama3Shapes) {
  struct Shape {
    const char* name;
    int64_t n_out, n_in;
    int per_token;  // matrices of this shape per decode step
  };
  const Shape kShapes[] = {{"q/o", 4096, 4096, 64},
                           {"k/v", 1024, 4096, 64},
                           {"gate/up", 14336, 4096, 64},
                           {"down", 4096, 14336, 32},
                           {"output", 128256, 4096, 1}};
  constexpr size_t kPool = size_t{3} << 30;  // one F16 output head is 1.05 GB
  const DeviceBuffer<uint8_t> pool(kPool);
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  std::printf("gemv_blocks vs gemv on %s (ms per call replayed from a graph; GB/s of weights)\n",
              prop.name);
  const DeviceBuffer<float> d_x(random_floats(8 * 14336, rng_));
  DeviceBuffer<float> d_y(8 * 128256);
  for (GgmlType type : kTypes) {
    for (int64_t rows : {1, 2, 4, 8}) {
      double token_ms[2] = {0, 0}, token_bytes = 0;
      for (const Shape& s : kShapes) {
        const auto bytes = static_cast<int64_t>(*ggml_row_bytes(type, s.n_in)) * s.n_out;
        const int64_t group = (bytes + 4095) / 4096 * 4096;
        const int64_t copies = std::min<int64_t>(64, static_cast<int64_t>(kPool) / group);
        // Fewer calls for the big matrices: the slow path reads a 1 GB head 8 times per call.
        const int iters = static_cast<int>(std::clamp<int64_t>((int64_t{4} << 30) / bytes, 5, 50));
        double ms[2];
        for (int generic = 0; generic < 2; ++generic) {
          cudaGraph_t graph = nullptr;
          ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
          for (int it = 0; it < iters; ++it) {
            const WeightMatrix w{pool.get() + (it % copies) * group, type, s.n_in, s.n_out};
            const Status st = generic ? gemv(w, d_x.get(), rows, d_y.get(), stream_)
                                      : gemv_blocks(w, d_x.get(), rows, d_y.get(), stream_);
            ASSERT_TRUE(st.ok()) << st.error().message;
          }
          ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
          cudaGraphExec_t exec = nullptr;
          ASSERT_EQ(graph_instantiate(&exec, graph), cudaSuccess);
          ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);  // warm-up
          cudaError_t launched = cudaSuccess;
          const float total =
              elapsed_ms(stream_, [&] { launched = cudaGraphLaunch(exec, stream_); });
          ASSERT_EQ(launched, cudaSuccess);
          (void)cudaGraphExecDestroy(exec);
          (void)cudaGraphDestroy(graph);
          ms[generic] = static_cast<double>(total) / iters;
          token_ms[generic] += ms[generic] * s.per_token;
        }
        token_bytes += static_cast<double>(bytes) * s.per_token;
        std::printf(
            "  %-5s rows %lld %-8s %6lld x %5lld: blocks %8.4f ms %6.0f GB/s | gemv "
            "%8.4f ms %6.0f GB/s\n",
            type_name(type).c_str(), static_cast<long long>(rows), s.name,
            static_cast<long long>(s.n_out), static_cast<long long>(s.n_in), ms[0],
            bytes / ms[0] * 1e-6, ms[1], bytes / ms[1] * 1e-6);
      }
      std::printf(
          "  %-5s rows %lld per token (all matrices %s): blocks %.3f ms %.0f GB/s | gemv "
          "%.3f ms %.0f GB/s\n",
          type_name(type).c_str(), static_cast<long long>(rows), type_name(type).c_str(),
          token_ms[0], token_bytes / token_ms[0] * 1e-6, token_ms[1],
          token_bytes / token_ms[1] * 1e-6);
    }
  }
}

}  // namespace
}  // namespace novaserve::gpu::test
