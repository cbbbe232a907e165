// check_request_head, rule by rule (docs/api.md "Request framing"): which heads are complete,
// which are refused with which status, and that faults are found before the head ends.
#include "server/request_framing.h"

#include <gtest/gtest.h>

#include <string>

namespace novaserve {
namespace {

using State = HeadCheck::State;
constexpr size_t kMax = 16 * 1024;

HeadCheck check(const std::string& s, size_t max = kMax) {
  return check_request_head(s, max);
}

std::string post(const std::string& fields, const std::string& version = "1.1") {
  return "POST /v1/completions HTTP/" + version + "\r\nHost: x\r\n" + fields + "\r\n";
}

struct Refusal {
  const char* name;
  std::string head;
  int status;
  const char* message;  // substring
};

class RefusedHead : public ::testing::TestWithParam<Refusal> {};

TEST_P(RefusedHead, GetsItsStatusAndMessage) {
  const Refusal& r = GetParam();
  const HeadCheck h = check(r.head);
  ASSERT_EQ(h.state, State::kInvalid) << r.head;
  EXPECT_EQ(h.error.status, r.status);
  EXPECT_NE(h.error.message.find(r.message), std::string::npos) << h.error.message;
  EXPECT_FALSE(h.error.code.empty());
}

INSTANTIATE_TEST_SUITE_P(
    Rules, RefusedHead,
    ::testing::Values(
        // Transfer-Encoding (RFC 9112 sections 6.1, 6.3)
        Refusal{"te_gzip", post("Transfer-Encoding: gzip\r\n"), 400, "does not end in chunked"},
        Refusal{"te_identity", post("Transfer-Encoding: identity\r\n"), 400, "does not end"},
        Refusal{"te_xchunked", post("Transfer-Encoding: xchunked\r\n"), 400, "does not end"},
        Refusal{"te_chunked_identity", post("Transfer-Encoding: chunked, identity\r\n"), 400,
                "does not end"},
        Refusal{"te_two_lines_last_identity",
                post("Transfer-Encoding: chunked\r\nTransfer-Encoding: identity\r\n"), 400,
                "does not end"},
        Refusal{"te_chunked_twice", post("Transfer-Encoding: chunked, chunked\r\n"), 400,
                "more than once"},
        Refusal{"te_chunked_two_lines",
                post("Transfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n"), 400,
                "more than once"},
        Refusal{"te_gzip_chunked", post("Transfer-Encoding: gzip, chunked\r\n"), 501, "'gzip'"},
        Refusal{"te_empty_element", post("Transfer-Encoding: chunked,\r\n"), 400, "malformed"},
        Refusal{"te_empty_value", post("Transfer-Encoding: \r\n"), 400, "malformed"},
        Refusal{"te_parameter", post("Transfer-Encoding: chunked;q=1\r\n"), 400, "malformed"},
        Refusal{"te_http10", post("Transfer-Encoding: chunked\r\n", "1.0"), 400, "HTTP/1.0"},
        Refusal{"te_with_cl", post("Transfer-Encoding: chunked\r\nContent-Length: 3\r\n"), 400,
                "both Content-Length and Transfer-Encoding"},
        Refusal{"cl_with_te", post("Content-Length: 3\r\nTransfer-Encoding: chunked\r\n"), 400,
                "both Content-Length and Transfer-Encoding"},
        // Content-Length (RFC 9110 section 8.6)
        Refusal{"cl_twice_same", post("Content-Length: 3\r\nContent-Length: 3\r\n"), 400,
                "more than one Content-Length"},
        Refusal{"cl_twice_different", post("Content-Length: 3\r\nContent-Length: 4\r\n"), 400,
                "more than one Content-Length"},
        Refusal{"cl_list", post("Content-Length: 3, 3\r\n"), 400, "malformed Content-Length"},
        Refusal{"cl_sign", post("Content-Length: +3\r\n"), 400, "malformed Content-Length"},
        Refusal{"cl_negative", post("Content-Length: -3\r\n"), 400, "malformed Content-Length"},
        Refusal{"cl_hex", post("Content-Length: 0x3\r\n"), 400, "malformed Content-Length"},
        Refusal{"cl_inner_space", post("Content-Length: 1 2\r\n"), 400, "malformed"},
        Refusal{"cl_empty", post("Content-Length:\r\n"), 400, "malformed Content-Length"},
        Refusal{"cl_overflow", post("Content-Length: 18446744073709551616\r\n"), 400,
                "at most 18 digits"},
        // Line endings (RFC 9112 section 2.2)
        Refusal{"bare_lf", "GET / HTTP/1.1\nHost: x\n\n", 400, "bare LF"},
        Refusal{"bare_lf_field", "GET / HTTP/1.1\r\nHost: x\n\r\n", 400, "bare LF"},
        Refusal{"bare_lf_end", "GET / HTTP/1.1\r\nHost: x\r\n\n", 400, "bare LF"},
        Refusal{"bare_cr", "GET / HTTP/1.1\r\nHost: x\rX: y\r\n\r\n", 400, "bare CR"},
        // Field lines (RFC 9112 sections 5.1, 5.2; RFC 9110 section 5.5)
        Refusal{"obs_fold", post("X-A: 1\r\n 2\r\n"), 400, "obs-fold"},
        Refusal{"obs_fold_tab", post("X-A: 1\r\n\t2\r\n"), 400, "obs-fold"},
        Refusal{"space_after_request_line", "GET / HTTP/1.1\r\n Host: x\r\n\r\n", 400,
                "whitespace"},
        Refusal{"space_before_colon", post("Transfer-Encoding : chunked\r\n"), 400,
                "whitespace between the header name 'Transfer-Encoding'"},
        Refusal{"tab_before_colon", post("Content-Length\t: 3\r\n"), 400, "whitespace"},
        Refusal{"bad_name_char", post("X(A): 1\r\n"), 400, "invalid character in header name"},
        Refusal{"empty_name", post(": 1\r\n"), 400, "invalid character in header name"},
        Refusal{"no_colon", post("NoColon\r\n"), 400, "no colon"},
        Refusal{"nul_in_value", post(std::string("X-A: a\0b\r\n", 10)), 400, "control character"},
        Refusal{"vertical_tab_in_te", post("Transfer-Encoding:\vchunked\r\n"), 400, "control"},
        // Request line (RFC 9112 section 3)
        Refusal{"no_version", "GET /\r\nHost: x\r\n\r\n", 400, "malformed HTTP request line"},
        Refusal{"double_space", "GET  / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "request line"},
        Refusal{"bad_method", "G(T / HTTP/1.1\r\nHost: x\r\n\r\n", 400, "request line"},
        Refusal{"lowercase_version", "GET / http/1.1\r\nHost: x\r\n\r\n", 400, "request line"},
        Refusal{"http2", "GET / HTTP/2.0\r\nHost: x\r\n\r\n", 505, "not supported"},
        // Host (RFC 9112 section 3.2)
        Refusal{"host_missing", "GET / HTTP/1.1\r\n\r\n", 400, "without a Host"},
        Refusal{"host_twice", "GET / HTTP/1.1\r\nHost: a\r\nhost: b\r\n\r\n", 400,
                "more than one Host"},
        Refusal{"host_bad_char", "GET / HTTP/1.1\r\nHost: a b\r\n\r\n", 400, "invalid Host"}),
    [](const ::testing::TestParamInfo<Refusal>& i) { return std::string(i.param.name); });

TEST(RequestFraming, AcceptsValidHeadsAndReportsTheirLength) {
  for (const std::string& head :
       {std::string("GET /health HTTP/1.1\r\nHost: localhost:8080\r\n\r\n"),
        post("Content-Length: 15\r\n"), post("Content-Length: 0\r\n"),
        post("Transfer-Encoding: chunked\r\n"), post("transfer-encoding: ChUnKeD\r\n"),
        post("Transfer-Encoding:\tchunked \t\r\n"), post("Host2: a\r\nX-Empty:\r\n"),
        std::string("GET /health HTTP/1.0\r\n\r\n"), std::string("GET / HTTP/1.1\r\nHost:\r\n\r\n"),
        std::string("GET /v1/\xff HTTP/1.1\r\nHost: [::1]:80\r\nX-Obs: caf\xe9\r\n\r\n")}) {
    const HeadCheck h = check(head + "{\"prompt\": 1}\nGET / HTTP/1.1\n\n");
    EXPECT_EQ(h.state, State::kComplete) << head << h.error.message;
    EXPECT_EQ(h.skip, 0u);
    EXPECT_EQ(h.head_bytes, head.size()) << head;
  }
}

TEST(RequestFraming, SkipsEmptyLinesBeforeTheRequestLine) {
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  const HeadCheck h = check("\r\n\r\n" + head);
  ASSERT_EQ(h.state, State::kComplete);
  EXPECT_EQ(h.skip, 4u);
  EXPECT_EQ(h.head_bytes, head.size());
}

TEST(RequestFraming, PartialHeadsAreIncompleteUntilTheBlankLine) {
  const std::string head = post("Content-Length: 2\r\n");
  for (size_t n = 0; n < head.size(); ++n) {
    EXPECT_EQ(check(head.substr(0, n)).state, State::kIncomplete) << n;
  }
  EXPECT_EQ(check(head).state, State::kComplete);
}

TEST(RequestFraming, FaultsAreFoundBeforeTheHeadEnds) {
  // A client cannot keep a refused head open by never sending the blank line.
  EXPECT_EQ(check("GET / HTTP/1.1\nHost: x").state, State::kInvalid);
  EXPECT_EQ(check("GET / HTTP/1.1\rHost").state, State::kInvalid);
  EXPECT_EQ(check("GET / HTTP/1.1\r\nHost: x\r\n folded\r\nX-More").state, State::kInvalid);
  // A value is judged once the next line shows that no obs-fold continues it.
  EXPECT_EQ(check("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\n").state,
            State::kIncomplete);
  EXPECT_EQ(check("GET / HTTP/1.1\r\nContent-Length: 1\r\nContent-Length: 1\r\nX: y\r\n").state,
            State::kInvalid);
  const HeadCheck folded = check(post("Transfer-Encoding:\r\n chunked\r\n"));
  EXPECT_NE(folded.error.message.find("obs-fold"), std::string::npos) << folded.error.message;
  // ...but a trailing CR may still get its LF.
  EXPECT_EQ(check("GET / HTTP/1.1\r").state, State::kIncomplete);
}

TEST(RequestFraming, HeadOverTheLimitIs431) {
  const std::string head = "GET / HTTP/1.1\r\nHost: x\r\nX-Big: " + std::string(200, 'a');
  HeadCheck h = check(head, 100);
  ASSERT_EQ(h.state, State::kInvalid);
  EXPECT_EQ(h.error.status, 431);
  EXPECT_EQ(h.error.code, "request_header_fields_too_large");
  // Complete, but longer than the limit.
  h = check(head + "\r\n\r\n", 100);
  EXPECT_EQ(h.error.status, 431);
  // Exactly at the limit is fine.
  const std::string exact = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  EXPECT_EQ(check(exact, exact.size()).state, State::kComplete);
}

TEST(RequestFraming, EmptyLinesBeforeTheRequestLineCountAgainstTheLimit) {
  // A flood of CRLFs is no head: without this it could fill the connection's buffer.
  std::string flood;
  for (int i = 0; i < 100; ++i) flood += "\r\n";
  HeadCheck h = check(flood, 100);
  ASSERT_EQ(h.state, State::kInvalid);
  EXPECT_EQ(h.error.status, 431);
  h = check(std::string(flood, 0, 60) + "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 80);
  EXPECT_EQ(h.error.status, 431);
  EXPECT_EQ(check(std::string(flood, 0, 60), 80).state, State::kIncomplete);
}

}  // namespace
}  // namespace novaserve
