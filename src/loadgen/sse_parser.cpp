#include "loadgen/sse_parser.h"

namespace novaserve {

void SseParser::feed(std::string_view bytes, const EventFn& on_event) {
  for (char c : bytes) {
    if (skip_lf_) {
      skip_lf_ = false;
      if (c == '\n') continue;
    }
    if (c == '\n' || c == '\r') {
      skip_lf_ = c == '\r';
      end_line(on_event);
    } else {
      line_ += c;
    }
  }
}

void SseParser::end_line(const EventFn& on_event) {
  if (line_.empty()) {
    if (has_data_) on_event(data_);
    data_.clear();
    has_data_ = false;
    return;
  }
  const std::string_view line = line_;
  const size_t colon = line.find(':');
  // A line without a colon is a field name with an empty value; a leading colon is a comment.
  if (colon != 0 && line.substr(0, colon) == "data") {
    std::string_view value = colon == std::string_view::npos ? "" : line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
    if (has_data_) data_ += '\n';
    data_ += value;
    has_data_ = true;
  }
  line_.clear();
}

}  // namespace novaserve
