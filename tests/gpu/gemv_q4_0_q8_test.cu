// The kQ8 decode GEMV (gemv_q4_0_q8.h): activation quantization bit-identical to the CPU's kQ8
// mode, the GEMV against the CPU's kQ8 matmul (same per-block integer terms, so only the f32
// summation order differs), grouped and SwiGLU launches bit-identical to single ones, rows
// independent of each other, argument checks, and a timing report on Llama-3-8B shapes.
#include <gtest/gtest.h>

#include <cstdio>
#include <limits>
#include <memory>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/matmul.h"
#include "backend/gpu/kernels/gemv_q4_0_q8.h"
#include "backend/gpu/kernels/gpu_ops.h"
#include "backend/gpu/platform/device_buffer.h"
#include "common/thread_pool.h"
#include "gpu_test_util.h"

namespace novaserve::gpu::test {
namespace {

constexpr double kQ8GemvNmse = 1e-10;  // the CPU's kQ8 terms, summed in another order

class GemvQ4_0Q8Test : public GpuTest {
 protected:
  // Q4_0 weights [n_out][n_in] (random_quantized) repacked to the split layout on the device.
  std::unique_ptr<DeviceBuffer<uint8_t>> split(const std::vector<uint8_t>& w, int64_t n_in,
                                               int64_t n_out) {
    DeviceBuffer<uint8_t> d_w(w);
    auto s = std::make_unique<DeviceBuffer<uint8_t>>(w.size());
    EXPECT_TRUE(repack_q4_0_split(d_w.get(), n_in, n_out, s->get(), stream_).ok());
    sync();
    return s;
  }
  // Device workspace for the quantized x of `rows` x `n_in`, filled from x.
  struct Quantized {
    std::unique_ptr<DeviceBuffer<uint8_t>> mem;
    ActQ8 act;
  };
  Quantized quantize(const DeviceBuffer<float>& x, int64_t rows, int64_t n_in) {
    Quantized q;
    q.mem = std::make_unique<DeviceBuffer<uint8_t>>(act_q8_bytes(rows, n_in));
    q.act = act_q8_view(q.mem->get(), rows, n_in);
    EXPECT_TRUE(quantize_act_q8(x.get(), rows, n_in, q.act, stream_).ok());
    return q;
  }
  ThreadPool pool_{2};
};

TEST_F(GemvQ4_0Q8Test, QuantizationIsTheCpusBitForBit) {
  SCOPED_TRACE(seed_note());
  const int64_t rows = 3, n_in = 4096;
  auto x = random_floats(rows * n_in, rng_, 2.0f);
  // Corner cases: an all-zero block, an all-NaN block (d = 0 as on the CPU, not NaN), a NaN, an
  // infinity, exact halves.
  for (int i = 0; i < 32; ++i) x[32 + i] = 0.0f;
  for (int i = 0; i < 32; ++i) x[96 + i] = std::numeric_limits<float>::quiet_NaN();
  x[70] = std::numeric_limits<float>::quiet_NaN();
  x[200] = std::numeric_limits<float>::infinity();
  x[300] = 127.0f;
  x[301] = 0.5f;
  x[302] = 1.5f;
  const DeviceBuffer<float> d_x(x);
  const Quantized q = quantize(d_x, rows, n_in);
  sync();
  const int64_t nb = rows * n_in / 32;
  std::vector<int8_t> got_q(rows * n_in);
  std::vector<float> got_d(nb);
  std::vector<int32_t> got_s(nb);
  ASSERT_EQ(cudaMemcpy(got_q.data(), q.act.q, got_q.size(), cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got_d.data(), q.act.d, nb * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  ASSERT_EQ(cudaMemcpy(got_s.data(), q.act.sum, nb * 4, cudaMemcpyDeviceToHost), cudaSuccess);
  std::vector<int8_t> ref_q(rows * n_in);
  std::vector<float> ref_d(nb), ref_s(nb);
  novaserve::quantize_act_q8(x.data(), rows * n_in, ref_q.data(), ref_d.data(), ref_s.data(),
                             false);
  EXPECT_TRUE(same_bits(got_q, ref_q));
  EXPECT_TRUE(same_bits(got_d, ref_d));
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sum = 0;
    for (int i = 0; i < 32; ++i) sum += ref_q[32 * b + i];
    ASSERT_EQ(got_s[b], sum) << "block " << b;
  }
}

TEST_F(GemvQ4_0Q8Test, MatchesCpuQ8MatmulAndRowsAreIndependent) {
  SCOPED_TRACE(seed_note());
  const std::pair<int64_t, int64_t> shapes[] = {{32, 5},      {64, 9},      {4096, 7},
                                                {4096, 1030}, {14336, 130}, {5120, 37}};
  for (auto [n_in, n_out] : shapes) {
    for (int64_t rows = 1; rows <= 8; ++rows) {
      SCOPED_TRACE(::testing::Message() << "[" << n_out << " x " << n_in << "] rows " << rows);
      const auto w = random_quantized(GgmlType::kQ4_0, n_in, n_out, rng_);
      const auto d_w = split(w, n_in, n_out);
      const auto x = random_floats(rows * n_in, rng_);
      std::vector<float> ref(rows * n_out);
      matmul(w.data(), GgmlType::kQ4_0, n_in, n_out, x.data(), rows, ref.data(), pool_,
             ActQuant::kQ8);
      const DeviceBuffer<float> d_x(x);
      const Quantized q = quantize(d_x, rows, n_in);
      DeviceBuffer<float> d_y(rows * n_out);
      const WeightMatrix wm{d_w->get(), GgmlType::kQ4_0, n_in, n_out};
      float* const ys[] = {d_y.get()};
      ASSERT_TRUE(gemv_q4_0_q8({&wm, 1}, q.act, rows, ys, false, stream_).ok());
      sync();
      const auto got = d_y.download();
      EXPECT_LT(nmse(got, ref), kQ8GemvNmse);
      // Row `rows - 1` alone (its quantized row is a suffix of the batch's) gives its bits.
      const ActQ8 last{q.act.q + (rows - 1) * n_in, q.act.d + (rows - 1) * (n_in / 32),
                       q.act.sum + (rows - 1) * (n_in / 32)};
      DeviceBuffer<float> d_y1(n_out);
      float* const y1[] = {d_y1.get()};
      ASSERT_TRUE(gemv_q4_0_q8({&wm, 1}, last, 1, y1, false, stream_).ok());
      sync();
      const auto alone = d_y1.download();
      EXPECT_TRUE(same_bits(alone, std::vector<float>(got.end() - n_out, got.end())));
    }
  }
}

TEST_F(GemvQ4_0Q8Test, GroupedAndSwigluLaunchesMatchSingleOnesBitForBit) {
  SCOPED_TRACE(seed_note());
  const int64_t n_in = 4096, rows = 3;
  const int64_t n_outs[] = {1030, 258, 7};
  std::vector<std::unique_ptr<DeviceBuffer<uint8_t>>> mats;
  std::vector<WeightMatrix> ws;
  for (int64_t n_out : n_outs) {
    mats.push_back(split(random_quantized(GgmlType::kQ4_0, n_in, n_out, rng_), n_in, n_out));
    ws.push_back(WeightMatrix{mats.back()->get(), GgmlType::kQ4_0, n_in, n_out});
  }
  const DeviceBuffer<float> d_x(random_floats(rows * n_in, rng_));
  const Quantized q = quantize(d_x, rows, n_in);
  std::vector<std::unique_ptr<DeviceBuffer<float>>> single, grouped;
  std::vector<float*> group_ys;
  for (const WeightMatrix& w : ws) {
    single.push_back(std::make_unique<DeviceBuffer<float>>(rows * w.n_out));
    grouped.push_back(std::make_unique<DeviceBuffer<float>>(rows * w.n_out));
    float* const y[] = {single.back()->get()};
    ASSERT_TRUE(gemv_q4_0_q8({&w, 1}, q.act, rows, y, false, stream_).ok());
    group_ys.push_back(grouped.back()->get());
  }
  ASSERT_TRUE(gemv_q4_0_q8(ws, q.act, rows, group_ys, false, stream_).ok());
  sync();
  for (size_t i = 0; i < ws.size(); ++i) {
    EXPECT_TRUE(same_bits(single[i]->download(), grouped[i]->download())) << "matrix " << i;
  }
  // Gate/up fused with SwiGLU against the two GEMVs and the swiglu op: 1030 outputs (whole
  // pairs) and 7 (the last group holds one output).
  for (size_t gi : {size_t{0}, size_t{2}}) {
    const int64_t n_out = ws[gi].n_out;
    SCOPED_TRACE(::testing::Message() << "SwiGLU, " << n_out << " outputs");
    mats.push_back(split(random_quantized(GgmlType::kQ4_0, n_in, n_out, rng_), n_in, n_out));
    const WeightMatrix up{mats.back()->get(), GgmlType::kQ4_0, n_in, n_out};
    const WeightMatrix gate_up[] = {ws[gi], up};
    DeviceBuffer<float> d_up(rows * n_out), d_ref(rows * n_out), d_fused(rows * n_out);
    float* const y_up[] = {d_up.get()};
    ASSERT_TRUE(gemv_q4_0_q8({&up, 1}, q.act, rows, y_up, false, stream_).ok());
    ASSERT_TRUE(swiglu(single[gi]->get(), d_up.get(), rows, n_out, d_ref.get(), stream_).ok());
    float* const y_fused[] = {d_fused.get(), nullptr};
    ASSERT_TRUE(gemv_q4_0_q8(gate_up, q.act, rows, y_fused, true, stream_).ok());
    sync();
    EXPECT_TRUE(same_bits(d_fused.download(), d_ref.download()));
  }
}

TEST(GemvQ4_0Q8Args, RejectsBadArguments) {
  alignas(16) static uint8_t buf[64];
  const WeightMatrix q4{buf, GgmlType::kQ4_0, 32, 1};
  const ActQ8 x{reinterpret_cast<int8_t*>(buf), reinterpret_cast<float*>(buf),
                reinterpret_cast<int32_t*>(buf)};
  float* ys[] = {reinterpret_cast<float*>(buf)};
  const WeightMatrix f16{buf, GgmlType::kF16, 32, 1};
  EXPECT_FALSE(gemv_q4_0_q8({&f16, 1}, x, 1, ys, false, nullptr).ok());
  EXPECT_FALSE(gemv_q4_0_q8({&q4, 1}, x, 9, ys, false, nullptr).ok());
  EXPECT_FALSE(gemv_q4_0_q8({&q4, 1}, x, -1, ys, false, nullptr).ok());
  const WeightMatrix odd{buf, GgmlType::kQ4_0, 48, 1};
  EXPECT_FALSE(gemv_q4_0_q8({&odd, 1}, x, 1, ys, false, nullptr).ok());
  EXPECT_FALSE(gemv_q4_0_q8({&q4, 1}, x, 1, ys, true, nullptr).ok());  // SwiGLU needs two
  EXPECT_FALSE(quantize_act_q8(nullptr, 1, 33, x, nullptr).ok());
  EXPECT_FALSE(quantize_act_q8(nullptr, 1, 32, ActQ8{}, nullptr).ok());
}

// Prints (asserts nothing about speed) the kernel time on Llama-3-8B shapes, with weights rotated
// through copies that outgrow the 50 MB L2, from a CUDA graph of 50 launches.
TEST_F(GemvQ4_0Q8Test, TimingOnLlama3Shapes) {
  struct Case {
    const char* name;
    std::vector<int64_t> n_outs;
    int64_t n_in;
    bool swiglu;
  };
  const Case cases[] = {{"q+k+v", {4096, 1024, 1024}, 4096, false},
                        {"o", {4096}, 4096, false},
                        {"gate+up+swiglu", {14336, 14336}, 4096, true},
                        {"down", {4096}, 14336, false},
                        {"output", {128256}, 4096, false}};
  constexpr size_t kPool = size_t{1} << 30;
  DeviceBuffer<uint8_t> pool(kPool);  // zero bytes: the speed does not depend on the values
  constexpr int kIters = 50;
  double per_token_ms = 0.0;
  for (int64_t rows : {1, 2, 4, 8}) {
    per_token_ms = 0.0;
    for (const Case& c : cases) {
      int64_t bytes = 0;
      for (int64_t n : c.n_outs) bytes += n * (c.n_in / 32) * 18;
      const int64_t group = (bytes + 4095) / 4096 * 4096 + 4096 * 3;
      const int copies = static_cast<int>(std::max<int64_t>(1, kPool / group));
      const DeviceBuffer<float> d_x(random_floats(rows * c.n_in, rng_));
      const Quantized q = quantize(d_x, rows, c.n_in);
      DeviceBuffer<float> d_y(rows * 128256 * 3);
      cudaGraph_t graph = nullptr;
      ASSERT_EQ(cudaStreamBeginCapture(stream_, cudaStreamCaptureModeThreadLocal), cudaSuccess);
      for (int it = 0; it < kIters; ++it) {
        uint8_t* base = pool.get() + (it % copies) * group;
        std::vector<WeightMatrix> ws;
        std::vector<float*> ys;
        int64_t off = 0;
        for (size_t m = 0; m < c.n_outs.size(); ++m) {
          ws.push_back(WeightMatrix{base + off, GgmlType::kQ4_0, c.n_in, c.n_outs[m]});
          off += (c.n_outs[m] * (c.n_in / 32) * 18 + 4095) / 4096 * 4096;
          ys.push_back(d_y.get() + m * rows * 128256);
        }
        ASSERT_TRUE(gemv_q4_0_q8(ws, q.act, rows, ys, c.swiglu, stream_).ok());
      }
      ASSERT_EQ(cudaStreamEndCapture(stream_, &graph), cudaSuccess);
      cudaGraphExec_t exec = nullptr;
      ASSERT_EQ(graph_instantiate(&exec, graph), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(exec, stream_), cudaSuccess);  // warm-up
      cudaError_t launched = cudaSuccess;
      const float ms = elapsed_ms(stream_, [&] { launched = cudaGraphLaunch(exec, stream_); });
      ASSERT_EQ(launched, cudaSuccess);
      (void)cudaGraphExecDestroy(exec);
      (void)cudaGraphDestroy(graph);
      const double call_ms = ms / kIters;
      per_token_ms += call_ms * (std::string(c.name) == "output" ? 1 : 32);
      std::printf("gemv_q4_0_q8 rows %lld %-15s %6lld x %5lld: %8.4f ms  %7.1f GB/s\n",
                  static_cast<long long>(rows), c.name,
                  static_cast<long long>(bytes / 18 * 32 / c.n_in), static_cast<long long>(c.n_in),
                  call_ms, bytes / call_ms * 1e-6);
    }
    std::printf("gemv_q4_0_q8 rows %lld: all Llama-3-8B matmuls %.3f ms per step\n",
                static_cast<long long>(rows), per_token_ms);
  }
}

}  // namespace
}  // namespace novaserve::gpu::test
