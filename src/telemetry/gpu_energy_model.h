// The latency/power model of one GPU that `governor simulate` replays a trace through. Every
// default below is either measured on this project's H200 runs (docs/benchmarks.md) or taken
// from a published source, cited where it is set; none was tuned to the target.
//
//   step time(f)   = Σ_part cost_part × (m_part + (1 − m_part) × f_max / f)
//                    m_part: the memory-bound share of that part (flat in f), the rest
//                    compute/latency-bound (∝ 1/f), from the per-op profile;
//   busy power(f)  = P_idle + (P_busy − P_idle) × (u + (1 − u) × (f/f_max) × (V(f)/V_max)²)
//                    u: the share of dynamic power outside the SM clock domain (HBM, I/O);
//                    dynamic CMOS power ∝ f·V²;
//   V(f)/V_max     = v_min for f ≤ f_knee, rising linearly to 1 at f_max (a stated
//                    assumption: vendors publish no H100/H200 V/f table);
//   idle power     = P_idle (no step running; the driver drops clocks by itself).
#pragma once

namespace novaserve {

struct GpuEnergyModel {
  double max_clock_hertz = 1980e6;  ///< H200/H100 SXM max SM clock (NVIDIA datasheets)
  double knee_clock_hertz = 990e6;  ///< assumed: V reaches v_min at half the max clock
  double v_min_ratio = 0.7;         ///< assumed V(f_knee)/V(f_max)
  double idle_watts = 75;           ///< assumed H200 idle draw; run.sh --governor measures it
  double busy_watts = 600;          ///< assumed draw of decode-heavy steps at max clock (TDP 700)
  double uncore_power_share = 0.3;  ///< assumed share of dynamic power not on the SM clock
  // The engine's step cost model calibrated on one H200 at default clocks for the 8B Q4_0
  // synth model (docs/benchmarks.md, "One H200 ..."): fixed + per token + per sequence.
  double step_fixed_seconds = 3.75e-3;
  double step_per_token_seconds = 0.0417e-3;
  double step_per_sequence_seconds = 0.186e-3;
  // Memory-bound shares from the per-op profile (docs/benchmarks.md, "Where the time goes"):
  // matmuls + attention of the decode step at batch 1 (2.65 of 3.62 ms) for the fixed part, at
  // batch 32 (7.22 of 8.43 ms) for the per-sequence part; prefill's tensor-core GEMMs and
  // attention (52.6 of 63.1 ms) are compute-bound, so its per-token part is 17% memory-bound.
  double fixed_memory_share = 0.73;
  double per_sequence_memory_share = 0.86;
  double per_token_memory_share = 0.17;

  /// V(f)/V(f_max).
  double voltage_ratio(double hertz) const;
  /// Seconds of one engine step at SM clock `hertz` with `tokens` tokens (prompt + decode) of
  /// `sequences` sequences.
  double step_seconds(double hertz, int tokens, int sequences) const;
  /// Board power (W) while a step runs at `hertz`.
  double busy_power_watts(double hertz) const;
};

}  // namespace novaserve
