// The human-readable form of a doctor report (what `novaserve doctor` prints).
#pragma once

#include <string>

#include "doctor/doctor.h"

namespace novaserve::doctor {

/// One header line (root, kernel, GPUs), then each finding numbered in rank order with its
/// severity, id, summary, evidence lines and fix, then a count line.
std::string render_text(const DoctorReport& report);

}  // namespace novaserve::doctor
