// Shared pieces of the GPU op tests: the random seed, random inputs, normalized MSE, device
// buffers, and a fixture that skips without a GPU.
//
// NMSE = sum((got - ref)^2) / sum(ref^2) (ggml's test-backend-ops metric). Inputs are random with
// a fresh seed each run (printed on failure; set NOVASERVE_GPU_TEST_SEED to replay one).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/vendor.h"

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
