// Batch invariance of the CPU matmul: a row's outputs are bitwise identical whether it is
// computed alone or inside batches of 2..16 with different neighbours, at any position, with
// 1..4 threads; for every weight type, both modes and both kernel sets.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "matmul_test_util.h"

namespace novaserve {
namespace {

using matmul_test::all_types;
using matmul_test::type_name;

enum class Isa { kScalar, kAvx2 };

class MatmulBatchInvariance : public ::testing::TestWithParam<std::tuple<GgmlType, ActQuant, Isa>> {
 protected:
  void SetUp() override {
    if (std::get<2>(GetParam()) == Isa::kAvx2 && !cpu_has_avx2()) {
      GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
    }
    cpu_force_scalar(std::get<2>(GetParam()) == Isa::kScalar);
  }
  void TearDown() override { cpu_force_scalar(false); }
};

TEST_P(MatmulBatchInvariance, RowResultIndependentOfBatchAndThreads) {
  const auto [type, mode, isa] = GetParam();
  const int64_t in = 512, out = 37;  // odd out: several column chunks and tile tails
  const auto w = matmul_test::random_weights(type, in, out, 1234);
  constexpr int kPoolRows = 24;
  const auto xs = matmul_test::random_x(kPoolRows * in, 4321);
  std::vector<std::unique_ptr<ThreadPool>> pools;
  for (int t = 1; t <= 4; ++t) pools.push_back(std::make_unique<ThreadPool>(t));

  std::vector<float> alone(static_cast<size_t>(kPoolRows * out));
  for (int r = 0; r < kPoolRows; ++r) {
    matmul(w.data(), type, in, out, xs.data() + r * in, 1, alone.data() + r * out, *pools[0], mode);
  }
  std::mt19937 rng(42);
  std::vector<float> x, y;
  for (int n = 2; n <= 16; ++n) {
    for (int t = 0; t < 4; ++t) {
      std::vector<int> ids(static_cast<size_t>(n));
      for (auto& id : ids) id = static_cast<int>(rng() % kPoolRows);
      x.resize(static_cast<size_t>(n * in));
      y.assign(static_cast<size_t>(n * out), 0.0f);
      for (int i = 0; i < n; ++i) {
        std::memcpy(x.data() + i * in, xs.data() + ids[i] * in, in * sizeof(float));
      }
      matmul(w.data(), type, in, out, x.data(), n, y.data(), *pools[t], mode);
      for (int i = 0; i < n; ++i) {
        ASSERT_EQ(0,
                  std::memcmp(y.data() + i * out, alone.data() + ids[i] * out, out * sizeof(float)))
            << type_name(type) << " batch " << n << " threads " << t + 1 << " position " << i;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, MatmulBatchInvariance,
                         ::testing::Combine(::testing::ValuesIn(all_types()),
                                            ::testing::Values(ActQuant::kNone, ActQuant::kQ8),
                                            ::testing::Values(Isa::kScalar, Isa::kAvx2)),
                         [](const auto& info) {
                           return type_name(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == ActQuant::kNone ? "_exact" : "_q8") +
                                  (std::get<2>(info.param) == Isa::kScalar ? "_scalar" : "_avx2");
                         });

}  // namespace
}  // namespace novaserve
