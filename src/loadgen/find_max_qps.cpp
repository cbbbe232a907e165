#include "loadgen/find_max_qps.h"

#include <algorithm>
#include <cmath>

namespace novaserve {

Result<MaxQpsResult> find_max_qps(const MaxQpsSearchOptions& options,
                                  const std::function<Result<bool>(double qps)>& probe,
                                  const std::function<Result<bool>(double qps)>& confirm) {
  if (!(options.start_qps > 0) || !std::isfinite(options.start_qps)) {
    return Err(ErrorCode::kInvalidInput, "the starting QPS must be > 0");
  }
  if (!(options.tolerance > 0 && options.tolerance < 1)) {
    return Err(ErrorCode::kInvalidInput, "--qps-tolerance must be in (0, 1)");
  }
  if (!(options.min_qps > 0) || options.min_qps > options.start_qps ||
      options.max_qps < options.start_qps) {
    return Err(ErrorCode::kInvalidInput, "need 0 < min QPS <= start QPS <= --max-qps");
  }
  if (options.max_confirmations < 1) {
    return Err(ErrorCode::kInvalidInput, "the search needs at least one confirmation run");
  }
  MaxQpsResult out;
  // A failure is suspect when it is the search's first probe (a cold server) or when a probe
  // at a higher rate met the SLOs (probes of one length should be monotone in the rate; a
  // confirmation is a longer test, so a refuted rate's probe still counts).
  const auto suspect = [&](double qps) {
    if (out.probes.size() == 1) return true;
    for (const QpsProbe& p : out.probes) {
      if (p.met && p.qps > qps) return true;
    }
    return false;
  };
  const auto run = [&](double qps) -> Result<bool> {
    auto met = probe(qps);
    if (!met.ok()) return met;
    out.probes.push_back({qps, *met, false});
    if (*met || !suspect(qps)) return met;
    auto again = probe(qps);  // trusted whichever way it goes
    if (again.ok()) out.probes.push_back({qps, *again, true});
    return again;
  };
  double pass = 0;  // highest rate that met the SLOs (and was not refuted by a confirmation)
  double fail = 0;  // lowest rate that did not; 0 = none yet
  bool at_cap = false;
  for (double qps = options.start_qps; fail == 0;) {
    auto met = run(qps);
    if (!met.ok()) return met.error();
    if (!*met) {
      fail = qps;
    } else {
      pass = qps;
      if (qps >= options.max_qps) {
        at_cap = true;
        break;
      }
      qps = std::min(qps * 2, options.max_qps);
    }
  }
  for (int confirmations = 0;;) {
    while (!at_cap && fail - pass > options.tolerance * fail) {
      if (pass == 0 && fail < options.min_qps) break;
      const double qps = (pass + fail) / 2;
      auto met = run(qps);
      if (!met.ok()) return met.error();
      (*met ? pass : fail) = qps;
    }
    if (pass == 0) return out;  // no rate (left) meets the SLOs
    ++confirmations;
    auto met = confirm(pass);
    if (!met.ok()) return met.error();
    out.confirmations.push_back({pass, *met});
    if (*met) {
      out.max_qps = pass;
      out.hit_max = at_cap;
      return out;
    }
    // The budget is spent: probing on could only find a rate that it may not confirm.
    if (confirmations == options.max_confirmations) return out;
    // Refuted: the rate fails after all. Resume below it from the highest lower pass.
    fail = pass;
    at_cap = false;
    pass = 0;
    for (const QpsProbe& p : out.probes) {
      if (p.met && p.qps < fail) pass = std::max(pass, p.qps);
    }
  }
}

}  // namespace novaserve
