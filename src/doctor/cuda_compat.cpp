#include "doctor/cuda_compat.h"

#include <cctype>
#include <sstream>

namespace novaserve::doctor {

namespace {

// "580.65.06" or "570.26"; anything else (dates, "x86_64", "12.0.1.2") is not a driver version.
std::optional<DriverVersion> parse_version_token(const std::string& w) {
  int parts[3] = {0, 0, 0};
  int n = 0;
  size_t pos = 0;
  while (true) {
    size_t end = pos;
    while (end < w.size() && std::isdigit(static_cast<unsigned char>(w[end]))) ++end;
    // Driver fields are at most 4 digits; longer runs are years or serials.
    if (end == pos || end - pos > 4 || n == 3) return std::nullopt;
    parts[n++] = std::stoi(w.substr(pos, end - pos));
    if (end == w.size()) break;
    if (w[end] != '.') return std::nullopt;
    pos = end + 1;
  }
  if (n < 2) return std::nullopt;
  return DriverVersion{parts[0], parts[1], parts[2], w};
}

}  // namespace

std::optional<DriverVersion> parse_driver_version(const std::string& text) {
  std::istringstream words(text);
  std::string w;
  while (words >> w) {
    if (auto v = parse_version_token(w)) return v;
  }
  return std::nullopt;
}

std::optional<DriverVersion> nvidia_driver_version(const RootFs& fs, std::string& file) {
  for (const char* f : {"/proc/driver/nvidia/version", "/sys/module/nvidia/version"}) {
    const auto text = fs.read(f, 4096);
    if (!text) continue;
    // The procfs line is "NVRM version: NVIDIA UNIX [Open Kernel Module for] x86_64 Kernel
    // Module  580.65.06  <date>": the first version-shaped token is the driver's.
    if (auto v = parse_driver_version(text->substr(0, text->find('\n')))) {
      file = f;
      return v;
    }
  }
  return std::nullopt;
}

std::optional<int> min_driver_major(int runtime_major) {
  switch (runtime_major) {
    case 11:
      return 450;
    case 12:
      return 525;
    case 13:
      return 580;
    default:
      return std::nullopt;
  }
}

std::string cuda_version_text(int cudart_version) {
  return std::to_string(cudart_version / 1000) + "." + std::to_string(cudart_version % 1000 / 10);
}

}  // namespace novaserve::doctor
