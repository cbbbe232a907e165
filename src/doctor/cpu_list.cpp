#include "doctor/cpu_list.h"

#include "doctor/root_fs.h"

namespace novaserve::doctor {

std::optional<std::set<int>> parse_cpu_list(const std::string& text) {
  std::set<int> out;
  const std::string s = trim(text);
  size_t pos = 0;
  while (pos < s.size()) {
    size_t comma = s.find(',', pos);
    if (comma == std::string::npos) comma = s.size();
    const std::string item = s.substr(pos, comma - pos);
    const size_t dash = item.find('-');
    const auto lo = parse_int(item.substr(0, dash));
    const auto hi = dash == std::string::npos ? lo : parse_int(item.substr(dash + 1));
    // A bound on the range keeps a garbage "0-999999999" from allocating gigabytes.
    if (!lo || !hi || *lo < 0 || *hi < *lo || *hi - *lo > (1 << 16)) return std::nullopt;
    for (int64_t i = *lo; i <= *hi; ++i) out.insert(static_cast<int>(i));
    pos = comma + 1;
  }
  return out;
}

std::string format_cpu_list(const std::set<int>& items) {
  std::string out;
  for (auto it = items.begin(); it != items.end();) {
    const int lo = *it;
    int hi = lo;
    for (++it; it != items.end() && *it == hi + 1; ++it) hi = *it;
    if (!out.empty()) out += ',';
    out += std::to_string(lo);
    if (hi != lo) out += "-" + std::to_string(hi);
  }
  return out;
}

}  // namespace novaserve::doctor
