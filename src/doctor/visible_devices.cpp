#include "doctor/visible_devices.h"

#include "doctor/root_fs.h"

namespace novaserve::doctor {

std::optional<Evidence> hiding_visible_devices(const Environment& env,
                                               const std::vector<std::string>& names) {
  for (const auto& name : names) {
    const auto it = env.find(name);
    if (it == env.end()) continue;
    const std::string first = trim(it->second.substr(0, it->second.find(',')));
    if (first.empty() || first == "-1" || first == "NoDevFiles") {
      return Evidence{"environment", name + "=\"" + it->second + "\""};
    }
  }
  return std::nullopt;
}

}  // namespace novaserve::doctor
