// Incremental parser of a Server-Sent Events stream (the body of a streaming completion).
#pragma once

#include <functional>
#include <string>
#include <string_view>

namespace novaserve {

/// Splits an event stream into events as bytes arrive, in pieces of any size (a piece may end
/// in the middle of a line, or between "\r" and "\n"). Follows the WHATWG HTML "Server-sent
/// events" parsing rules for the one field completions use: lines end in "\n", "\r\n" or "\r";
/// "data:" lines (one optional space after the colon is dropped) accumulate, joined with "\n";
/// an empty line dispatches the event if it had data; comment lines (":...") and other fields
/// (event, id, retry) are ignored. Hand-written because neither Boost nor any Debian C++
/// library parses SSE.
class SseParser {
 public:
  /// Called with an event's data, e.g. `{"choices":[...]}` or `[DONE]`.
  using EventFn = std::function<void(std::string_view data)>;

  /// Feeds the next bytes; calls `on_event` for each event they complete, in order.
  void feed(std::string_view bytes, const EventFn& on_event);

  /// Bytes of a line or event still waiting for its end.
  size_t pending_bytes() const { return line_.size() + data_.size(); }

 private:
  void end_line(const EventFn& on_event);

  std::string line_;  // the current, unfinished line
  std::string data_;  // data lines of the current event, joined with "\n"
  bool has_data_ = false;
  bool skip_lf_ = false;  // the last piece ended with "\r": a following "\n" belongs to it
};

}  // namespace novaserve
