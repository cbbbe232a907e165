// GPU op tests: every GPU op against the CPU op (src/backend/cpu, the reference) on fresh random
// inputs over several shapes, odd sizes included, in the style of ggml's test-backend-ops:
// normalized MSE, NMSE = sum((gpu - cpu)^2) / sum(cpu^2), must stay under a per-op, per-dtype
// threshold. Where the GPU kernel repeats the CPU's arithmetic with explicit roundings (embedding
// gather, RoPE rotation, bias, residual add, fp16 decode) the test demands identical bits.
//
// Inputs are random with a fresh seed each run (printed on failure; set NOVASERVE_GPU_TEST_SEED
// to replay one). Without a GPU every device test skips with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "backend/cpu/cpu_kernels.h"
#include "backend/cpu/matmul.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/gpu_status.h"
#include "common/thread_pool.h"
#include "gemv_reference.h"
#include "gpu_test_util.h"
#include "quant/dequantize.h"
#include "quant/half.h"
#if defined(NOVASERVE_GPU_HAS_BLAS)
#include "backend/gpu/dispatch/gpu_blas.h"
#endif

namespace novaserve::gpu {
namespace {

// ---- Thresholds (the GEMV's are in gemv_reference.h) ---------------------------------------
// RMSNorm: float tree sum of squares on the GPU vs double on the CPU: ~1e-7 relative in r.
constexpr double kNormNmse = 1e-12;
// RoPE table: device double pow/cos/sin (<= 2 ulp in double) vs glibc, rounded to f32.
constexpr double kRopeTableNmse = 1e-12;
// SwiGLU: device expf (<= 2 ulp) vs glibc expf.
constexpr double kSwigluNmse = 1e-12;

const GgmlType kAllTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ8_0,
                              GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1,
                              GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K};

using test::abs_scaled_error;
using test::DeviceBuffer;
using test::kGemvNmse;
using test::nmse;
using test::random_floats;
using test::random_quantized;
using test::same_bits;

// The shapes tested for a weight type: odd output counts, and for block size 1 odd inputs too.
std::vector<std::pair<int64_t, int64_t>> weight_shapes(GgmlType type) {
  switch (ggml_type_traits(type).block_elems) {
    case 1:
      return {{1, 1}, {7, 3}, {100, 37}, {576, 192}, {4097, 65}, {4096, 1030}};
    case 32:
      return {{32, 1}, {96, 37}, {576, 192}, {1536, 577}, {4096, 1030}};
    default:
      return {{256, 1}, {512, 37}, {1536, 577}, {4096, 1030}};
  }
}

class GpuOpTest : public test::GpuTest {};

TEST_F(GpuOpTest, EmbedMatchesCpuBitForBit) {
  SCOPED_TRACE(seed_note());
  for (GgmlType type : kAllTypes) {
    for (auto [n_in, n_vocab] : weight_shapes(type)) {
      SCOPED_TRACE(std::string(ggml_type_traits(type).name) + " [" + std::to_string(n_vocab) +
                   " x " + std::to_string(n_in) + "]");
      const auto table = random_quantized(type, n_in, n_vocab, rng_);
      std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_vocab - 1));
      std::vector<int32_t> ids = {0, static_cast<int32_t>(n_vocab - 1)};
      for (int i = 0; i < 5; ++i) ids.push_back(pick(rng_));
      ids.push_back(ids[2]);  // a repeated id
      std::vector<float> ref(ids.size() * n_in);
      const WeightMatrix host{table.data(), type, n_in, n_vocab};
      for (size_t r = 0; r < ids.size(); ++r) cpu::embed_row(host, ids[r], ref.data() + r * n_in);

      DeviceBuffer<uint8_t> d_table(table);
      DeviceBuffer<int32_t> d_ids(ids);
      DeviceBuffer<float> d_out(ref.size());
      const WeightMatrix dev{d_table.get(), type, n_in, n_vocab};
      const Status st =
          embed(dev, d_ids.get(), static_cast<int64_t>(ids.size()), d_out.get(), stream_);
      ASSERT_TRUE(st.ok()) << st.error().message;
      sync();
      const auto got = d_out.download();
      EXPECT_TRUE(same_bits(got, ref)) << "NMSE " << nmse(got, ref);
    }
  }
}

TEST_F(GpuOpTest, AddRmsNormMatchesCpu) {
  SCOPED_TRACE(seed_note());
  for (int64_t dim : {1, 7, 64, 576, 4096, 4097, 5120, 16388}) {
    for (int64_t rows : {1, 3, 9}) {
      for (bool with_delta : {false, true}) {
        SCOPED_TRACE("dim " + std::to_string(dim) + " rows " + std::to_string(rows) +
                     (with_delta ? " with residual" : ""));
        auto x = random_floats(rows * dim, rng_, 3.0f);
        const auto delta = random_floats(rows * dim, rng_);
        const auto w = random_floats(dim, rng_);
        const float eps = 1e-5f;
        DeviceBuffer<float> d_x(x), d_delta(delta), d_w(w), d_out(rows * dim);
        const Status st = add_rms_norm(d_x.get(), with_delta ? d_delta.get() : nullptr, d_w.get(),
                                       rows, dim, eps, d_out.get(), stream_);
        ASSERT_TRUE(st.ok()) << st.error().message;
        std::vector<float> ref(rows * dim);
        for (int64_t r = 0; r < rows; ++r) {
          cpu::add_rms_norm_row(x.data() + r * dim, with_delta ? delta.data() + r * dim : nullptr,
                                w.data(), dim, eps, ref.data() + r * dim);
        }
        sync();
        EXPECT_TRUE(same_bits(d_x.download(), x)) << "residual stream differs";
        const auto got = d_out.download();
        EXPECT_LT(nmse(got, ref), kNormNmse);
      }
    }
  }
}

TEST_F(GpuOpTest, AddBiasMatchesCpuBitForBit) {
  SCOPED_TRACE(seed_note());
  for (int64_t dim : {1, 3, 512, 3585}) {
    for (int64_t rows : {1, 6}) {
      auto x = random_floats(rows * dim, rng_);
      const auto bias = random_floats(dim, rng_);
      DeviceBuffer<float> d_x(x), d_bias(bias);
      ASSERT_TRUE(add_bias(d_x.get(), d_bias.get(), rows, dim, stream_).ok());
      for (int64_t r = 0; r < rows; ++r) cpu::add_bias_row(x.data() + r * dim, bias.data(), dim);
      sync();
      EXPECT_TRUE(same_bits(d_x.download(), x)) << "dim " << dim << " rows " << rows;
    }
  }
}

TEST_F(GpuOpTest, RopeTableMatchesCpu) {
  SCOPED_TRACE(seed_note());
  std::uniform_int_distribution<int32_t> pos_dist(0, 131071);
  for (int32_t n_rot : {2, 32, 64, 128}) {
    for (float base : {10000.0f, 500000.0f}) {
      for (float scale : {1.0f, 0.25f}) {
        for (bool factors : {false, true}) {
          SCOPED_TRACE("n_rot " + std::to_string(n_rot) + " base " + std::to_string(base) +
                       " scale " + std::to_string(scale) + (factors ? " freq_factors" : ""));
          std::vector<int32_t> pos = {0, 1, 7};
          for (int i = 0; i < 6; ++i) pos.push_back(pos_dist(rng_));
          std::vector<float> ff(n_rot / 2);
          std::uniform_real_distribution<float> ff_dist(1.0f, 8.0f);
          for (float& f : ff) f = ff_dist(rng_);
          RopeParams p;
          p.n_rot = n_rot;
          p.freq_base = base;
          p.freq_scale = scale;
          p.freq_factors = factors ? ff.data() : nullptr;
          std::vector<float> ref(pos.size() * n_rot);
          for (size_t r = 0; r < pos.size(); ++r) cpu::rope_table_row(pos[r], p, &ref[r * n_rot]);

          DeviceBuffer<int32_t> d_pos(pos);
          DeviceBuffer<float> d_ff(ff), d_table(ref.size());
          p.freq_factors = factors ? d_ff.get() : nullptr;
          ASSERT_TRUE(
              rope_table(d_pos.get(), static_cast<int64_t>(pos.size()), p, d_table.get(), stream_)
                  .ok());
          sync();
          EXPECT_LT(nmse(d_table.download(), ref), kRopeTableNmse);
        }
      }
    }
  }
}

TEST_F(GpuOpTest, RopeMatchesCpuBitForBitInBothOrderings) {
  SCOPED_TRACE(seed_note());
  struct Shape {
    int32_t n_heads, head_dim, n_rot;
  };
  for (Shape s : {Shape{1, 64, 64}, Shape{9, 64, 64}, Shape{32, 128, 128}, Shape{5, 128, 64},
                  Shape{3, 96, 2}}) {
    for (RopeOrdering ord : {RopeOrdering::kNormal, RopeOrdering::kNeox}) {
      for (int64_t rows : {1, 5}) {
        SCOPED_TRACE("heads " + std::to_string(s.n_heads) + " head_dim " +
                     std::to_string(s.head_dim) + " n_rot " + std::to_string(s.n_rot) +
                     (ord == RopeOrdering::kNeox ? " neox" : " normal") + " rows " +
                     std::to_string(rows));
        RopeParams p;
        p.n_rot = s.n_rot;
        p.freq_base = 10000.0f;
        std::vector<float> table(rows * s.n_rot);
        for (int64_t r = 0; r < rows; ++r) {
          cpu::rope_table_row(static_cast<int32_t>(3 + 11 * r), p, &table[r * s.n_rot]);
        }
        const int64_t width = static_cast<int64_t>(s.n_heads) * s.head_dim;
        auto x = random_floats(rows * width, rng_);
        DeviceBuffer<float> d_x(x), d_table(table);
        ASSERT_TRUE(
            rope(d_x.get(), rows, s.n_heads, s.head_dim, s.n_rot, ord, d_table.get(), stream_)
                .ok());
        for (int64_t r = 0; r < rows; ++r) {
          cpu::rope_row(x.data() + r * width, s.n_heads, s.head_dim, s.n_rot, ord,
                        &table[r * s.n_rot]);
        }
        sync();
        EXPECT_TRUE(same_bits(d_x.download(), x));
      }
    }
  }
}

TEST_F(GpuOpTest, SwigluMatchesCpu) {
  SCOPED_TRACE(seed_note());
  for (int64_t dim : {1, 13, 1536, 14341}) {
    for (int64_t rows : {1, 3}) {
      const auto gate = random_floats(rows * dim, rng_, 4.0f);
      const auto up = random_floats(rows * dim, rng_);
      DeviceBuffer<float> d_gate(gate), d_up(up), d_out(rows * dim);
      ASSERT_TRUE(swiglu(d_gate.get(), d_up.get(), rows, dim, d_out.get(), stream_).ok());
      std::vector<float> ref(rows * dim);
      for (int64_t r = 0; r < rows; ++r) {
        cpu::swiglu_row(gate.data() + r * dim, up.data() + r * dim, dim, ref.data() + r * dim);
      }
      sync();
      EXPECT_LT(nmse(d_out.download(), ref), kSwigluNmse) << "dim " << dim << " rows " << rows;
    }
  }
}

TEST_F(GpuOpTest, GemvMatchesCpuExactMatmulForEveryType) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(2);
  for (GgmlType type : kAllTypes) {
    for (auto [n_in, n_out] : weight_shapes(type)) {
      if (!matmul_check(type, n_in).ok()) continue;  // the CPU reference has no kernel for it
      for (int64_t rows : {1, 3, 8}) {
        SCOPED_TRACE(std::string(ggml_type_traits(type).name) + " [" + std::to_string(n_out) +
                     " x " + std::to_string(n_in) + "] rows " + std::to_string(rows));
        const auto w = random_quantized(type, n_in, n_out, rng_);
        const auto x = random_floats(rows * n_in, rng_);
        std::vector<float> ref(rows * n_out);
        matmul(w.data(), type, n_in, n_out, x.data(), rows, ref.data(), pool, ActQuant::kNone);

        DeviceBuffer<uint8_t> d_w(w);
        DeviceBuffer<float> d_x(x), d_y(rows * n_out);
        const Status st =
            gemv(WeightMatrix{d_w.get(), type, n_in, n_out}, d_x.get(), rows, d_y.get(), stream_);
        ASSERT_TRUE(st.ok()) << st.error().message;
        sync();
        const auto got = d_y.download();
        const double e = abs_scaled_error(got, ref, w, type, n_in, n_out, x, rows);
        EXPECT_LT(e, kGemvNmse.at(type));
        // Batch invariance: row 0 alone gives the same bits as row 0 in the batch.
        if (rows > 1) {
          DeviceBuffer<float> d_y1(n_out);
          ASSERT_TRUE(
              gemv(WeightMatrix{d_w.get(), type, n_in, n_out}, d_x.get(), 1, d_y1.get(), stream_)
                  .ok());
          sync();
          const auto one = d_y1.download();
          EXPECT_EQ(0, std::memcmp(one.data(), got.data(), n_out * sizeof(float)));
        }
      }
    }
  }
}

// Uploads a Q4_0 matrix in ggml's layout and repacks it into a new buffer in the split layout.
std::unique_ptr<DeviceBuffer<uint8_t>> upload_split(const std::vector<uint8_t>& w, int64_t n_in,
                                                    int64_t n_out, cudaStream_t stream) {
  DeviceBuffer<uint8_t> d_w(w);
  auto split = std::make_unique<DeviceBuffer<uint8_t>>(w.size());
  const Status st = repack_q4_0_split(d_w.get(), n_in, n_out, split->get(), stream);
  EXPECT_TRUE(st.ok()) << st.error().message;
  EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);  // before d_w is freed
  return split;
}

// Batch invariance: every row of x computed alone gives the bits of its row in `batch` (the
// result of gemv_q4_0_split on all `rows` rows).
void expect_rows_alone_match(const WeightMatrix& w, const float* d_x, int64_t rows,
                             const std::vector<float>& batch, cudaStream_t stream) {
  DeviceBuffer<float> d_y1(w.n_out);
  for (int64_t r = 0; r < rows; ++r) {
    ASSERT_TRUE(gemv_q4_0_split(w, d_x + r * w.n_in, 1, d_y1.get(), stream).ok());
    ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
    const auto one = d_y1.download();
    EXPECT_EQ(0, std::memcmp(one.data(), batch.data() + r * w.n_out, w.n_out * sizeof(float)))
        << "row " << r << " alone differs from the batch of " << rows;
  }
}

// gemv_q4_0_split of the `rows` rows of x on wm (the split upload of the Q4_0 weights w) against
// the CPU matmul of w, then expect_rows_alone_match on the result.
void expect_split_gemv_matches_cpu(const std::vector<uint8_t>& w, const WeightMatrix& wm,
                                   const std::vector<float>& x, int64_t rows, ThreadPool& pool,
                                   cudaStream_t stream) {
  std::vector<float> ref(rows * wm.n_out);
  matmul(w.data(), wm.type, wm.n_in, wm.n_out, x.data(), rows, ref.data(), pool, ActQuant::kNone);
  DeviceBuffer<float> d_x(x), d_y(rows * wm.n_out);
  const Status st = gemv_q4_0_split(wm, d_x.get(), rows, d_y.get(), stream);
  ASSERT_TRUE(st.ok()) << st.error().message;
  ASSERT_EQ(cudaStreamSynchronize(stream), cudaSuccess);
  const auto got = d_y.download();
  EXPECT_LT(abs_scaled_error(got, ref, w, wm.type, wm.n_in, wm.n_out, x, rows),
            kGemvNmse.at(wm.type));
  expect_rows_alone_match(wm, d_x.get(), rows, got, stream);
}

TEST_F(GpuOpTest, GemvQ4_0SplitMatchesCpuAtEveryBatchAndIsBatchInvariant) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(2);
  const GgmlType type = GgmlType::kQ4_0;
  for (auto [n_in, n_out] : weight_shapes(type)) {
    if (n_in % 32 != 0) continue;
    // 1..8 rows take one launch (each count its own kernel); 13 and 32 take several (decode
    // batches of graph buckets).
    for (int64_t rows : {1, 2, 3, 4, 5, 8, 13, 32}) {
      SCOPED_TRACE(::testing::Message() << "[" << n_out << " x " << n_in << "] rows " << rows);
      const auto w = random_quantized(type, n_in, n_out, rng_);
      const auto x = random_floats(rows * n_in, rng_);
      const auto d_split = upload_split(w, n_in, n_out, stream_);
      const WeightMatrix wm{d_split->get(), type, n_in, n_out};
      ASSERT_NO_FATAL_FAILURE(expect_split_gemv_matches_cpu(w, wm, x, rows, pool, stream_));
    }
  }
  // Misaligned activations and rows that are not whole blocks are refused.
  DeviceBuffer<float> d_x(64);
  EXPECT_FALSE(
      gemv_q4_0_split(WeightMatrix{d_x.get(), type, 32, 1}, d_x.get() + 1, 1, d_x.get(), stream_)
          .ok());
  EXPECT_FALSE(repack_q4_0_split(nullptr, 48, 1, nullptr, stream_).ok());
}

TEST_F(GpuOpTest, GemvQ4_0SplitMatchesCpuOnOddShapes) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(2);
  const GgmlType type = GgmlType::kQ4_0;
  // Rows of 1, 2, 128 and 448 blocks (fewer blocks than lanes, exactly one step of a warp, a
  // partial last step), output counts that are not multiples of a warp's 2 or 4 outputs.
  const std::pair<int64_t, int64_t> shapes[] = {{32, 5},   {64, 3},    {64, 9},
                                                {4096, 7}, {14336, 9}, {14336, 130}};
  for (auto [n_in, n_out] : shapes) {
    const auto w = random_quantized(type, n_in, n_out, rng_);
    const auto d_split = upload_split(w, n_in, n_out, stream_);
    const WeightMatrix wm{d_split->get(), type, n_in, n_out};
    for (int64_t rows : {1, 3, 6, 8}) {
      SCOPED_TRACE(::testing::Message() << "[" << n_out << " x " << n_in << "] rows " << rows);
      const auto x = random_floats(rows * n_in, rng_);
      ASSERT_NO_FATAL_FAILURE(expect_split_gemv_matches_cpu(w, wm, x, rows, pool, stream_));
    }
  }
}

TEST_F(GpuOpTest, GemvQ4_0SplitMultiMatchesSingleLaunchesBitForBit) {
  SCOPED_TRACE(seed_note());
  const GgmlType type = GgmlType::kQ4_0;
  // q/k/v-like, an empty matrix between two others, more than one launch's 3 matrices, one.
  const std::vector<std::vector<int64_t>> groups = {
      {1030, 258, 258}, {7, 0, 5}, {9, 1, 64, 33, 2}, {3}};
  for (int64_t n_in : {96, 4096}) {
    for (const auto& n_outs : groups) {
      std::vector<std::unique_ptr<DeviceBuffer<uint8_t>>> splits;
      std::vector<WeightMatrix> ws;
      for (int64_t n_out : n_outs) {
        splits.push_back(
            upload_split(random_quantized(type, n_in, n_out, rng_), n_in, n_out, stream_));
        ws.push_back(WeightMatrix{splits.back()->get(), type, n_in, n_out});
      }
      for (int64_t rows : {1, 2, 3, 5, 8, 11}) {
        SCOPED_TRACE(::testing::Message()
                     << n_outs.size() << " matrices, n_in " << n_in << ", rows " << rows);
        DeviceBuffer<float> d_x(random_floats(rows * n_in, rng_));
        std::vector<std::unique_ptr<DeviceBuffer<float>>> singles, multis;
        std::vector<float*> ys;
        for (const WeightMatrix& w : ws) {
          singles.push_back(std::make_unique<DeviceBuffer<float>>(rows * w.n_out));
          multis.push_back(std::make_unique<DeviceBuffer<float>>(rows * w.n_out));
          ys.push_back(multis.back()->get());
          ASSERT_TRUE(gemv_q4_0_split(w, d_x.get(), rows, singles.back()->get(), stream_).ok());
        }
        const Status st = gemv_q4_0_split_multi(ws, d_x.get(), rows, ys, stream_);
        ASSERT_TRUE(st.ok()) << st.error().message;
        sync();
        for (size_t m = 0; m < ws.size(); ++m) {
          EXPECT_TRUE(same_bits(multis[m]->download(), singles[m]->download())) << "matrix " << m;
        }
      }
    }
  }
}

TEST_F(GpuOpTest, GemvQ4_0SplitSwigluMatchesGemvsThenSwigluBitForBit) {
  SCOPED_TRACE(seed_note());
  const GgmlType type = GgmlType::kQ4_0;
  for (auto [n_in, n_out] : {std::pair<int64_t, int64_t>{32, 1}, {96, 5}, {4096, 1030}}) {
    const auto gate_split =
        upload_split(random_quantized(type, n_in, n_out, rng_), n_in, n_out, stream_);
    const auto up_split =
        upload_split(random_quantized(type, n_in, n_out, rng_), n_in, n_out, stream_);
    const WeightMatrix gate{gate_split->get(), type, n_in, n_out};
    const WeightMatrix up{up_split->get(), type, n_in, n_out};
    for (int64_t rows : {1, 2, 3, 5, 8, 11}) {
      SCOPED_TRACE(::testing::Message() << "[" << n_out << " x " << n_in << "] rows " << rows);
      // Activations of scale 4 spread the gate values over silu's curved part and its tails.
      DeviceBuffer<float> d_x(random_floats(rows * n_in, rng_, 4.0f));
      DeviceBuffer<float> d_gate(rows * n_out), d_up(rows * n_out), d_ref(rows * n_out);
      DeviceBuffer<float> d_out(rows * n_out);
      ASSERT_TRUE(gemv_q4_0_split(gate, d_x.get(), rows, d_gate.get(), stream_).ok());
      ASSERT_TRUE(gemv_q4_0_split(up, d_x.get(), rows, d_up.get(), stream_).ok());
      ASSERT_TRUE(swiglu(d_gate.get(), d_up.get(), rows, n_out, d_ref.get(), stream_).ok());
      const Status st = gemv_q4_0_split_swiglu(gate, up, d_x.get(), rows, d_out.get(), stream_);
      ASSERT_TRUE(st.ok()) << st.error().message;
      sync();
      EXPECT_TRUE(same_bits(d_out.download(), d_ref.download()));
    }
  }
}

// Llama-3-8B's Q4_0 decode matrices at 1, 2, 4 and 8 rows: ms per call and weight GB/s (weight
// bytes / time; activations are not counted), printed for the device runs, not asserted. The
// calls are replayed from a CUDA graph, as the runner's decode steps are (stream launches one by
// one would time the host on the small matrices). Every call reads another copy of its weights
// from a 1 GiB pool of random bytes (the time does not depend on the values), so the 50 MB L2
// does not serve them.
TEST_F(GpuOpTest, GemvQ4_0SplitTimingsOnLlama3Shapes) {
  constexpr size_t kPoolBytes = size_t{1} << 30;
  constexpr int kWarmup = 5, kIters = 50, kMaxCopies = 64;
  std::vector<uint64_t> host(kPoolBytes / sizeof(uint64_t));
  std::mt19937_64 bits(rng_());
  for (uint64_t& v : host) v = bits();
  DeviceBuffer<uint64_t> pool(host);
  host = {};
  auto* pool_bytes = reinterpret_cast<uint8_t*>(pool.get());
  cudaDeviceProp prop{};
  ASSERT_EQ(cudaGetDeviceProperties(&prop, 0), cudaSuccess);
  std::printf(
      "Q4_0 split GEMV timings on %s (ms per call, %d calls replayed from a graph; GB/s "
      "of weights)\n",
      prop.name, kIters);

  struct Case {
    const char* name;
    std::vector<int64_t> n_outs;  // matrices sharing x
    int64_t n_in;
  };
  const Case cases[] = {{"q/o", {4096}, 4096},
                        {"k/v", {1024}, 4096},
                        {"gate/up", {14336}, 4096},
                        {"down", {4096}, 14336},
                        {"output", {128256}, 4096},
                        {"q+k+v", {4096, 1024, 1024}, 4096},
                        {"gate+up", {14336, 14336}, 4096}};
  std::map<std::string, double> ms_of;  // "case/variant/rows" -> ms per call
  const auto key = [](const char* name, const char* what, int64_t rows) {
    return std::string(name) + "/" + what + "/" + std::to_string(rows);
  };
  for (const Case& c : cases) {
    // One copy of the case's matrices per 256-byte aligned group; calls rotate over the groups.
    int64_t group_bytes = 0, weight_bytes = 0, total_out = 0;
    std::vector<int64_t> offsets;
    std::string shape;
    for (int64_t n_out : c.n_outs) {
      const int64_t bytes = n_out * (c.n_in / 32) * 18;
      offsets.push_back(group_bytes);
      group_bytes += (bytes + 255) / 256 * 256;
      weight_bytes += bytes;
      total_out += n_out;
      if (!shape.empty()) shape += '+';
      shape += std::to_string(n_out);
    }
    shape += " x " + std::to_string(c.n_in);
    const int copies = static_cast<int>(
        std::min<int64_t>(kMaxCopies, static_cast<int64_t>(kPoolBytes) / group_bytes));
    const auto views = [&](int g) {
      std::vector<WeightMatrix> ws;
      for (size_t m = 0; m < c.n_outs.size(); ++m) {
        ws.push_back(WeightMatrix{pool_bytes + g * group_bytes + offsets[m], GgmlType::kQ4_0,
                                  c.n_in, c.n_outs[m]});
      }
      return ws;
    };
    DeviceBuffer<float> d_x(random_floats(8 * c.n_in, rng_)), d_y(8 * total_out);
    DeviceBuffer<float> d_act(8 * c.n_outs[0]);
    for (int64_t rows : {1, 2, 4, 8}) {
      std::vector<float*> ys;
      int64_t y_off = 0;
      for (int64_t n_out : c.n_outs) ys.push_back(d_y.get() + y_off), y_off += rows * n_out;
      // Milliseconds per call of launch(group), each call on the next group.
      const auto time_ms = [&](const auto& launch) {
        for (int i = 0; i < kWarmup; ++i) EXPECT_TRUE(launch(views(i % copies)).ok());
        cudaGraph_t graph = nullptr;
        cudaGraphExec_t exec = nullptr;
        EXPECT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
        for (int i = 0; i < kIters; ++i) EXPECT_TRUE(launch(views(i % copies)).ok());
        EXPECT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
        EXPECT_EQ(graph_instantiate(&exec, graph), cudaSuccess);
        EXPECT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);  // warm-up
        const float ms = test::elapsed_ms(
            stream_, [&] { EXPECT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess); });
        (void)cudaGraphExecDestroy(exec);
        (void)cudaGraphDestroy(graph);
        return static_cast<double>(ms) / kIters;
      };
      const auto report = [&](const char* what, double ms) {
        ms_of[key(c.name, what, rows)] = ms;
        std::printf("  %-8s %-24s rows %lld  %-17s %8.4f ms %6.0f GB/s\n", c.name, shape.c_str(),
                    static_cast<long long>(rows), what, ms,
                    static_cast<double>(weight_bytes) / ms * 1e-6);
      };
      report(c.n_outs.size() == 1 ? "single" : "separate", time_ms([&](const auto& ws) -> Status {
               for (size_t m = 0; m < ws.size(); ++m) {
                 NOVASERVE_RETURN_IF_ERROR(gemv_q4_0_split(ws[m], d_x.get(), rows, ys[m], stream_));
               }
               return Status{};
             }));
      if (c.n_outs.size() > 1) {
        report("multi", time_ms([&](const auto& ws) {
                 return gemv_q4_0_split_multi(ws, d_x.get(), rows, ys, stream_);
               }));
      }
      if (c.n_outs.size() == 2) {
        const int64_t dim = c.n_outs[0];
        report("separate + swiglu", time_ms([&](const auto& ws) -> Status {
                 NOVASERVE_RETURN_IF_ERROR(gemv_q4_0_split(ws[0], d_x.get(), rows, ys[0], stream_));
                 NOVASERVE_RETURN_IF_ERROR(gemv_q4_0_split(ws[1], d_x.get(), rows, ys[1], stream_));
                 return swiglu(ys[0], ys[1], rows, dim, d_act.get(), stream_);
               }));
        report("fused swiglu", time_ms([&](const auto& ws) {
                 return gemv_q4_0_split_swiglu(ws[0], ws[1], d_x.get(), rows, d_act.get(), stream_);
               }));
      }
    }
  }
  // A decode step's Q4_0 GEMVs (and SwiGLU) over Llama-3-8B's 32 layers and the output head.
  constexpr double kLayers = 32;
  const double bytes =
      (kLayers * (6144.0 * 4096 + 4096.0 * 4096 + 3 * 14336.0 * 4096) + 128256.0 * 4096) * 18 / 32;
  for (int64_t rows : {1, 2, 4, 8}) {
    const auto t = [&](const char* name, const char* what) { return ms_of[key(name, what, rows)]; };
    const double per_layer_common = t("q/o", "single") + t("down", "single");
    const double separate =
        kLayers * (t("q+k+v", "separate") + t("gate+up", "separate + swiglu") + per_layer_common) +
        t("output", "single");
    const double grouped =
        kLayers * (t("q+k+v", "multi") + t("gate+up", "fused swiglu") + per_layer_common) +
        t("output", "single");
    std::printf(
        "  per token, rows %lld: separate launches %.3f ms (%.0f GB/s), q+k+v multi and "
        "fused gate/up/SwiGLU %.3f ms (%.0f GB/s)\n",
        static_cast<long long>(rows), separate, bytes / separate * 1e-6, grouped,
        bytes / grouped * 1e-6);
  }
}

TEST_F(GpuOpTest, DequantizeToF16MatchesCpuDecodeRounded) {
  SCOPED_TRACE(seed_note());
  for (GgmlType type : kAllTypes) {
    const auto [n_in, n_out] = weight_shapes(type)[1];
    const auto w = random_quantized(type, n_in, n_out, rng_);
    std::vector<float> decoded(n_in * n_out);
    ASSERT_TRUE(dequantize_row(type, w.data(), decoded.data(), n_in * n_out).ok());
    std::vector<uint16_t> ref(decoded.size());
    for (size_t i = 0; i < decoded.size(); ++i) ref[i] = f32_to_fp16(decoded[i]);

    DeviceBuffer<uint8_t> d_w(w);
    DeviceBuffer<__half> d_out(ref.size());
    ASSERT_TRUE(
        dequantize_to_f16(WeightMatrix{d_w.get(), type, n_in, n_out}, d_out.get(), stream_).ok());
    sync();
    const auto got = d_out.download();
    EXPECT_EQ(0, std::memcmp(got.data(), ref.data(), ref.size() * 2))
        << ggml_type_traits(type).name;
  }
}

#if defined(NOVASERVE_GPU_HAS_BLAS)
// BLAS prefill GEMM: activations and decoded weights rounded to fp16 (2^-11 relative each).
constexpr double kGemmF16Nmse = 1e-5;

TEST_F(GpuOpTest, BlasF16GemmMatchesCpuMatmul) {
  SCOPED_TRACE(seed_note());
  ThreadPool pool(2);
  auto blas = GpuBlas::create(stream_);
  ASSERT_TRUE(blas.ok()) << blas.error().message;
  for (GgmlType type : {GgmlType::kQ4_0, GgmlType::kF16, GgmlType::kQ6_K}) {
    for (int64_t m : {1, 7, 64}) {
      const int64_t n_in = 1536, n_out = 577;
      SCOPED_TRACE(std::string(ggml_type_traits(type).name) + " m " + std::to_string(m));
      const auto w = random_quantized(type, n_in, n_out, rng_);
      const auto x = random_floats(m * n_in, rng_);
      std::vector<float> ref(m * n_out);
      matmul(w.data(), type, n_in, n_out, x.data(), m, ref.data(), pool, ActQuant::kNone);

      DeviceBuffer<uint8_t> d_w(w);
      DeviceBuffer<float> d_x(x), d_y(m * n_out);
      DeviceBuffer<__half> d_w16(n_in * n_out), d_x16(m * n_in);
      ASSERT_TRUE(
          dequantize_to_f16(WeightMatrix{d_w.get(), type, n_in, n_out}, d_w16.get(), stream_).ok());
      ASSERT_TRUE(convert_f32_to_f16(d_x.get(), m * n_in, d_x16.get(), stream_).ok());
      const Status st = (*blas)->gemm_f16_nt(m, n_out, n_in, d_x16.get(), d_w16.get(), d_y.get());
      ASSERT_TRUE(st.ok()) << st.error().message;
      sync();
      EXPECT_LT(nmse(d_y.download(), ref), kGemmF16Nmse);
    }
  }
}
#endif

// Argument checks happen before any device call, so these run without a GPU too.
TEST(GpuOpArgs, LaunchersRejectUnsupportedTypesAndBadSizes) {
  float dummy = 0.0f;
  const WeightMatrix q2k{&dummy, GgmlType::kQ2_K, 256, 4};
  const Status st = gemv(q2k, &dummy, 1, &dummy, nullptr);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(st.error().message.find("q2_k"), std::string::npos) << st.error().message;
  int32_t id = 0;
  const Status embed_st = embed(q2k, &id, 1, &dummy, nullptr);
  ASSERT_FALSE(embed_st.ok());
  EXPECT_EQ(embed_st.error().code, ErrorCode::kUnsupported);

  const WeightMatrix partial_block{&dummy, GgmlType::kQ4_0, 33, 4};
  const Status block_st = gemv(partial_block, &dummy, 1, &dummy, nullptr);
  ASSERT_FALSE(block_st.ok());
  EXPECT_EQ(block_st.error().code, ErrorCode::kInvalidInput);
  EXPECT_FALSE(add_rms_norm(&dummy, nullptr, &dummy, -1, 4, 1e-5f, &dummy, nullptr).ok());
  EXPECT_FALSE(rope(&dummy, 1, 1, 64, 65, RopeOrdering::kNormal, &dummy, nullptr).ok());
  EXPECT_FALSE(swiglu(&dummy, &dummy, 1, -2, &dummy, nullptr).ok());
  // Zero-sized work is a no-op that launches nothing.
  EXPECT_TRUE(swiglu(&dummy, &dummy, 0, 8, &dummy, nullptr).ok());
}

// The Q4_0 split GEMVs check their arguments before any device call (no GPU needed).
TEST(GpuOpArgs, Q4_0SplitGemvsRejectBadArguments) {
  alignas(16) static float buf[256];
  const float* x = buf;  // 2 rows of 32
  float* y = buf + 128;
  const WeightMatrix w{buf + 64, GgmlType::kQ4_0, 32, 2};
  const auto invalid = [](const Status& st) {
    return !st.ok() && st.error().code == ErrorCode::kInvalidInput;
  };
  EXPECT_TRUE(gemv_q4_0_split(w, x, 0, y, nullptr).ok());  // no rows: nothing to launch
  EXPECT_TRUE(invalid(gemv_q4_0_split(w, x, -1, y, nullptr)));
  EXPECT_TRUE(
      invalid(gemv_q4_0_split(WeightMatrix{w.data, GgmlType::kQ8_0, 32, 2}, x, 1, y, nullptr)));
  EXPECT_TRUE(
      invalid(gemv_q4_0_split(WeightMatrix{w.data, GgmlType::kQ4_0, 48, 2}, x, 1, y, nullptr)));
  EXPECT_TRUE(invalid(gemv_q4_0_split(w, x + 1, 1, y, nullptr)));     // misaligned x
  EXPECT_TRUE(invalid(gemv_q4_0_split(w, x, 2, buf + 32, nullptr)));  // y overlaps x
  EXPECT_TRUE(
      invalid(gemv_q4_0_split(WeightMatrix{nullptr, GgmlType::kQ4_0, 32, 2}, x, 1, y, nullptr)));

  const WeightMatrix other_n_in{buf + 64, GgmlType::kQ4_0, 64, 2};
  const WeightMatrix two[] = {w, w};
  float* ys[] = {y, y + 8};
  EXPECT_TRUE(gemv_q4_0_split_multi({}, x, 1, {}, nullptr).ok());
  EXPECT_TRUE(invalid(gemv_q4_0_split_multi(two, x, 1, std::span<float* const>(ys, 1), nullptr)));
  const WeightMatrix mixed[] = {w, other_n_in};
  EXPECT_TRUE(invalid(gemv_q4_0_split_multi(mixed, x, 1, ys, nullptr)));
  float* overlapping[] = {y, buf};
  EXPECT_TRUE(invalid(gemv_q4_0_split_multi(two, x, 1, overlapping, nullptr)));

  EXPECT_TRUE(invalid(
      gemv_q4_0_split_swiglu(w, WeightMatrix{w.data, GgmlType::kQ4_0, 32, 3}, x, 1, y, nullptr)));
  EXPECT_TRUE(invalid(gemv_q4_0_split_swiglu(w, other_n_in, x, 1, y, nullptr)));
  EXPECT_TRUE(invalid(gemv_q4_0_split_swiglu(w, w, x, 1, buf, nullptr)));
}

}  // namespace
}  // namespace novaserve::gpu
