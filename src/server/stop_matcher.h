// Stop strings over streamed text: finds the earliest match and says how much text is safe to
// send while a partial match may still complete (OpenAI `stop`; vLLM's stop-string hold-back).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace novaserve {

class StopMatcher {
 public:
  /// `stops`: non-empty strings (empty ones are dropped).
  explicit StopMatcher(std::vector<std::string> stops);

  struct Scan {
    /// Byte offset of the earliest stop-string match; the text before it is the output.
    std::optional<size_t> match;
    /// Without a match: the text before this offset can be sent; the rest is a proper prefix
    /// of some stop string and must be held back until it resolves.
    size_t safe_end = 0;
  };

  /// Scans `text` (all text generated so far). `released` bytes were already sent, which
  /// guarantees that no match starts before that offset, so only the rest is searched. Offsets
  /// returned for valid UTF-8 text fall on character boundaries (stop strings are UTF-8).
  Scan scan(std::string_view text, size_t released) const;

  bool empty() const { return stops_.empty(); }

 private:
  std::vector<std::string> stops_;
  size_t max_len_ = 0;
};

}  // namespace novaserve
