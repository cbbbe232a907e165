#include "doctor/report_json.h"

namespace novaserve::doctor {

nlohmann::ordered_json report_json(const DoctorReport& report) {
  nlohmann::ordered_json gpus = nlohmann::ordered_json::array();
  for (const auto& g : report.gpus) {
    gpus.push_back({{"vendor", gpu_vendor_name(g.vendor)},
                    {"pci_address", g.pci_address},
                    {"numa_node", g.numa_node}});
  }
  nlohmann::ordered_json findings = nlohmann::ordered_json::array();
  nlohmann::ordered_json counts = {{"error", 0}, {"warning", 0}, {"info", 0}};
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const Finding& f = report.findings[i];
    nlohmann::ordered_json evidence = nlohmann::ordered_json::array();
    for (const auto& e : f.evidence) evidence.push_back({{"file", e.file}, {"value", e.value}});
    findings.push_back({{"rank", i + 1},
                        {"id", f.id},
                        {"severity", severity_name(f.severity)},
                        {"summary", f.summary},
                        {"evidence", std::move(evidence)},
                        {"fix", f.fix}});
    counts[severity_name(f.severity)] = counts[severity_name(f.severity)].get<int>() + 1;
  }
  return {{"root", report.root},         {"kernel", report.kernel},
          {"gpus", std::move(gpus)},     {"findings", std::move(findings)},
          {"counts", std::move(counts)}, {"exit_code", report.exit_code()}};
}

}  // namespace novaserve::doctor
