// Output formats of `novaserve bench`: a text table, CSV, JSON and an SVG chart.
#pragma once

#include <string>
#include <vector>

#include "tools/bench/bench_runner.h"

namespace novaserve {

/// A Markdown table, one row per grid point (rates in tok/s, times in ms, memory in MiB).
std::string bench_table(const std::vector<BenchResult>& results);

/// With constrained points (BenchPoint::grammar) each right after its unconstrained twin: a
/// Markdown table per (batch, prompt) of per-sequence decode rate and mean ITL, both ways, the
/// slowdown (1 - constrained / unconstrained per-sequence rate), tokens generated per sequence,
/// the mask computation and the mask wait per step (ms). `label` names the grammar (the schema
/// file). Empty when there are no constrained points.
std::string grammar_slowdown_table(const std::vector<BenchResult>& results,
                                   const std::string& label);

/// CSV with a header row; the same columns as bench_table in base units (s, tok/s, bytes).
std::string bench_csv(const std::vector<BenchResult>& results);

/// JSON: {"results": [{"batch", "prompt", "gen", "prefill_tok_s", ...}, ...], plus `meta`
/// (free-form strings such as the model, device and date) as top-level fields.
std::string bench_json(const std::vector<BenchResult>& results,
                       const std::vector<std::pair<std::string, std::string>>& meta);

/// An SVG line chart of aggregate decode tok/s (y) against batch size (x, log2 scale), one line
/// per prompt length, with axes, ticks and a legend. Written by hand: the chart is a few dozen
/// elements and no Debian C++ package draws SVG plots.
std::string bench_svg(const std::vector<BenchResult>& results, const std::string& title);

}  // namespace novaserve
