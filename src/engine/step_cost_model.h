// Step cost model: predicts the wall time of one engine step from the shape of its plan, so that
// the scheduler can cap prompt chunks and keep running decodes under a step-time target
// (stall-free batching, Sarathi-Serve: Agrawal et al., OSDI 2024, section 4). Contract:
// docs/engine.md, "Stall-free chunked prefill".
#pragma once

#include <array>
#include <cstdint>

namespace novaserve {

/// The cost-relevant shape of a step (or of a plan being built).
struct StepShape {
  int64_t tokens = 0;  ///< rows computed: one per decode, chunk length per prompt chunk
  int64_t seqs = 0;    ///< sequences in the step
  /// Attention work in query-key pairs: a chunk of n tokens at positions [p, p + n) attends to
  /// n * p + n * (n + 1) / 2 keys (causal), a decode at position p to p + 1.
  double attention_pairs = 0.0;

  /// Adds one sequence computing `n` >= 1 tokens at positions [pos0, pos0 + n).
  void add(int32_t pos0, int32_t n);
};

/// Predicts a step's wall time in milliseconds. Predictions must not decrease when a step gains
/// tokens, sequences or attention pairs (the scheduler searches chunk lengths by bisection).
class StepCostModel {
 public:
  virtual ~StepCostModel() = default;
  /// Predicted wall time of a step of `shape`, in ms (>= 0). 0 for an empty shape.
  virtual double predict_ms(const StepShape& shape) const = 0;
};

/// t = c0 + c_tok * tokens + c_seq * seqs + c_att * attention_pairs (ms), the coefficients kept
/// non-negative. Fitted by exponentially weighted least squares (each observation weighs
/// kForgetting times the one after it), so the model follows the machine while it serves, with a
/// small ridge term that pulls the coefficients towards an anchor: the fit of the start-up
/// calibration (Engine::calibrate, then anchor()). Directions that recent steps do not excite
/// (say, only decodes for an hour) thus keep their calibrated values instead of drifting.
/// Not thread-safe: the engine thread owns it.
class LinearStepCostModel final : public StepCostModel {
 public:
  static constexpr int kTerms = 4;
  static constexpr double kForgetting = 0.995;

  double predict_ms(const StepShape& shape) const override;

  /// Adds one measured step: `shape` took `ms` milliseconds (ignored when ms is not finite or
  /// negative, or the shape is empty).
  void observe(const StepShape& shape, double ms);

  /// Makes the current fit the anchor of later fits.
  void anchor() { anchor_ = theta_; }

  /// Number of steps observed so far.
  int64_t observations() const { return observations_; }
  /// The fitted coefficients {c0, c_tok, c_seq, c_att}, clamped at 0 (ms, ms/token, ms/seq,
  /// ms/pair).
  std::array<double, kTerms> coefficients() const;

 private:
  using Vec = std::array<double, kTerms>;
  Vec theta_{};                                           // the fit, in scaled features
  Vec anchor_{};                                          // what the ridge term pulls towards
  std::array<std::array<double, kTerms>, kTerms> xtx_{};  // weighted sum of x x'
  Vec xty_{};                                             // weighted sum of x y
  int64_t observations_ = 0;
};

}  // namespace novaserve
