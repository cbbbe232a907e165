// libFuzzer target: arbitrary bytes as what a client sent on a connection, through the request
// framing check (server/request_framing.h) and then, as HttpSession does, through Beast's
// request_parser over the same bytes. Never a crash or a hang; and these properties:
//   - a verdict is consistent: a complete head ends in CRLF CRLF within the size limit, and a
//     refusal has a 4xx/5xx framing status and a message;
//   - faults are never reported early: every prefix of an input whose head is valid is
//     "incomplete", so a refusal can always be trusted;
//   - Beast agrees with an accepted head: it never wants more bytes than the head, and unless it
//     refuses the head (stricter in places, e.g. obs-text in Connection; the session then answers
//     400 and closes) it parses exactly the head and sees the same framing (chunked, or the same
//     Content-Length).
// Seeds: fuzz_request_framing_seeds.sh (the smuggling corpus).
#include <boost/asio/buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/request_framing.h"

namespace {

namespace http = boost::beast::http;
using novaserve::check_request_head;
using novaserve::HeadCheck;

constexpr size_t kMaxHead = 4096;

void check_verdict(std::string_view in, const HeadCheck& h) {
  if (h.state == HeadCheck::State::kComplete) {
    if (h.head_bytes > kMaxHead || h.skip + h.head_bytes > in.size()) std::abort();
    if (in.substr(h.skip + h.head_bytes - 4, 4) != "\r\n\r\n") std::abort();
  } else if (h.state == HeadCheck::State::kInvalid) {
    const int s = h.error.status;
    if ((s != 400 && s != 431 && s != 501 && s != 505) || h.error.message.empty()) std::abort();
  }
}

// Beast agrees on where an accepted head ends and on its framing, or refuses it.
void check_beast_agrees(std::string_view in, const HeadCheck& h) {
  const std::string_view head = in.substr(h.skip, h.head_bytes);
  http::request_parser<http::string_body> p;
  p.header_limit(kMaxHead);
  p.body_limit(1 << 20);
  boost::system::error_code ec;
  const size_t used = p.put(boost::asio::buffer(head.data(), head.size()), ec);
  if (ec == http::error::need_more) std::abort();
  if (ec) return;
  if (!p.is_header_done() || used != head.size()) std::abort();
  const auto& req = p.get();
  const bool has_te = req.find(http::field::transfer_encoding) != req.end();
  if (has_te != p.chunked()) std::abort();
  const auto cl = req.find(http::field::content_length);
  if (cl != req.end() &&
      (!p.content_length() || *p.content_length() != std::stoull(std::string(cl->value())))) {
    std::abort();
  }
  // The body, whatever it is, must not crash the parser either.
  std::string_view rest = in.substr(h.skip + h.head_bytes);
  while (!rest.empty() && !p.is_done()) {
    const size_t n = p.put(boost::asio::buffer(rest.data(), rest.size()), ec);
    if (ec) break;
    rest.remove_prefix(n);
    if (n == 0) break;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const HeadCheck h = check_request_head(in, kMaxHead);
  check_verdict(in, h);
  if (h.state != HeadCheck::State::kComplete) return 0;
  // Every strict prefix of the head is undecided: faults are never announced early.
  const size_t end = h.skip + h.head_bytes;
  for (size_t cut : {end - 1, end / 2, size_t{1}}) {
    if (cut >= end) continue;
    if (check_request_head(in.substr(0, cut), kMaxHead).state != HeadCheck::State::kIncomplete) {
      std::abort();
    }
  }
  check_beast_agrees(in, h);
  return 0;
}
