#include "loadgen/latency_svg.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "common/html_escape.h"

namespace novaserve {
namespace {

constexpr double kW = 800, kLeft = 70, kRight = 80, kTop = 40, kPanelH = 280, kGap = 60;
constexpr double kPlotW = kW - kLeft - kRight;
constexpr size_t kMaxDrawn = 4000;

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), f, v);
  return buf;
}

// A round axis maximum >= v and its tick step: 1, 2 or 5 times a power of ten, ~5 ticks.
std::pair<double, double> nice_axis(double v) {
  if (!(v > 0) || !std::isfinite(v)) v = 1;
  const double raw = v / 5;
  const double p = std::pow(10.0, std::floor(std::log10(raw)));
  double step = p;
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    step = m * p;
    if (step >= raw) break;
  }
  return {std::ceil(v / step) * step, step};
}

std::string line(double x1, double y1, double x2, double y2, const char* stroke) {
  return "<line x1=\"" + fmt("%.1f", x1) + "\" y1=\"" + fmt("%.1f", y1) + "\" x2=\"" +
         fmt("%.1f", x2) + "\" y2=\"" + fmt("%.1f", y2) + "\" stroke=\"" + stroke + "\"/>\n";
}

std::string text(double x, double y, const char* anchor, const std::string& s,
                 const char* color = "black") {
  return "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", y) + "\" text-anchor=\"" + anchor +
         "\" fill=\"" + color + "\">" + html_escape(s) + "</text>\n";
}

std::string label_of(double v, double step) {
  return fmt(step < 1 ? (step < 0.1 ? "%.2f" : "%.1f") : "%.0f", v);
}

// Axes, y ticks on the left (and the right when right_max > 0) and x ticks of a panel.
std::string panel_axes(double top, double x_max, double x_step, double y_max, double y_step,
                       const std::string& y_label, double right_max, double right_step,
                       const std::string& right_label) {
  const double bottom = top + kPanelH;
  std::string s;
  for (double v = 0; v <= y_max + y_step / 2; v += y_step) {
    const double y = bottom - kPanelH * v / y_max;
    s += line(kLeft, y, kLeft + kPlotW, y, "#eeeeee");  // grid first, under the axes
    s += text(kLeft - 6, y + 4, "end", label_of(v, y_step));
  }
  s += line(kLeft, bottom, kLeft + kPlotW, bottom, "black");
  s += line(kLeft, top, kLeft, bottom, "black");
  if (right_max > 0) {
    s += line(kLeft + kPlotW, top, kLeft + kPlotW, bottom, "black");
    for (double v = 0; v <= right_max + right_step / 2; v += right_step) {
      s += text(kLeft + kPlotW + 6, bottom - kPanelH * v / right_max + 4, "start",
                label_of(v, right_step), "#9467bd");
    }
    const double mid = top + kPanelH / 2, x = kW - 14;
    s += "<text x=\"" + fmt("%.1f", x) + "\" y=\"" + fmt("%.1f", mid) +
         "\" text-anchor=\"middle\" fill=\"#9467bd\" transform=\"rotate(90 " + fmt("%.1f", x) +
         " " + fmt("%.1f", mid) + ")\">" + html_escape(right_label) + "</text>\n";
  }
  for (double v = 0; v <= x_max + x_step / 2; v += x_step) {
    s += text(kLeft + kPlotW * v / x_max, bottom + 16, "middle", label_of(v, x_step));
  }
  s += text(kLeft + kPlotW / 2, bottom + 34, "middle", "time since start of run (s)");
  const double mid = top + kPanelH / 2;
  s += "<text x=\"18\" y=\"" + fmt("%.1f", mid) +
       "\" text-anchor=\"middle\" transform=\"rotate(-90 18 " + fmt("%.1f", mid) + ")\">" +
       html_escape(y_label) + "</text>\n";
  return s;
}

}  // namespace

std::string latency_svg(const std::vector<RequestRecord>& records,
                        const std::vector<ServerSample>& samples, const std::string& title) {
  double t_max = 0, lat_max = 0;
  for (const RequestRecord& r : records) {
    t_max = std::max(t_max, r.start_s);
    if (r.ok()) lat_max = std::max(lat_max, r.e2e_s);
  }
  for (const ServerSample& s : samples) t_max = std::max(t_max, s.t_s);
  const auto [x_max, x_step] = nice_axis(t_max);
  const auto [y_max, y_step] = nice_axis(lat_max);
  const bool soak = !samples.empty();
  const double height = kTop + kPanelH + kGap + (soak ? kPanelH + kGap : 0);
  // A copy, not the structured binding: clang 14 (the fuzz build) cannot capture bindings.
  const double x_range = x_max;
  const auto x_of = [&](double t) { return kLeft + kPlotW * t / x_range; };

  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + fmt("%.0f", kW) +
                  "\" height=\"" + fmt("%.0f", height) +
                  "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  s += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  s += "<text x=\"" + fmt("%.0f", kW / 2) + "\" y=\"22\" text-anchor=\"middle\" font-size=\"14\">" +
       html_escape(title) + "</text>\n";
  s += panel_axes(kTop, x_max, x_step, y_max, y_step, "latency (s)", 0, 0, "");
  const double bottom = kTop + kPanelH;
  const size_t stride = std::max<size_t>(1, (records.size() + kMaxDrawn - 1) / kMaxDrawn);
  std::string ttft_dots, e2e_dots, fails;
  for (size_t i = 0; i < records.size(); i += stride) {
    const RequestRecord& r = records[i];
    const double x = x_of(r.start_s);
    if (!r.ok()) {
      fails += "M" + fmt("%.1f", x - 3) + " " + fmt("%.1f", kTop - 3) + " l6 6 m0 -6 l-6 6 ";
      continue;
    }
    e2e_dots += "<circle cx=\"" + fmt("%.1f", x) + "\" cy=\"" +
                fmt("%.1f", bottom - kPanelH * r.e2e_s / y_max) + "\" r=\"2\"/>";
    ttft_dots += "<circle cx=\"" + fmt("%.1f", x) + "\" cy=\"" +
                 fmt("%.1f", bottom - kPanelH * r.ttft_s / y_max) + "\" r=\"2\"/>";
  }
  s += "<g fill=\"#ff7f0e\" fill-opacity=\"0.6\">" + e2e_dots + "</g>\n";
  s += "<g fill=\"#1f77b4\" fill-opacity=\"0.8\">" + ttft_dots + "</g>\n";
  if (!fails.empty()) s += "<path d=\"" + fails + "\" stroke=\"#d62728\" stroke-width=\"1.5\"/>\n";
  s += "<circle cx=\"" + fmt("%.1f", kW - kRight + 10) + "\" cy=\"" + fmt("%.1f", kTop + 6) +
       "\" r=\"4\" fill=\"#1f77b4\"/>\n" + text(kW - kRight + 18, kTop + 10, "start", "TTFT");
  s += "<circle cx=\"" + fmt("%.1f", kW - kRight + 10) + "\" cy=\"" + fmt("%.1f", kTop + 24) +
       "\" r=\"4\" fill=\"#ff7f0e\"/>\n" + text(kW - kRight + 18, kTop + 28, "start", "E2E");
  if (!fails.empty()) s += text(kW - kRight + 4, kTop + 46, "start", "x failed", "#d62728");

  if (soak) {
    const double top = kTop + kPanelH + kGap;
    double rss_max = 0;
    for (const ServerSample& m : samples) {
      if (m.rss_bytes) rss_max = std::max(rss_max, *m.rss_bytes / 1048576.0);
    }
    const auto [r_max, r_step] = nice_axis(rss_max);
    s += panel_axes(top, x_max, x_step, 100, 20, "KV cache usage (%)", rss_max > 0 ? r_max : 0,
                    r_step, "server RSS (MiB)");
    std::string kv_path, rss_path;
    for (const ServerSample& m : samples) {
      const std::string x = fmt("%.1f", x_of(m.t_s));
      if (m.kv_cache_usage) {
        kv_path += (kv_path.empty() ? "M" : " L") + x + " " +
                   fmt("%.1f", top + kPanelH * (1 - std::clamp(*m.kv_cache_usage, 0.0, 1.0)));
      }
      if (m.rss_bytes) {
        rss_path += (rss_path.empty() ? "M" : " L") + x + " " +
                    fmt("%.1f", top + kPanelH * (1 - *m.rss_bytes / 1048576.0 / r_max));
      }
    }
    if (!kv_path.empty()) {
      s += "<path d=\"" + kv_path + "\" fill=\"none\" stroke=\"#2ca02c\" stroke-width=\"2\"/>\n";
    }
    if (!rss_path.empty()) {
      s += "<path d=\"" + rss_path + "\" fill=\"none\" stroke=\"#9467bd\" stroke-width=\"2\"/>\n";
    }
    s += text(kLeft + 8, top + 14, "start", "KV cache usage", "#2ca02c");
    if (!rss_path.empty()) s += text(kLeft + 8, top + 30, "start", "server RSS", "#9467bd");
  }
  s += "</svg>\n";
  return s;
}

}  // namespace novaserve
