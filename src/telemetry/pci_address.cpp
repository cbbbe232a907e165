#include "telemetry/pci_address.h"

#include <cctype>
#include <cstdio>

namespace novaserve {

Result<uint64_t> parse_pci_address(const std::string& text) {
  // sscanf's %x also takes "0x", signs and spaces: only hex digits and separators pass.
  for (const char c : text) {
    if (!std::isxdigit(static_cast<unsigned char>(c)) && c != ':' && c != '.') {
      return Err(ErrorCode::kInvalidInput, "not a PCI address: '" + text + "'");
    }
  }
  unsigned int domain = 0, bus = 0, device = 0, function = 0;
  int used = -1;
  const auto whole = [&](int fields, int expected) {
    return fields == expected && used == static_cast<int>(text.size());
  };
  // With a domain first: "bus:device.function" would otherwise read as domain:bus.
  bool ok = whole(
      std::sscanf(text.c_str(), "%x:%x:%x.%x%n", &domain, &bus, &device, &function, &used), 4);
  if (!ok) {
    domain = 0;
    used = -1;
    ok = whole(std::sscanf(text.c_str(), "%x:%x.%x%n", &bus, &device, &function, &used), 3);
  }
  if (!ok || bus > 0xff || device > 0x1f || function > 0x7) {
    return Err(ErrorCode::kInvalidInput, "not a PCI address: '" + text + "'");
  }
  return (uint64_t{domain} << 32) | (uint64_t{bus} << 8) | (uint64_t{device} << 3) | function;
}

}  // namespace novaserve
