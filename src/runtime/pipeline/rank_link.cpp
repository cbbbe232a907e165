#include "runtime/pipeline/rank_link.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <mutex>
#include <optional>
#include <sstream>
#include <thread>

#include "runtime/pipeline/rank_wire.h"

namespace novaserve {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kScheme = "tcp://";
constexpr auto kRetryInterval = std::chrono::milliseconds(100);
// shutdown_peer's bounds: for a message another thread is writing, and for the peer to take it.
constexpr auto kShutdownWait = std::chrono::seconds(1);
constexpr auto kDefaultSendTimeout = std::chrono::seconds(60);

// "0.3", "5", "120": a timeout in seconds for messages.
std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream s;
  s << static_cast<double>(t.count()) / 1000.0;
  return s.str();
}

Error bad_url(std::string_view url, const char* why) {
  return Err(ErrorCode::kInvalidInput, "--nccl-init '" + std::string(url) + "': " + why +
                                           " (expected tcp://HOST:PORT, PORT in 1..65535)");
}

// A host name (letters, digits, '-' and '.', no empty label) or, when it is all digits and dots,
// a dotted IPv4 address.
bool valid_host(std::string_view h) {
  const auto name_char = [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '.';
  };
  if (h.empty() || h.size() > 253 || h.front() == '.' || h.back() == '.' ||
      h.find("..") != std::string_view::npos || !std::all_of(h.begin(), h.end(), name_char)) {
    return false;
  }
  if (h.find_first_not_of("0123456789.") != std::string_view::npos) return true;
  error_code ec;
  asio::ip::make_address_v4(std::string(h), ec);
  return !ec;
}

// Runs the read or write that `start` begins (passing it a completion handler) until it
// completes or `deadline` passes, when it cancels the socket's operations (the socket stays
// open). Returns the operation's error (timed_out for the deadline) and the bytes it moved.
template <typename Start>
std::pair<error_code, size_t> run_until(asio::io_context& ioc, tcp::socket& socket,
                                        Clock::time_point deadline, Start start) {
  std::optional<error_code> result;
  size_t moved = 0;
  ioc.restart();
  start([&](const error_code& ec, size_t n) {
    result = ec;
    moved = n;
  });
  ioc.run_until(deadline);
  if (result) return {*result, moved};
  error_code ignored;
  socket.cancel(ignored);
  ioc.restart();
  ioc.run();  // the cancelled handler, which refers to `result`
  if (result && !*result) return {error_code(), moved};  // it completed at the deadline
  return {asio::error::timed_out, moved};
}

// Reads exactly `n` bytes into `dst`, until `deadline` (for ever when nullopt).
error_code read_exactly(asio::io_context& ioc, tcp::socket& socket,
                        std::optional<Clock::time_point> deadline, void* dst, size_t n) {
  if (!deadline) {
    error_code ec;
    asio::read(socket, asio::buffer(dst, n), ec);
    return ec;
  }
  return run_until(ioc, socket, *deadline,
                   [&](auto done) { asio::async_read(socket, asio::buffer(dst, n), done); })
      .first;
}

// Reads one message from `socket` under the given limits.
Result<RankMessage> read_message(asio::io_context& ioc, tcp::socket& socket,
                                 std::optional<Clock::time_point> deadline, uint64_t max_header,
                                 uint64_t max_payload, const std::string& peer,
                                 const std::string& timeout_error) {
  const auto io_error = [&](const error_code& ec) {
    if (ec == asio::error::timed_out) return Err(ErrorCode::kIo, timeout_error);
    return Err(ErrorCode::kIo, ec == asio::error::eof ? peer + " closed the connection"
                                                      : peer + ": " + ec.message());
  };
  std::array<uint8_t, kRankPrefixBytes> prefix{};
  if (error_code ec = read_exactly(ioc, socket, deadline, prefix.data(), prefix.size())) {
    return io_error(ec);
  }
  auto lengths = decode_rank_prefix(prefix, max_header, max_payload, peer);
  if (!lengths.ok()) return lengths.error();
  std::string header(lengths->header_bytes, '\0');
  if (error_code ec = read_exactly(ioc, socket, deadline, header.data(), header.size())) {
    return io_error(ec);
  }
  auto parsed = parse_rank_header(header, peer);
  if (!parsed.ok()) return parsed.error();
  RankMessage m;
  m.header = std::move(parsed.value());
  m.payload.resize(lengths->payload_bytes);
  if (error_code ec = read_exactly(ioc, socket, deadline, m.payload.data(), m.payload.size())) {
    return io_error(ec);
  }
  return m;
}

std::string rank_name(int rank) {
  return "rank " + std::to_string(rank);
}

// Keepalive as rank_link.h states; failures leave the link without it (still correct, slower to
// notice a vanished host).
void set_keepalive(int fd) {
  const int on = 1;
  (void)::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &kKeepaliveIdleS, sizeof kKeepaliveIdleS);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &kKeepaliveIntervalS,
                     sizeof kKeepaliveIntervalS);
  (void)::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &kKeepaliveProbes, sizeof kKeepaliveProbes);
}

// Writes all of `bytes` to `fd` without blocking for longer than until `deadline`; false when the
// peer did not take them all in time or the connection failed.
bool send_all_raw(int fd, std::string_view bytes, Clock::time_point deadline) {
  while (!bytes.empty()) {
    const ssize_t n = ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLOUT, 0};
    (void)::poll(&p, 1, static_cast<int>(left.count()));
  }
  return true;
}

}  // namespace

Result<RendezvousAddress> parse_rendezvous_url(std::string_view url) {
  if (!url.starts_with(kScheme)) return bad_url(url, "not a tcp:// URL");
  const std::string_view rest = url.substr(kScheme.size());
  const size_t colon = rest.rfind(':');
  if (colon == std::string_view::npos) return bad_url(url, "no port");
  const std::string_view host = rest.substr(0, colon);
  const std::string_view port = rest.substr(colon + 1);
  if (!valid_host(host)) return bad_url(url, "bad host (a host name or IPv4 address)");
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value < 1 ||
      value > 65535) {
    return bad_url(url, "bad port");
  }
  return RendezvousAddress{std::string(host), static_cast<uint16_t>(value)};
}

std::string rendezvous_flag(const RendezvousAddress& a) {
  return "--nccl-init " + std::string(kScheme) + a.host + ":" + std::to_string(a.port);
}

std::optional<int64_t> header_int(const nlohmann::json& header, const char* key) {
  const auto it = header.find(key);
  if (it == header.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string header_string(const nlohmann::json& header, const char* key) {
  const auto it = header.find(key);
  return it != header.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// ---- RankLink

struct RankLink::State {
  asio::io_context ioc;
  tcp::socket socket{ioc};
  int peer_rank = 0;
  std::chrono::milliseconds send_timeout{kDefaultSendTimeout};
  // The first failed receive, after which nothing is sent or received, and the first failed
  // send, after which nothing is sent (what the peer sent before it left can still be read).
  // Used by the one thread that sends and receives.
  std::string read_failure;
  std::string write_failure;
  // One message is written at a time: by send(), or by shutdown_peer() on another thread, which
  // writes with ::send on the descriptor and touches no Asio state.
  std::timed_mutex write_mu;
  bool write_torn = false;     // a send stopped mid-message (under write_mu)
  bool shutdown_sent = false;  // (under write_mu)
};

RankLink::RankLink(std::unique_ptr<State> state) : state_(std::move(state)) {}
RankLink::RankLink(RankLink&&) noexcept = default;
RankLink& RankLink::operator=(RankLink&&) noexcept = default;
RankLink::~RankLink() = default;

Result<RankLink> RankLink::adopt(int fd, int peer_rank) {
  auto state = std::make_unique<State>();
  error_code ec;
  state->socket.assign(tcp::v4(), fd, ec);
  if (ec) return Err(ErrorCode::kIo, rank_name(peer_rank) + ": " + ec.message());
  state->peer_rank = peer_rank;
  set_keepalive(fd);
  return RankLink(std::move(state));
}

int RankLink::peer_rank() const {
  return state_->peer_rank;
}

void RankLink::set_send_timeout(std::chrono::milliseconds timeout) {
  state_->send_timeout = timeout;
}

Status RankLink::send(const nlohmann::json& header, std::span<const uint8_t> payload) {
  State& s = *state_;
  std::lock_guard<std::timed_mutex> lock(s.write_mu);
  if (!s.read_failure.empty()) return Err(ErrorCode::kIo, s.read_failure);
  if (!s.write_failure.empty()) return Err(ErrorCode::kIo, s.write_failure);
  const std::string text = header.dump();
  const auto prefix = encode_rank_prefix(static_cast<uint32_t>(text.size()), payload.size());
  const std::array<asio::const_buffer, 3> buffers = {asio::buffer(prefix), asio::buffer(text),
                                                     asio::buffer(payload.data(), payload.size())};
  const size_t total = prefix.size() + text.size() + payload.size();
  const auto [ec, sent] = run_until(s.ioc, s.socket, Clock::now() + s.send_timeout,
                                    [&](auto done) { asio::async_write(s.socket, buffers, done); });
  if (!ec) return {};
  s.write_torn = sent > 0 && sent < total;
  const std::string who = rank_name(s.peer_rank);
  s.write_failure = ec == asio::error::timed_out
                        ? who + " took no message for " + seconds(s.send_timeout) + " s"
                        : "sending to " + who + ": " + ec.message();
  return Err(ErrorCode::kIo, s.write_failure);
}

Result<RankMessage> RankLink::receive(std::optional<std::chrono::milliseconds> timeout,
                                      const char* timeout_flag) {
  State& s = *state_;
  if (!s.read_failure.empty()) return Err(ErrorCode::kIo, s.read_failure);
  const std::string who = rank_name(s.peer_rank);
  std::string timeout_error;
  std::optional<Clock::time_point> deadline;
  if (timeout) {
    deadline = Clock::now() + *timeout;
    timeout_error = who + " did not answer within " + seconds(*timeout) + " s";
    if (timeout_flag != nullptr) timeout_error += " (" + std::string(timeout_flag) + ")";
  }
  auto m = read_message(s.ioc, s.socket, deadline, kMaxRankHeaderBytes, kMaxRankPayloadBytes, who,
                        timeout_error);
  if (!m.ok()) s.read_failure = m.error().message;
  return m;
}

Result<size_t> RankLink::wait_any(std::span<RankLink* const> links,
                                  std::chrono::milliseconds timeout, const char* timeout_flag) {
  std::vector<pollfd> fds;
  for (size_t i = 0; i < links.size(); ++i) {
    if (!links[i]->state_->read_failure.empty()) return i;
    fds.push_back(pollfd{links[i]->state_->socket.native_handle(), POLLIN, 0});
  }
  const auto deadline = Clock::now() + timeout;
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    const int n = ::poll(fds.data(), fds.size(), static_cast<int>(std::max<int64_t>(0, left)));
    if (n > 0) {
      for (size_t i = 0; i < fds.size(); ++i) {
        if (fds[i].revents != 0) return i;
      }
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 || left <= 0) break;
  }
  State& s = *links[0]->state_;
  s.read_failure = rank_name(s.peer_rank) + " did not answer within " + seconds(timeout) + " s";
  if (timeout_flag != nullptr) s.read_failure += " (" + std::string(timeout_flag) + ")";
  return Err(ErrorCode::kIo, s.read_failure);
}

void RankLink::shutdown_peer(const std::string& reason) {
  if (!state_) return;  // moved from
  State& s = *state_;
  std::unique_lock<std::timed_mutex> lock(s.write_mu, std::defer_lock);
  if (!lock.try_lock_for(kShutdownWait) || s.shutdown_sent || s.write_torn) return;
  s.shutdown_sent = true;
  nlohmann::json header = {{"op", "shutdown"}};
  if (!reason.empty()) header["error"] = reason;
  const std::string text = header.dump();
  const auto prefix = encode_rank_prefix(static_cast<uint32_t>(text.size()), 0);
  std::string bytes(prefix.begin(), prefix.end());
  bytes += text;
  if (!send_all_raw(s.socket.native_handle(), bytes, Clock::now() + kShutdownWait)) {
    s.write_torn = true;
  }
}

Result<RankLink> connect_to_rank0(const RendezvousAddress& address, const nlohmann::json& hello,
                                  std::chrono::milliseconds timeout) {
  const std::string url = rendezvous_flag(address);
  const auto deadline = Clock::now() + timeout;
  auto state = std::make_unique<RankLink::State>();
  state->peer_rank = 0;
  tcp::socket& socket = state->socket;
  tcp::resolver resolver(state->ioc);
  error_code resolve_error;
  bool connected = false;
  while (Clock::now() < deadline) {
    const auto endpoints = resolver.resolve(tcp::v4(), address.host, std::to_string(address.port),
                                            tcp::resolver::numeric_service, resolve_error);
    if (resolve_error) break;
    std::optional<error_code> result;
    state->ioc.restart();
    asio::async_connect(socket, endpoints,
                        [&result](const error_code& ec, const tcp::endpoint&) { result = ec; });
    state->ioc.run_until(deadline);
    if (!result) {
      error_code ignored;
      socket.close(ignored);
      state->ioc.restart();
      state->ioc.run();  // the aborted handler, which refers to `result`
    }
    connected = result && !*result;
    if (connected) break;
    // Refused: rank 0 is not listening yet.
    std::this_thread::sleep_until(std::min(deadline, Clock::now() + kRetryInterval));
  }
  const std::string within = " within " + seconds(timeout) + " s";
  if (resolve_error) {
    return Err(ErrorCode::kIo,
               url + ": cannot resolve '" + address.host + "': " + resolve_error.message());
  }
  if (!connected) {
    return Err(ErrorCode::kIo, url + ": nobody answered" + within + " (rank 0 not started?)");
  }
  set_keepalive(socket.native_handle());
  RankLink link(std::move(state));
  link.set_send_timeout(std::chrono::duration_cast<std::chrono::milliseconds>(
      std::max(Clock::duration(0), deadline - Clock::now())));
  if (auto st = link.send(hello); !st.ok())
    return Err(ErrorCode::kIo, url + ": " + st.error().message);
  RankLink::State& s = *link.state_;
  auto answer = read_message(s.ioc, s.socket, deadline, kMaxHelloBytes, kMaxHelloBytes, "rank 0",
                             "rank 0 did not answer the hello" + within);
  if (!answer.ok()) return Err(ErrorCode::kIo, url + ": " + answer.error().message);
  const std::string op = header_string(answer->header, "op");
  if (op == "refused") {
    return Err(ErrorCode::kIo,
               url + ": rank 0 refused this rank: " + header_string(answer->header, "error"));
  }
  if (op != "welcome") return Err(ErrorCode::kIo, url + ": rank 0 answered '" + op + "'");
  link.set_send_timeout(kDefaultSendTimeout);
  return link;
}

}  // namespace novaserve
