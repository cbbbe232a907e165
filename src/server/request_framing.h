// Strict checks of a request head (request line, field lines, blank line) before Boost.Beast
// parses it. Beast is lenient in places where a front proxy may read the same bytes differently
// (obs-fold, unknown transfer codings, Content-Length lists), and any such disagreement about
// where a request ends lets one client's body be read as another request (request smuggling).
// Every refusal here closes the connection: after a framing fault nothing on it can be trusted.
// The rules and the status each one gets are listed in docs/api.md ("Request framing").
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace novaserve {

/// A request head that is refused. The answer always carries `Connection: close` and the
/// connection is closed after it.
struct FramingError {
  int status = 400;  ///< 400, 431 (head too large), 501 (unsupported coding) or 505 (version)
  std::string code;  ///< OpenAI error `code`: "bad_request", "request_header_fields_too_large",
                     ///< "unsupported_transfer_coding" or "http_version_not_supported"
  std::string message;
};

/// What check_request_head found in the bytes received so far.
struct HeadCheck {
  enum class State {
    kIncomplete,  ///< no fault yet, the blank line has not arrived: read more
    kComplete,    ///< a valid head of `head_bytes` bytes follows `skip` bytes
    kInvalid,     ///< refuse with `error`, then close
  };
  State state = State::kIncomplete;
  /// Bytes of empty lines (CRLF) before the request line, which a server ignores (RFC 9112
  /// section 2.2); the caller drops them before the request line is parsed.
  size_t skip = 0;
  size_t head_bytes = 0;  ///< kComplete: request line through the blank line, in bytes
  FramingError error;     ///< kInvalid only
};

/// Checks the request head at the start of `received` (the bytes read so far, possibly with
/// body bytes or pipelined requests after the head) against RFC 9112:
///   - every line ends in CRLF: a bare LF or a bare CR is a 400 (section 2.2);
///   - request line `method SP target SP HTTP/d.d`, method a token, target without controls or
///     spaces: else 400; a major version other than 1 is a 505 (section 3);
///   - field lines `name ":" OWS value OWS`: a name of tchars with no whitespace before the
///     colon, a value without control characters other than HTAB; a line starting with SP or
///     HTAB (obs-fold, or whitespace after the request line) is a 400 (sections 2.2, 5.1, 5.2);
///   - Content-Length: one field line holding 1*DIGIT that fits in 63 bits, else 400 (section
///     6.3 item 5; RFC 9110 section 8.6);
///   - Transfer-Encoding (all its field lines form one list): a 400 in HTTP/1.0, together with
///     Content-Length, with an empty or non-token element, with `chunked` twice or not last; a
///     501 when `chunked` is last but other codings (which we cannot decode) precede it
///     (sections 6.1, 6.3 items 3 and 4);
///   - Host: exactly one on HTTP/1.1, with a value of URI authority characters, else 400
///     (section 3.2).
/// A head that does not end within `max_head_bytes` bytes (after `skip`) is a 431. Faults in
/// lines already received are reported before the head is complete (a field's value as soon as
/// the next line shows that no obs-fold continues it), so a client cannot hold a bad head open.
/// Pure, no allocation unless refusing: the unit tests and the fuzzer call it directly.
HeadCheck check_request_head(std::string_view received, size_t max_head_bytes);

}  // namespace novaserve
