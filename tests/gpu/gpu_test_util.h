// Shared pieces of the GPU op tests: the random seed, random inputs and quantized weights,
// normalized MSE, device buffers, event timing, and a fixture that skips without a GPU.
//
// NMSE = sum((got - ref)^2) / sum(ref^2) (ggml's test-backend-ops metric). Inputs are random with
// a fresh seed each run (printed on failure; set NOVASERVE_GPU_TEST_SEED to replay one).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/platform/vendor.h"
#include "quant/ggml_type.h"
#include "quant/quantize.h"

namespace novaserve::gpu::test {

/// The run's seed: NOVASERVE_GPU_TEST_SEED when set, else random (one per process).
inline uint32_t test_seed() {
  static const uint32_t seed = [] {
    const char* env = std::getenv("NOVASERVE_GPU_TEST_SEED");
    return env != nullptr ? static_cast<uint32_t>(std::strtoul(env, nullptr, 10))
                          : std::random_device{}();
  }();
  return seed;
}

/// n normal(0, scale) floats.
inline std::vector<float> random_floats(size_t n, std::mt19937& rng, float scale = 1.0f) {
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

/// n_out rows of n_in normal(0, 0.5) values quantized to `type` with quantize_row, back to back
/// (the layout of a GGUF weight tensor [n_out][n_in]); n_in must be a whole number of `type`'s
/// blocks.
inline std::vector<uint8_t> random_quantized(GgmlType type, int64_t n_in, int64_t n_out,
                                             std::mt19937& rng) {
  const uint64_t row_bytes = *ggml_row_bytes(type, static_cast<uint64_t>(n_in));
  std::vector<uint8_t> w(row_bytes * static_cast<uint64_t>(n_out));
  for (int64_t o = 0; o < n_out; ++o) {
    const auto row = random_floats(static_cast<size_t>(n_in), rng, 0.5f);
    EXPECT_TRUE(quantize_row(type, row.data(), w.data() + o * row_bytes, n_in).ok());
  }
  return w;
}

/// Normalized MSE of got against ref (the plain squared error when ref is all zeros).
inline double nmse(const std::vector<float>& got, const std::vector<float>& ref) {
  double err = 0.0, norm = 0.0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double d = static_cast<double>(got[i]) - ref[i];
    err += d * d;
    norm += static_cast<double>(ref[i]) * ref[i];
  }
  return norm > 0.0 ? err / norm : err;
}

template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0;
}

/// Device memory of n T's (zero-filled), freed on scope exit.
template <typename T>
class DeviceBuffer {
 public:
  explicit DeviceBuffer(size_t n) : n_(n) {
    const size_t bytes = std::max<size_t>(n, 1) * sizeof(T);
    EXPECT_EQ(cudaMalloc(reinterpret_cast<void**>(&p_), bytes), cudaSuccess);
    EXPECT_EQ(cudaMemset(p_, 0, bytes), cudaSuccess);
  }
  explicit DeviceBuffer(const std::vector<T>& host) : DeviceBuffer(host.size()) {
    EXPECT_EQ(cudaMemcpy(p_, host.data(), n_ * sizeof(T), cudaMemcpyHostToDevice), cudaSuccess);
  }
  ~DeviceBuffer() { (void)cudaFree(p_); }
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  T* get() const { return p_; }
  size_t size() const { return n_; }
  std::vector<T> download() const {
    std::vector<T> host(n_);
    EXPECT_EQ(cudaMemcpy(host.data(), p_, n_ * sizeof(T), cudaMemcpyDeviceToHost), cudaSuccess);
    return host;
  }

 private:
  T* p_ = nullptr;
  size_t n_ = 0;
};

/// Milliseconds between an event recorded on `stream` before enqueue() and one recorded after it,
/// waiting for the second: the device time of the work enqueue() puts on `stream`. A failing CUDA
/// call fails the test (EXPECT); the time is then meaningless.
inline float elapsed_ms(cudaStream_t stream, const std::function<void()>& enqueue) {
  cudaEvent_t start = nullptr, stop = nullptr;
  EXPECT_EQ(cudaEventCreate(&start), cudaSuccess);
  EXPECT_EQ(cudaEventCreate(&stop), cudaSuccess);
  EXPECT_EQ(cudaEventRecord(start, stream), cudaSuccess);
  enqueue();
  EXPECT_EQ(cudaEventRecord(stop, stream), cudaSuccess);
  EXPECT_EQ(cudaEventSynchronize(stop), cudaSuccess);
  float ms = 0.0f;
  EXPECT_EQ(cudaEventElapsedTime(&ms, start, stop), cudaSuccess);
  (void)cudaEventDestroy(start);
  (void)cudaEventDestroy(stop);
  return ms;
}

/// Fixture for tests that need a GPU: skips with the runtime's reason when there is none, and
/// provides a stream and a seeded generator.
class GpuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
      GTEST_SKIP() << "no GPU (" << (e != cudaSuccess ? cudaGetErrorString(e) : "0 devices")
                   << "); GPU op tests run on a GPU machine via bench/gpu/run.sh";
    }
    ASSERT_EQ(cudaStreamCreate(&stream_), cudaSuccess);
    rng_.seed(test_seed());
  }
  void TearDown() override {
    if (stream_ != nullptr) (void)cudaStreamDestroy(stream_);
  }
  void sync() { ASSERT_EQ(cudaStreamSynchronize(stream_), cudaSuccess); }
  static std::string seed_note() {
    return "NOVASERVE_GPU_TEST_SEED=" + std::to_string(test_seed());
  }

  cudaStream_t stream_ = nullptr;
  std::mt19937 rng_;
};

}  // namespace novaserve::gpu::test
