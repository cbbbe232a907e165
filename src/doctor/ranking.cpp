#include "doctor/ranking.h"

#include <algorithm>

namespace novaserve::doctor {

const std::vector<std::string>& ranked_ids() {
  static const std::vector<std::string> ids = {
      "gpu.none-found",
      "amd.secure-boot-unsigned",
      "amd.driver-not-loaded",
      "nvidia.driver-not-loaded",
      "amd.kfd-missing",
      "amd.no-render-node",
      "nvidia.device-missing",
      "amd.kfd-permission",
      "amd.render-permission",
      "nvidia.device-permission",
      "amd.visible-devices-empty",
      "nvidia.visible-devices-empty",
      "amd.hip-runtime-missing",
      "amd.rocm-path-unset",
      "nvidia.libcuda-missing",
      "nvidia.driver-library-mismatch",
      "nvidia.driver-runtime-mismatch",
      "capacity.model-does-not-fit",
      "capacity.model-fits",
      "os.numa-mismatch",
      "os.nofile-low",
      "os.somaxconn-low",
      "os.iommu",
      "os.pcie-aspm",
      "os.numa-balancing",
      "os.thp",
      "os.swappiness",
      "os.dirty-ratio",
  };
  return ids;
}

int rank_of(const std::string& id) {
  const auto& ids = ranked_ids();
  return static_cast<int>(std::find(ids.begin(), ids.end(), id) - ids.begin());
}

void rank_findings(std::vector<Finding>& findings) {
  std::stable_sort(findings.begin(), findings.end(), [](const Finding& a, const Finding& b) {
    if (a.severity != b.severity) return a.severity < b.severity;
    return rank_of(a.id) < rank_of(b.id);
  });
}

}  // namespace novaserve::doctor
