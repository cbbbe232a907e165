// The JSON form of a doctor report (`novaserve doctor --json`), for scripts and monitoring.
#pragma once

#include <nlohmann/json.hpp>

#include "doctor/doctor.h"

namespace novaserve::doctor {

/// Keys in this order (ordered_json): {"root", "kernel", "gpus": [{"vendor", "pci_address",
/// "numa_node"}], "findings": [{"rank", "id", "severity", "summary", "evidence": [{"file",
/// "value"}], "fix"}], "counts": {"error", "warning", "info"}, "exit_code"}. Findings are in rank
/// order, rank 1 first.
nlohmann::ordered_json report_json(const DoctorReport& report);

}  // namespace novaserve::doctor
