// Values that deploy/sysctl/99-novaserve.conf sets, for the fixes that point to it (a unit test
// checks them against the file).
#pragma once

#include <cstdint>

namespace novaserve::doctor {

/// net.core.somaxconn in deploy/sysctl/99-novaserve.conf.
constexpr int64_t kDeploySomaxconn = 4096;

}  // namespace novaserve::doctor
