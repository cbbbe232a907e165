#include "engine/step_cost_model.h"

#include <algorithm>
#include <cmath>

namespace novaserve {
namespace {

// Features are scaled so that the calibration shapes (up to 128 tokens, 8 sequences, ~7e4
// attention pairs) land near 1, which keeps the normal equations well conditioned in doubles.
constexpr std::array<double, LinearStepCostModel::kTerms> kScale = {1.0, 1e-2, 1e-1, 1e-5};
// Ridge weight towards the anchor. Far below what one observation adds to x x' (~1 per scaled
// feature), so it decides only the directions the data leaves open.
constexpr double kRidge = 1e-6;

using Vec = std::array<double, LinearStepCostModel::kTerms>;
using Mat = std::array<Vec, LinearStepCostModel::kTerms>;

Vec features(const StepShape& s) {
  return {kScale[0], static_cast<double>(s.tokens) * kScale[1],
          static_cast<double>(s.seqs) * kScale[2], s.attention_pairs * kScale[3]};
}

// Solves a x = y for a symmetric positive definite 4x4 `a` (Gaussian elimination with partial
// pivoting; written out because a linear-algebra library for one 4x4 solve is not worth a
// dependency).
Vec solve(Mat a, Vec y) {
  constexpr int n = LinearStepCostModel::kTerms;
  for (int c = 0; c < n; ++c) {
    int piv = c;
    for (int r = c + 1; r < n; ++r) {
      if (std::abs(a[r][c]) > std::abs(a[piv][c])) piv = r;
    }
    std::swap(a[c], a[piv]);
    std::swap(y[c], y[piv]);
    for (int r = c + 1; r < n; ++r) {
      const double f = a[r][c] / a[c][c];
      for (int k = c; k < n; ++k) a[r][k] -= f * a[c][k];
      y[r] -= f * y[c];
    }
  }
  Vec x{};
  for (int r = n - 1; r >= 0; --r) {
    double v = y[r];
    for (int k = r + 1; k < n; ++k) v -= a[r][k] * x[k];
    x[r] = v / a[r][r];
  }
  return x;
}

}  // namespace

void StepShape::add(int32_t pos0, int32_t n) {
  tokens += n;
  seqs += 1;
  const double nn = n;
  attention_pairs += nn * pos0 + nn * (nn + 1.0) / 2.0;
}

double LinearStepCostModel::predict_ms(const StepShape& shape) const {
  if (shape.seqs == 0) return 0.0;
  const Vec x = features(shape);
  double t = 0.0;
  for (int i = 0; i < kTerms; ++i) t += std::max(0.0, theta_[i]) * x[i];
  return t;
}

void LinearStepCostModel::observe(const StepShape& shape, double ms) {
  if (!std::isfinite(ms) || ms < 0.0 || shape.seqs == 0) return;
  const Vec x = features(shape);
  for (int i = 0; i < kTerms; ++i) {
    for (int j = 0; j < kTerms; ++j) xtx_[i][j] = kForgetting * xtx_[i][j] + x[i] * x[j];
    xty_[i] = kForgetting * xty_[i] + x[i] * ms;
  }
  // Minimizes sum_k w_k (y_k - x_k' theta)^2 + kRidge |theta - anchor|^2.
  Mat a = xtx_;
  Vec y = xty_;
  for (int i = 0; i < kTerms; ++i) {
    a[i][i] += kRidge;
    y[i] += kRidge * anchor_[i];
  }
  theta_ = solve(a, y);
  ++observations_;
}

std::array<double, LinearStepCostModel::kTerms> LinearStepCostModel::coefficients() const {
  Vec c{};
  for (int i = 0; i < kTerms; ++i) c[i] = std::max(0.0, theta_[i]) * kScale[i];
  return c;
}

}  // namespace novaserve
