#include "doctor/report_text.h"

namespace novaserve::doctor {

std::string render_text(const DoctorReport& report) {
  std::string out =
      "novaserve doctor: root " + report.root + ", kernel " + report.kernel + ", GPUs: ";
  if (report.gpus.empty()) out += "none";
  for (size_t i = 0; i < report.gpus.size(); ++i) {
    const auto& g = report.gpus[i];
    out += (i ? ", " : "") + std::string(gpu_vendor_name(g.vendor)) + " " +
           (g.pci_address.empty() ? "(no PCI address)" : g.pci_address) + " (NUMA node " +
           std::to_string(g.numa_node) + ")";
  }
  out += "\n";
  int counts[3] = {0, 0, 0};
  for (size_t i = 0; i < report.findings.size(); ++i) {
    const Finding& f = report.findings[i];
    ++counts[static_cast<int>(f.severity)];
    out += "\n" + std::to_string(i + 1) + ". [" + severity_name(f.severity) + "] " + f.id + ": " +
           f.summary + "\n";
    for (const auto& e : f.evidence) out += "   evidence: " + e.file + ": " + e.value + "\n";
    out += "   fix: " + f.fix + "\n";
  }
  if (report.findings.empty())
    out += "\nno findings: nothing stands in the GPU's or server's way\n";
  out += "\n" + std::to_string(counts[0]) + " error(s), " + std::to_string(counts[1]) +
         " warning(s), " + std::to_string(counts[2]) + " info\n";
  return out;
}

}  // namespace novaserve::doctor
