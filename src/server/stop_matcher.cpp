#include "server/stop_matcher.h"

#include <algorithm>

namespace novaserve {

StopMatcher::StopMatcher(std::vector<std::string> stops) {
  for (auto& s : stops) {
    if (s.empty()) continue;
    max_len_ = std::max(max_len_, s.size());
    stops_.push_back(std::move(s));
  }
}

StopMatcher::Scan StopMatcher::scan(std::string_view text, size_t released) const {
  Scan out;
  out.safe_end = text.size();
  if (stops_.empty()) return out;
  released = std::min(released, text.size());
  for (const std::string& s : stops_) {
    const size_t pos = text.find(s, released);
    if (pos != std::string_view::npos && (!out.match || pos < *out.match)) out.match = pos;
  }
  if (out.match) {
    out.safe_end = *out.match;
    return out;
  }
  // The earliest suffix that some stop string starts with (a complete match was ruled out).
  const size_t first = std::max(released, text.size() >= max_len_ ? text.size() - max_len_ + 1 : 0);
  for (size_t p = first; p < text.size(); ++p) {
    const std::string_view tail = text.substr(p);
    for (const std::string& s : stops_) {
      if (s.size() > tail.size() && s.compare(0, tail.size(), tail) == 0) {
        out.safe_end = p;
        return out;
      }
    }
  }
  return out;
}

}  // namespace novaserve
