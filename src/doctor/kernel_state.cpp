#include "doctor/kernel_state.h"

#include <sstream>

namespace novaserve::doctor {
namespace {

// Saved kernel logs on Debian/Ubuntu (rsyslog) and RHEL (dmesg at boot); the journal is binary.
const char* const kKernelLogs[] = {"/var/log/kern.log", "/var/log/dmesg", "/var/log/syslog"};

}  // namespace

const char* const kSecureBootVar =
    "/sys/firmware/efi/efivars/SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c";

bool module_loaded(const RootFs& fs, const std::string& name, std::vector<Evidence>& evidence) {
  const std::string dir = "/sys/module/" + name;
  if (fs.exists(dir)) {
    const auto state = fs.read_line(dir + "/initstate");
    // A module that failed its init or is being removed has initstate "coming"/"going".
    if (!state || *state == "live") {
      evidence.push_back({dir, state ? "initstate live" : "present (built in)"});
      return true;
    }
    evidence.push_back({dir + "/initstate", *state});
  } else {
    evidence.push_back({dir, "missing"});
  }
  const auto modules = fs.read("/proc/modules");
  if (modules) {
    std::istringstream lines(*modules);
    std::string line;
    while (std::getline(lines, line)) {
      if (line.rfind(name + " ", 0) == 0) {
        evidence.push_back({"/proc/modules", trim(line)});
        return true;
      }
    }
  }
  evidence.push_back({"/proc/modules", modules ? "no line for " + name : "missing"});
  return false;
}

std::optional<bool> secure_boot_enabled(const RootFs& fs) {
  const auto data = fs.read(kSecureBootVar, 64);
  if (!data || data->size() < 5) return std::nullopt;
  return (*data)[4] == 1;
}

std::vector<Evidence> kernel_log_lines(const RootFs& fs,
                                       const std::vector<std::vector<std::string>>& patterns,
                                       size_t max_lines) {
  std::vector<Evidence> out;
  const auto matches = [&](const std::string& line) {
    for (const auto& words : patterns) {
      bool all = true;
      for (const auto& w : words) all = all && line.find(w) != std::string::npos;
      if (all) return true;
    }
    return false;
  };
  for (const char* file : kKernelLogs) {
    // Logs can be large; their first 16 MiB cover the boots where modules were loaded.
    const auto text = fs.read(file, size_t{16} << 20);
    if (!text) continue;
    std::istringstream lines(*text);
    std::string line;
    while (out.size() < max_lines && std::getline(lines, line)) {
      if (matches(line)) out.push_back({file, trim(line).substr(0, 200)});
    }
  }
  return out;
}

std::vector<Evidence> module_signature_failures(const RootFs& fs, const std::string& module) {
  return kernel_log_lines(fs, {{module, "signature"},
                               {module, "Key was rejected"},
                               {"Loading of unsigned module is rejected"},
                               {"unsigned module loading is restricted"}});
}

}  // namespace novaserve::doctor
