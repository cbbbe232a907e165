#include "loadgen/max_qps_report.h"

#include <algorithm>
#include <cstdio>

#include "common/duration.h"
#include "loadgen/loadgen_report.h"

namespace novaserve {
namespace {

std::string rate(double qps) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3g req/s", qps);
  return buf;
}

// "1 probe", "2 probes".
std::string count_of(size_t n, const std::string& noun) {
  return std::to_string(n) + " " + noun + (n == 1 ? "" : "s");
}

size_t reprobes_in(const MaxQpsResult& r) {
  return static_cast<size_t>(
      std::count_if(r.probes.begin(), r.probes.end(), [](const QpsProbe& p) { return p.reprobe; }));
}

// `marks`: the search's record of the same runs (for the re-probe flags), or null.
nlohmann::ordered_json runs_json(const std::vector<MeasuredRun>& runs,
                                 const std::vector<QpsProbe>* marks) {
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < runs.size(); ++i) {
    const MeasuredRun& p = runs[i];
    nlohmann::ordered_json row = {{"qps", p.qps}, {"met", p.summary.slo_met}};
    if (marks) row["reprobe"] = i < marks->size() && (*marks)[i].reprobe;
    row["summary"] = summary_json(p.summary);
    out.push_back(std::move(row));
  }
  return out;
}

// The verdict line, without its newline.
std::string verdict(const MaxQpsResult& r, const MaxQpsReportSettings& s) {
  const std::string confirmation = format_duration(2 * s.probe_duration_s);
  std::string out = "max QPS meeting the SLOs: ";
  if (r.max_qps) {
    const size_t reprobes = reprobes_in(r);
    char within[32];
    std::snprintf(within, sizeof(within), "%.0f%%", s.search.tolerance * 100);
    return out + rate(*r.max_qps) + (r.hit_max ? " (the --max-qps cap)" : "") + " (" +
           count_of(r.probes.size(), "probe") + " of " + format_duration(s.probe_duration_s) +
           ", " +
           (reprobes == 1 ? "1 of them a re-probe"
                          : std::to_string(reprobes) + " of them re-probes") +
           ", within " + within + "; confirmed by a " + confirmation + " run at that rate, after " +
           std::to_string(r.confirmations.size() - 1) + " refuted)";
  }
  out += "none confirmed";
  if (r.confirmations.empty()) {
    double lowest = 0;
    for (const QpsProbe& p : r.probes) lowest = lowest == 0 ? p.qps : std::min(lowest, p.qps);
    return out + " (no probe met the SLOs, down to " + rate(lowest) + ")";
  }
  const size_t n = r.confirmations.size();
  out += " (" + count_of(n, "confirmation run") + " of " + confirmation +
         (n == 1 ? " missed the SLOs at a rate whose probe had met them; "
                 : " missed the SLOs at rates whose probes had met them; ");
  if (n >= static_cast<size_t>(s.search.max_confirmations)) {
    return out + "the search stops after " + count_of(n, "confirmation run") + ")";
  }
  return out + "no lower rate met them)";
}

}  // namespace

std::string format_max_qps_outcome(const MaxQpsResult& r,
                                   const std::vector<MeasuredRun>& confirmations,
                                   const MaxQpsReportSettings& s) {
  std::string out = verdict(r, s) + "\n";
  if (r.max_qps && !confirmations.empty()) {
    return out + "summary of the " + rate(confirmations.back().qps) + " confirmation run:\n" +
           format_summary(confirmations.back().summary);
  }
  // No run is a result, so none is summarized as one.
  return out +
         "summary       none: no rate was confirmed (the probe and confirm lines above give each "
         "run's numbers)\n";
}

nlohmann::ordered_json max_qps_summary_json(const MaxQpsResult& r,
                                            const std::vector<MeasuredRun>& confirmations) {
  if (!r.max_qps || confirmations.empty()) return nullptr;
  return summary_json(confirmations.back().summary);
}

nlohmann::ordered_json max_qps_json(const MaxQpsResult& r, const std::vector<MeasuredRun>& probes,
                                    const std::vector<MeasuredRun>& confirmations,
                                    const MaxQpsReportSettings& s) {
  const nlohmann::ordered_json max_qps =
      r.max_qps ? nlohmann::ordered_json(*r.max_qps) : nlohmann::ordered_json(nullptr);
  return {{"max_qps", max_qps},
          {"hit_max", r.hit_max},
          {"tolerance", s.search.tolerance},
          {"max_confirmations", s.search.max_confirmations},
          {"probe_duration_s", s.probe_duration_s},
          {"confirmation_duration_s", 2 * s.probe_duration_s},
          {"summary_qps", max_qps},
          {"warmup_duration_s", s.warmup_duration_s},
          {"reprobes", reprobes_in(r)},
          {"probes", runs_json(probes, &r.probes)},
          {"confirmations", runs_json(confirmations, nullptr)}};
}

}  // namespace novaserve
