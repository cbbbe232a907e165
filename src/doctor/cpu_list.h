// The kernel's CPU/node list format ("0-3,8-11"), used by sysfs (node*/cpulist, node/online) and
// /proc/*/status (Cpus_allowed_list). Format: Documentation/admin-guide/cputopology.rst.
#pragma once

#include <optional>
#include <set>
#include <string>

namespace novaserve::doctor {

/// The numbers in a list such as "0-3,8,10-11" (an empty string is the empty set). Empty
/// optional for anything else (garbage, a reversed range, a range over 1<<16 items).
std::optional<std::set<int>> parse_cpu_list(const std::string& text);

/// The inverse: {0,1,2,3,8} -> "0-3,8".
std::string format_cpu_list(const std::set<int>& items);

}  // namespace novaserve::doctor
