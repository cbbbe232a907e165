#include "server/request_framing.h"

namespace novaserve {
namespace {

// tchar (RFC 9110 section 5.6.2): the characters of methods, field names and codings.
bool is_tchar(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool is_token(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    if (!is_tchar(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

std::string_view trim_ows(std::string_view s) {
  while (!s.empty() && is_ows(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_ows(s.back())) s.remove_suffix(1);
  return s;
}

// Kept local (not http_message's iequals) so that this module needs only the standard library
// and the fuzzer compiles it alone, with coverage instrumentation.
bool ascii_iequals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + 32) : c; };
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Host's value: uri-host [":" port] (RFC 3986 reg-name, IP-literal, IPv4), or empty.
bool is_host_char(unsigned char c) {
  if ((c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return true;
  return std::string_view("-._~!$&'()*+,;=:[]%").find(static_cast<char>(c)) !=
         std::string_view::npos;
}

// What the field lines say about framing, gathered while the head is scanned.
struct Framing {
  int minor_version = 1;
  int content_lengths = 0;
  int hosts = 0;
  bool host_valid = true;
  bool has_te = false;
  int chunked_count = 0;
  bool last_is_chunked = false;
  std::string_view other_coding;  // the first coding that is not chunked
  // The last field line, applied once the next line shows that no obs-fold continues it (so
  // that a folded value is reported as folding, not as a malformed value).
  std::string_view pending_name;
  std::string_view pending_value;
};

HeadCheck refuse(int status, const char* code, std::string message) {
  HeadCheck h;
  h.state = HeadCheck::State::kInvalid;
  h.error.status = status;
  h.error.code = code;
  h.error.message = std::move(message);
  return h;
}

HeadCheck bad(std::string message) {
  return refuse(400, "bad_request", std::move(message));
}

// Printable for an error message: at most 40 bytes, controls as '?'.
std::string shown(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 40)) {
    const auto u = static_cast<unsigned char>(c);
    out += (u < 0x20 || u == 0x7f) ? '?' : c;
  }
  return s.size() > 40 ? out + "..." : out;
}

// request-line = method SP request-target SP HTTP-version (RFC 9112 section 3).
bool check_request_line(std::string_view line, Framing& f, HeadCheck& fault) {
  const size_t sp1 = line.find(' ');
  const size_t sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  const auto malformed = [&] {
    fault = bad("malformed HTTP request line '" + shown(line) +
                "'; expected METHOD SP target SP HTTP/1.1 (RFC 9112 section 3)");
    return false;
  };
  if (sp2 == std::string_view::npos) return malformed();
  const std::string_view method = line.substr(0, sp1);
  const std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  const std::string_view version = line.substr(sp2 + 1);
  if (!is_token(method) || target.empty()) return malformed();
  for (char c : target) {
    const auto u = static_cast<unsigned char>(c);
    // Bytes >= 0x80 pass: the router answers 404 for such a path (naming it with U+FFFD).
    if (u <= 0x20 || u == 0x7f) return malformed();
  }
  const auto digit = [](char c) { return c >= '0' && c <= '9'; };
  if (version.size() != 8 || version.substr(0, 5) != "HTTP/" || !digit(version[5]) ||
      version[6] != '.' || !digit(version[7])) {
    return malformed();
  }
  if (version[5] != '1') {
    fault = refuse(505, "http_version_not_supported",
                   "HTTP version " + std::string(version.substr(5)) + " is not supported; use 1.1");
    return false;
  }
  f.minor_version = version[7] - '0';
  return true;
}

bool check_content_length(std::string_view value, Framing& f, HeadCheck& fault) {
  if (++f.content_lengths > 1) {
    fault = bad("more than one Content-Length field (RFC 9112 section 6.3)");
    return false;
  }
  // 1*DIGIT only: no sign, no hex, no list ("5, 5"), no inner spaces. 18 digits always fit in
  // 63 bits; longer values are beyond any body limit anyway.
  bool digits = !value.empty() && value.size() <= 18;
  for (char c : value) digits = digits && c >= '0' && c <= '9';
  if (!digits) {
    fault = bad("malformed Content-Length '" + shown(value) +
                "'; expected one decimal number of at most 18 digits (RFC 9110 section 8.6)");
    return false;
  }
  return true;
}

// Transfer-Encoding = #transfer-coding; its field lines concatenate into one list.
bool check_transfer_encoding(std::string_view value, Framing& f, HeadCheck& fault) {
  f.has_te = true;
  for (;;) {
    const size_t comma = value.find(',');
    const std::string_view coding = trim_ows(value.substr(0, comma));
    // Parameters (";q=1") and empty elements are refused rather than skipped: the point is
    // that no reader of these bytes can see a different list than we do.
    if (!is_token(coding)) {
      fault = bad("malformed Transfer-Encoding element '" + shown(coding) +
                  "'; expected a comma-separated list of codings (RFC 9112 section 6.1)");
      return false;
    }
    f.last_is_chunked = ascii_iequals(coding, "chunked");
    if (f.last_is_chunked) {
      ++f.chunked_count;
    } else if (f.other_coding.empty()) {
      f.other_coding = coding;
    }
    if (comma == std::string_view::npos) return true;
    value.remove_prefix(comma + 1);
  }
}

bool apply_pending_field(Framing& f, HeadCheck& fault) {
  const std::string_view name = f.pending_name;
  const std::string_view value = f.pending_value;
  f.pending_name = {};
  if (ascii_iequals(name, "content-length")) return check_content_length(value, f, fault);
  if (ascii_iequals(name, "transfer-encoding")) return check_transfer_encoding(value, f, fault);
  if (ascii_iequals(name, "host")) {
    ++f.hosts;
    for (char c : value) f.host_valid = f.host_valid && is_host_char(static_cast<unsigned char>(c));
  }
  return true;
}

bool check_field_line(std::string_view line, Framing& f, HeadCheck& fault) {
  if (is_ows(line.front())) {
    fault =
        bad("header line starts with whitespace (obs-fold line folding, or whitespace after the "
            "request line), which is not accepted (RFC 9112 sections 2.2 and 5.2)");
    return false;
  }
  const size_t colon = line.find(':');
  if (colon == std::string_view::npos) {
    fault = bad("header line '" + shown(line) + "' has no colon (RFC 9112 section 5)");
    return false;
  }
  const std::string_view name = line.substr(0, colon);
  if (!name.empty() && is_ows(name.back())) {
    fault = bad("whitespace between the header name '" + shown(trim_ows(name)) +
                "' and the colon (RFC 9112 section 5.1)");
    return false;
  }
  if (!is_token(name)) {
    fault = bad("invalid character in header name '" + shown(name) + "' (RFC 9110 section 5.1)");
    return false;
  }
  const std::string_view value = trim_ows(line.substr(colon + 1));
  for (char c : value) {
    const auto u = static_cast<unsigned char>(c);
    if ((u < 0x20 && c != '\t') || u == 0x7f) {
      fault = bad("control character in the value of header '" + shown(name) +
                  "' (RFC 9110 section 5.5)");
      return false;
    }
  }
  if (!apply_pending_field(f, fault)) return false;
  f.pending_name = name;
  f.pending_value = value;
  return true;
}

// The rules that need the whole head.
bool check_framing(Framing& f, HeadCheck& fault) {
  if (!apply_pending_field(f, fault)) return false;
  if (f.has_te) {
    if (f.minor_version == 0) {
      fault =
          bad("Transfer-Encoding in an HTTP/1.0 request: the framing is faulty (RFC 9112 section "
              "6.1)");
      return false;
    }
    if (f.content_lengths > 0) {
      fault =
          bad("request has both Content-Length and Transfer-Encoding (RFC 9112 section 6.3); send "
              "one of them");
      return false;
    }
    if (f.chunked_count > 1) {
      fault = bad("Transfer-Encoding lists chunked more than once (RFC 9112 section 6.1)");
      return false;
    }
    if (!f.last_is_chunked) {
      fault =
          bad("Transfer-Encoding does not end in chunked, so the request body length cannot be "
              "determined (RFC 9112 section 6.3)");
      return false;
    }
    if (!f.other_coding.empty()) {
      fault = refuse(501, "unsupported_transfer_coding",
                     "transfer coding '" + shown(f.other_coding) +
                         "' is not supported; only chunked is (RFC 9112 section 6.1)");
      return false;
    }
  }
  if (f.minor_version >= 1 && f.hosts == 0) {
    fault = bad("HTTP/1.1 request without a Host header (RFC 9112 section 3.2)");
    return false;
  }
  if (f.hosts > 1) {
    fault = bad("more than one Host header (RFC 9112 section 3.2)");
    return false;
  }
  if (!f.host_valid) {
    fault = bad("invalid Host header value (RFC 9112 section 3.2)");
    return false;
  }
  return true;
}

}  // namespace

HeadCheck check_request_head(std::string_view in, size_t max_head_bytes) {
  HeadCheck result;
  size_t pos = 0;
  const auto too_large = [&] {
    return refuse(
        431, "request_header_fields_too_large",
        "request header block is larger than " + std::to_string(max_head_bytes) + " bytes");
  };
  while (in.substr(pos, 2) == "\r\n") pos += 2;
  // Empty lines before the request line count against the head limit too: otherwise a client
  // could fill the connection's buffer with CRLFs that are never a head.
  if (pos >= max_head_bytes) return too_large();
  result.skip = pos;
  Framing framing;
  bool request_line = true;
  while (true) {
    const size_t lf = in.find('\n', pos);
    if (lf == std::string_view::npos) {
      // A CR must be followed by LF; one at the very end may still get its LF.
      const size_t cr = in.find('\r', pos);
      if (cr != std::string_view::npos && cr + 1 < in.size()) {
        return bad("bare CR in the request head; lines end in CRLF (RFC 9112 section 2.2)");
      }
      if (in.size() >= max_head_bytes) return too_large();
      return result;
    }
    if (lf + 1 > max_head_bytes) return too_large();
    if (lf == pos || in[lf - 1] != '\r') {
      return bad("bare LF in the request head; lines end in CRLF (RFC 9112 section 2.2)");
    }
    const std::string_view line = in.substr(pos, lf - 1 - pos);
    if (line.find('\r') != std::string_view::npos) {
      return bad("bare CR in the request head; lines end in CRLF (RFC 9112 section 2.2)");
    }
    pos = lf + 1;
    HeadCheck fault;
    if (request_line) {
      if (!check_request_line(line, framing, fault)) return fault;
      request_line = false;
    } else if (line.empty()) {
      if (!check_framing(framing, fault)) return fault;
      result.state = HeadCheck::State::kComplete;
      result.head_bytes = pos - result.skip;
      return result;
    } else if (!check_field_line(line, framing, fault)) {
      return fault;
    }
  }
}

}  // namespace novaserve
