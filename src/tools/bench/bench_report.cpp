#include "tools/bench/bench_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "common/html_escape.h"

namespace novaserve {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

}  // namespace

std::string bench_table(const std::vector<BenchResult>& results) {
  std::string out =
      "| batch | prompt | gen | prefill tok/s | TTFT mean ms | TTFT max ms | decode tok/s/seq | "
      "decode tok/s | decode-phase tok/s | full-batch tok/s | ITL mean ms | ITL p99 ms | peak RSS "
      "MiB |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const BenchResult& r : results) {
    out += "| " + std::to_string(r.point.batch) + " | " + std::to_string(r.point.prompt) + " | " +
           std::to_string(r.point.gen) + " | " + fmt("%.1f", r.prefill_tok_s) + " | " +
           fmt("%.1f", 1e3 * r.ttft_mean_s) + " | " + fmt("%.1f", 1e3 * r.ttft_max_s) + " | " +
           fmt("%.1f", r.decode_tok_s_per_seq) + " | " + fmt("%.1f", r.decode_tok_s) + " | " +
           fmt("%.1f", r.decode_phase_tok_s) + " | " + fmt("%.1f", r.full_batch_tok_s) + " | " +
           fmt("%.2f", 1e3 * r.itl_mean_s) + " | " + fmt("%.2f", 1e3 * r.itl_p99_s) + " | " +
           fmt("%.0f", r.peak_rss_bytes / 1048576.0) + " |\n";
  }
  return out;
}

std::string bench_csv(const std::vector<BenchResult>& results) {
  std::string out =
      "batch,prompt,gen,wall_s,prefill_tok_s,ttft_mean_s,ttft_max_s,decode_tok_s_per_seq,"
      "decode_tok_s,decode_phase_tok_s,full_batch_tok_s,itl_mean_s,itl_p99_s,peak_rss_bytes\n";
  for (const BenchResult& r : results) {
    out += std::to_string(r.point.batch) + "," + std::to_string(r.point.prompt) + "," +
           std::to_string(r.point.gen) + "," + fmt("%.6f", r.wall_s) + "," +
           fmt("%.3f", r.prefill_tok_s) + "," + fmt("%.6f", r.ttft_mean_s) + "," +
           fmt("%.6f", r.ttft_max_s) + "," + fmt("%.3f", r.decode_tok_s_per_seq) + "," +
           fmt("%.3f", r.decode_tok_s) + "," + fmt("%.3f", r.decode_phase_tok_s) + "," +
           fmt("%.3f", r.full_batch_tok_s) + "," + fmt("%.6f", r.itl_mean_s) + "," +
           fmt("%.6f", r.itl_p99_s) + "," + std::to_string(r.peak_rss_bytes) + "\n";
  }
  return out;
}

std::string bench_json(const std::vector<BenchResult>& results,
                       const std::vector<std::pair<std::string, std::string>>& meta) {
  nlohmann::ordered_json j;
  for (const auto& [k, v] : meta) j[k] = v;
  j["results"] = nlohmann::ordered_json::array();
  for (const BenchResult& r : results) {
    j["results"].push_back({{"batch", r.point.batch},
                            {"prompt", r.point.prompt},
                            {"gen", r.point.gen},
                            {"wall_s", r.wall_s},
                            {"prefill_tok_s", r.prefill_tok_s},
                            {"ttft_mean_s", r.ttft_mean_s},
                            {"ttft_max_s", r.ttft_max_s},
                            {"decode_tok_s_per_seq", r.decode_tok_s_per_seq},
                            {"decode_tok_s", r.decode_tok_s},
                            {"decode_phase_tok_s", r.decode_phase_tok_s},
                            {"full_batch_tok_s", r.full_batch_tok_s},
                            {"itl_mean_s", r.itl_mean_s},
                            {"itl_p99_s", r.itl_p99_s},
                            {"peak_rss_bytes", r.peak_rss_bytes}});
  }
  return j.dump(1) + "\n";
}

std::string bench_svg(const std::vector<BenchResult>& results, const std::string& title) {
  constexpr double kW = 640, kH = 400, kLeft = 70, kRight = 150, kTop = 40, kBottom = 50;
  const double pw = kW - kLeft - kRight, ph = kH - kTop - kBottom;
  std::map<int32_t, std::vector<std::pair<int32_t, double>>> lines;  // prompt -> (batch, tok/s)
  int32_t max_batch = 1;
  double max_rate = 1;
  for (const BenchResult& r : results) {
    lines[r.point.prompt].emplace_back(r.point.batch, r.decode_tok_s);
    max_batch = std::max(max_batch, r.point.batch);
    max_rate = std::max(max_rate, r.decode_tok_s);
  }
  // y axis up to a round number; x axis log2(batch) from 1 to the largest batch.
  const double step = std::pow(10.0, std::floor(std::log10(max_rate)));
  const double y_max = std::ceil(max_rate / step) * step;
  const double x_max = std::max(1.0, std::log2(static_cast<double>(max_batch)));
  const auto x_of = [&](int32_t b) {
    return kLeft + pw * std::log2(static_cast<double>(b)) / x_max;
  };
  const auto y_of = [&](double v) { return kTop + ph * (1.0 - v / y_max); };
  static const char* kColors[] = {"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728",
                                  "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"};

  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kW) +
                  "\" height=\"" + fmt("%.0f", kH) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", kW / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" +
       html_escape(title) + "</text>\n";
  s += "<line x1=\"" + fmt("%.1f", kLeft) + "\" y1=\"" + fmt("%.1f", kTop + ph) + "\" x2=\"" +
       fmt("%.1f", kLeft + pw) + "\" y2=\"" + fmt("%.1f", kTop + ph) + "\" stroke=\"black\"/>\n";
  s += "<line x1=\"" + fmt("%.1f", kLeft) + "\" y1=\"" + fmt("%.1f", kTop) + "\" x2=\"" +
       fmt("%.1f", kLeft) + "\" y2=\"" + fmt("%.1f", kTop + ph) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 5; ++i) {
    const double v = y_max * i / 5;
    s += "<text x=\"" + fmt("%.1f", kLeft - 6) + "\" y=\"" + fmt("%.1f", y_of(v) + 4) +
         "\" text-anchor=\"end\">" + fmt("%.0f", v) + "</text>\n";
  }
  for (int32_t b = 1; b <= max_batch; b *= 2) {
    s += "<text x=\"" + fmt("%.1f", x_of(b)) + "\" y=\"" + fmt("%.1f", kTop + ph + 18) +
         "\" text-anchor=\"middle\">" + std::to_string(b) + "</text>\n";
  }
  s += "<text x=\"" + fmt("%.1f", kLeft + pw / 2) + "\" y=\"" + fmt("%.1f", kH - 10) +
       "\" text-anchor=\"middle\">batch (concurrent sequences)</text>\n";
  s += "<text x=\"16\" y=\"" + fmt("%.1f", kTop + ph / 2) +
       "\" text-anchor=\"middle\" transform=\"rotate(-90 16 " + fmt("%.1f", kTop + ph / 2) +
       ")\">aggregate decode tok/s</text>\n";
  size_t k = 0;
  for (auto& [prompt, pts] : lines) {
    std::sort(pts.begin(), pts.end());
    const char* color = kColors[k % 8];
    std::string path;
    for (const auto& [b, v] : pts) {
      path += (path.empty() ? "M" : " L") + fmt("%.1f", x_of(b)) + " " + fmt("%.1f", y_of(v));
      s += "<circle cx=\"" + fmt("%.1f", x_of(b)) + "\" cy=\"" + fmt("%.1f", y_of(v)) +
           "\" r=\"3\" fill=\"" + color + "\"/>\n";
    }
    s += "<path d=\"" + path + "\" fill=\"none\" stroke=\"" + color + "\" stroke-width=\"2\"/>\n";
    const double ly = kTop + 16 * k;
    s += "<line x1=\"" + fmt("%.1f", kW - kRight + 12) + "\" y1=\"" + fmt("%.1f", ly) + "\" x2=\"" +
         fmt("%.1f", kW - kRight + 32) + "\" y2=\"" + fmt("%.1f", ly) + "\" stroke=\"" + color +
         "\" stroke-width=\"2\"/>\n";
    s += "<text x=\"" + fmt("%.1f", kW - kRight + 38) + "\" y=\"" + fmt("%.1f", ly + 4) +
         "\">prompt " + std::to_string(prompt) + "</text>\n";
    ++k;
  }
  s += "</svg>\n";
  return s;
}

std::string grammar_slowdown_table(const std::vector<BenchResult>& results,
                                   const std::string& label) {
  std::string out;
  char line[320];
  for (size_t i = 1; i < results.size(); ++i) {
    const BenchResult& c = results[i];
    const BenchResult& u = results[i - 1];
    if (!c.point.grammar || u.point.grammar) continue;
    if (out.empty()) {
      out = "\nstructured output (" + label +
            ") against unconstrained decoding:\n\n"
            "| batch | prompt | decode tok/s/seq | constrained | slowdown | ITL ms | constrained "
            "ITL ms | tokens/seq | masks ms/step | mask wait ms/step |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n";
    }
    const double slowdown =
        u.decode_tok_s_per_seq > 0 ? 1.0 - c.decode_tok_s_per_seq / u.decode_tok_s_per_seq : 0.0;
    const double steps = std::max(1.0, c.mean_generated);
    std::snprintf(line, sizeof line,
                  "| %d | %d | %.1f | %.1f | %.1f%% | %.2f | %.2f | %.1f | %.3f | %.3f |\n",
                  c.point.batch, c.point.prompt, u.decode_tok_s_per_seq, c.decode_tok_s_per_seq,
                  100.0 * slowdown, 1e3 * u.itl_mean_s, 1e3 * c.itl_mean_s, c.mean_generated,
                  1e3 * c.mask_s / steps, 1e3 * c.mask_wait_s / steps);
    out += line;
  }
  return out;
}

}  // namespace novaserve
