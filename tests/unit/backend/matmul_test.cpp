// CPU matmul: accuracy against a double-precision reference for every supported weight type,
// both activation modes and both kernel sets (AVX2 and scalar); validation errors.
#include "backend/cpu/matmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <tuple>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "matmul_test_util.h"

namespace novaserve {
namespace {

using matmul_test::all_types;
using matmul_test::Decoded;
using matmul_test::type_name;

enum class Isa { kScalar, kAvx2 };

class MatmulAccuracy : public ::testing::TestWithParam<std::tuple<GgmlType, ActQuant, Isa>> {
 protected:
  void SetUp() override {
    if (std::get<2>(GetParam()) == Isa::kAvx2 && !cpu_has_avx2()) {
      GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
    }
    cpu_force_scalar(std::get<2>(GetParam()) == Isa::kScalar);
  }
  void TearDown() override { cpu_force_scalar(false); }
};

std::vector<int64_t> test_ins(GgmlType t) {
  if (ggml_type_traits(t).block_elems == 256) return {256, 768};
  return {32, 96, 576};
}

TEST_P(MatmulAccuracy, MatchesDoubleReference) {
  const auto [type, mode, isa] = GetParam();
  ThreadPool pool(3);
  for (int64_t in : test_ins(type)) {
    for (int64_t out : {1, 5, 13}) {
      const auto w = matmul_test::random_weights(type, in, out, static_cast<uint32_t>(in + out));
      const Decoded dec = matmul_test::decode(type, w, in, out);
      for (int64_t rows = 1; rows <= 7; ++rows) {
        const auto x = matmul_test::random_x(rows * in, static_cast<uint32_t>(rows));
        std::vector<float> y(static_cast<size_t>(rows * out), NAN);
        matmul(w.data(), type, in, out, x.data(), rows, y.data(), pool, mode);
        for (int64_t r = 0; r < rows; ++r) {
          for (int64_t o = 0; o < out; ++o) {
            const auto e = mode == ActQuant::kNone
                               ? matmul_test::expect_exact(dec, x.data() + r * in, in, o)
                               : matmul_test::expect_q8(dec, x.data() + r * in, in, o);
            ASSERT_LE(std::fabs(y[r * out + o] - e.ref), e.bound)
                << type_name(type) << " in=" << in << " out=" << out << " rows=" << rows
                << " r=" << r << " o=" << o << " y=" << y[r * out + o] << " ref=" << e.ref;
          }
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(All, MatmulAccuracy,
                         ::testing::Combine(::testing::ValuesIn(all_types()),
                                            ::testing::Values(ActQuant::kNone, ActQuant::kQ8),
                                            ::testing::Values(Isa::kScalar, Isa::kAvx2)),
                         [](const auto& info) {
                           return type_name(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == ActQuant::kNone ? "_exact" : "_q8") +
                                  (std::get<2>(info.param) == Isa::kScalar ? "_scalar" : "_avx2");
                         });

class MatmulExactRelativeError : public ::testing::TestWithParam<std::tuple<GgmlType, Isa>> {
 protected:
  void SetUp() override {
    if (std::get<1>(GetParam()) == Isa::kAvx2 && !cpu_has_avx2()) {
      GTEST_SKIP() << "CPU lacks AVX2/FMA/F16C";
    }
    cpu_force_scalar(std::get<1>(GetParam()) == Isa::kScalar);
  }
  void TearDown() override { cpu_force_scalar(false); }
};

TEST_P(MatmulExactRelativeError, AboutOneUlpTimesSqrtN) {
  // Random signs: the f32 error of an n-term sum grows like u * sqrt(n) relative to the result
  // (u = 6e-8), i.e. ~2e-6 at n = 1536; 1e-5 leaves room for the lane/block structure.
  const GgmlType type = std::get<0>(GetParam());
  const ActQuant mode = ActQuant::kNone;
  const int64_t in = 1536, out = 37, rows = 3;
  ThreadPool pool(2);
  const auto w = matmul_test::random_weights(type, in, out, 99);
  const Decoded dec = matmul_test::decode(type, w, in, out);
  const auto x = matmul_test::random_x(rows * in, 98);
  std::vector<float> y(static_cast<size_t>(rows * out));
  matmul(w.data(), type, in, out, x.data(), rows, y.data(), pool, mode);
  double err2 = 0, ref2 = 0;
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t o = 0; o < out; ++o) {
      const double ref = matmul_test::expect_exact(dec, x.data() + r * in, in, o).ref;
      err2 += (y[r * out + o] - ref) * (y[r * out + o] - ref);
      ref2 += ref * ref;
    }
  }
  EXPECT_LT(std::sqrt(err2 / ref2), 1e-5) << type_name(type);
}

INSTANTIATE_TEST_SUITE_P(All, MatmulExactRelativeError,
                         ::testing::Combine(::testing::ValuesIn(all_types()),
                                            ::testing::Values(Isa::kScalar, Isa::kAvx2)),
                         [](const auto& info) {
                           return type_name(std::get<0>(info.param)) +
                                  (std::get<1>(info.param) == Isa::kScalar ? "_scalar" : "_avx2");
                         });

TEST(Matmul, AvxVnniKernelsMatchAvx2Bitwise) {
  // The integer dot products are exact either way, so the two instruction sets must agree.
  if (!cpu_has_avx2()) GTEST_SKIP() << "CPU lacks AVX2";
  cpu_force_scalar(false);
  if (!cpu_use_avxvnni()) GTEST_SKIP() << "CPU lacks AVX-VNNI";
  ThreadPool pool(2);
  for (GgmlType t : all_types()) {
    const int64_t in = 512, out = 11, rows = 5;
    const auto w = matmul_test::random_weights(t, in, out, 5);
    const auto x = matmul_test::random_x(rows * in, 6);
    std::vector<float> y1(rows * out), y2(rows * out);
    matmul(w.data(), t, in, out, x.data(), rows, y1.data(), pool, ActQuant::kQ8);
    cpu_disable_avxvnni(true);
    matmul(w.data(), t, in, out, x.data(), rows, y2.data(), pool, ActQuant::kQ8);
    cpu_disable_avxvnni(false);
    EXPECT_EQ(0, std::memcmp(y1.data(), y2.data(), y1.size() * sizeof(float))) << type_name(t);
  }
}

TEST(MatmulCheck, RejectsUnsupportedTypesAndShapes) {
  Status st = matmul_check(GgmlType::kQ8_1, 64);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  st = matmul_check(GgmlType::kI32, 64);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  st = matmul_check(static_cast<GgmlType>(77), 64);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  st = matmul_check(GgmlType::kQ4_K, 288);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  EXPECT_FALSE(matmul_check(GgmlType::kQ4_0, 48).ok());
  EXPECT_FALSE(matmul_check(GgmlType::kF32, 48).ok());  // activation blocks are 32 wide
  EXPECT_FALSE(matmul_check(GgmlType::kQ4_0, 0).ok());
  for (GgmlType t : all_types()) {
    EXPECT_TRUE(matmul_check(t, 768).ok()) << type_name(t);
  }
}

TEST(Matmul, EmptyShapesDoNothing) {
  ThreadPool pool(2);
  const auto w = matmul_test::random_weights(GgmlType::kQ4_1, 64, 3, 1);
  const auto x = matmul_test::random_x(64, 2);
  float y[3] = {7, 7, 7};
  matmul(w.data(), GgmlType::kQ4_1, 64, 3, x.data(), 0, y, pool, ActQuant::kQ8);
  matmul(w.data(), GgmlType::kQ4_1, 64, 0, x.data(), 1, y, pool, ActQuant::kQ8);
  EXPECT_EQ(y[0], 7);
}

}  // namespace
}  // namespace novaserve
