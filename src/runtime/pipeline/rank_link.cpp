#include "runtime/pipeline/rank_link.h"

#include <algorithm>
#include <array>
#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <cctype>
#include <charconv>
#include <optional>
#include <sstream>
#include <thread>

namespace novaserve {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;
using Clock = std::chrono::steady_clock;

constexpr std::string_view kScheme = "tcp://";
constexpr std::array<uint8_t, 4> kMagic = {'N', 'V', 'S', 'P'};
constexpr size_t kPrefixBytes = 16;  // magic, u32 header length, u64 payload length
constexpr auto kRetryInterval = std::chrono::milliseconds(100);
constexpr auto kHelloTimeout = std::chrono::seconds(5);

std::string url_of(const RendezvousAddress& a) {
  return "--nccl-init " + std::string(kScheme) + a.host + ":" + std::to_string(a.port);
}

// "0.3", "5", "120": a timeout in seconds for messages.
std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream s;
  s << static_cast<double>(t.count()) / 1000.0;
  return s.str();
}

void put_le(uint64_t v, int bytes, uint8_t* p) {
  for (int i = 0; i < bytes; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}

uint64_t get_le(const uint8_t* p, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
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

// Runs the socket operation `start` begins (passing it a completion handler) until it completes
// or `deadline` passes, when it closes `socket`. Returns the operation's error, or timed_out.
template <typename Start>
error_code run_until(asio::io_context& ioc, tcp::socket& socket, Clock::time_point deadline,
                     Start start) {
  std::optional<error_code> result;
  ioc.restart();
  start([&result](const error_code& ec, auto&&...) { result = ec; });
  ioc.run_until(deadline);
  if (result) return *result;
  error_code ignored;
  socket.close(ignored);
  ioc.restart();
  ioc.run();  // the aborted handler, which refers to `result`
  return asio::error::timed_out;
}

// Reads one message from `socket` (blocking until `deadline`, or for ever when it is nullopt).
Result<RankMessage> read_message(asio::io_context& ioc, tcp::socket& socket,
                                 std::optional<Clock::time_point> deadline,
                                 const std::string& peer) {
  const auto read = [&](void* dst, size_t n) -> error_code {
    if (!deadline) {
      error_code ec;
      asio::read(socket, asio::buffer(dst, n), ec);
      return ec;
    }
    return run_until(ioc, socket, *deadline,
                     [&](auto done) { asio::async_read(socket, asio::buffer(dst, n), done); });
  };
  const auto io_error = [&](const error_code& ec) {
    return Err(ErrorCode::kIo, ec == asio::error::eof ? peer + " closed the connection"
                                                      : peer + ": " + ec.message());
  };
  std::array<uint8_t, kPrefixBytes> prefix{};
  if (error_code ec = read(prefix.data(), prefix.size())) return io_error(ec);
  if (!std::equal(kMagic.begin(), kMagic.end(), prefix.begin())) {
    return Err(ErrorCode::kIo, peer + " sent bytes that are not a novaserve rank message");
  }
  const auto header_bytes = static_cast<uint32_t>(get_le(prefix.data() + 4, 4));
  const uint64_t payload_bytes = get_le(prefix.data() + 8, 8);
  if (header_bytes > kMaxRankHeaderBytes || payload_bytes > kMaxRankPayloadBytes) {
    return Err(ErrorCode::kIo, peer + " announced a message of " + std::to_string(header_bytes) +
                                   " + " + std::to_string(payload_bytes) +
                                   " bytes, over the limits");
  }
  std::string header(header_bytes, '\0');
  if (error_code ec = read(header.data(), header.size())) return io_error(ec);
  RankMessage m;
  m.header = nlohmann::json::parse(header, nullptr, /*allow_exceptions=*/false);
  if (!m.header.is_object() || !m.header.contains("op") || !m.header["op"].is_string()) {
    return Err(ErrorCode::kIo, peer + " sent a message header that is not a JSON object with op");
  }
  m.payload.resize(payload_bytes);
  if (error_code ec = read(m.payload.data(), m.payload.size())) return io_error(ec);
  return m;
}

Status write_message(tcp::socket& socket, const nlohmann::json& header,
                     std::span<const uint8_t> payload, const std::string& peer) {
  const std::string text = header.dump();
  std::array<uint8_t, kPrefixBytes> prefix{};
  std::copy(kMagic.begin(), kMagic.end(), prefix.begin());
  put_le(text.size(), 4, prefix.data() + 4);
  put_le(payload.size(), 8, prefix.data() + 8);
  const std::array<asio::const_buffer, 3> buffers = {asio::buffer(prefix), asio::buffer(text),
                                                     asio::buffer(payload.data(), payload.size())};
  error_code ec;
  asio::write(socket, buffers, ec);
  if (ec) return Err(ErrorCode::kIo, "sending to " + peer + ": " + ec.message());
  return {};
}

std::string rank_name(int rank) {
  return "rank " + std::to_string(rank);
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
};

RankLink::RankLink(std::unique_ptr<State> state) : state_(std::move(state)) {}
RankLink::RankLink(RankLink&&) noexcept = default;
RankLink& RankLink::operator=(RankLink&&) noexcept = default;
RankLink::~RankLink() = default;

int RankLink::peer_rank() const {
  return state_->peer_rank;
}

Status RankLink::send(const nlohmann::json& header, std::span<const uint8_t> payload) {
  return write_message(state_->socket, header, payload, rank_name(state_->peer_rank));
}

Result<RankMessage> RankLink::receive() {
  return read_message(state_->ioc, state_->socket, std::nullopt, rank_name(state_->peer_rank));
}

// ---- RankListener

struct RankListener::State {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  RendezvousAddress address;
};

RankListener::RankListener(std::unique_ptr<State> state) : state_(std::move(state)) {}
RankListener::RankListener(RankListener&&) noexcept = default;
RankListener& RankListener::operator=(RankListener&&) noexcept = default;
RankListener::~RankListener() = default;

Result<RankListener> RankListener::listen(const RendezvousAddress& address) {
  auto state = std::make_unique<State>();
  state->address = address;
  const std::string url = url_of(address);
  error_code ec;
  tcp::resolver resolver(state->ioc);
  const auto endpoints =
      resolver.resolve(tcp::v4(), address.host, std::to_string(address.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || endpoints.empty()) {
    return Err(ErrorCode::kIo, url + ": cannot resolve '" + address.host + "': " + ec.message());
  }
  tcp::acceptor& a = state->acceptor;
  const tcp::endpoint endpoint = endpoints.begin()->endpoint();
  a.open(endpoint.protocol(), ec);
  if (!ec) a.set_option(tcp::acceptor::reuse_address(true), ec);
  if (!ec) a.bind(endpoint, ec);
  if (!ec) a.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) return Err(ErrorCode::kIo, url + ": cannot listen: " + ec.message());
  return RankListener(std::move(state));
}

uint16_t RankListener::port() const {
  error_code ec;
  return state_->acceptor.local_endpoint(ec).port();
}

Result<std::vector<JoinedRank>> RankListener::accept_ranks(
    int world_size, std::chrono::milliseconds timeout,
    const std::function<std::string(const nlohmann::json& hello)>& check) {
  RendezvousAddress shown = state_->address;
  shown.port = port();
  const std::string url = url_of(shown);
  if (world_size < 2) {
    return Err(ErrorCode::kInvalidInput,
               url + ": a world of " + std::to_string(world_size) + " rank has nobody to accept");
  }
  const auto deadline = Clock::now() + timeout;
  std::vector<std::optional<JoinedRank>> joined(static_cast<size_t>(world_size - 1));
  int n_joined = 0;
  asio::io_context& ioc = state_->ioc;
  while (n_joined < world_size - 1) {
    // Each connection gets its own io_context, which its RankLink keeps.
    auto link_state = std::make_unique<RankLink::State>();
    std::optional<error_code> accepted;
    ioc.restart();
    state_->acceptor.async_accept(link_state->socket,
                                  [&accepted](const error_code& ec) { accepted = ec; });
    ioc.run_until(deadline);
    if (!accepted) {
      error_code ignored;
      state_->acceptor.cancel(ignored);
      ioc.restart();
      ioc.run();
      std::string missing;
      for (size_t i = 0; i < joined.size(); ++i) {
        if (!joined[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i + 1);
      }
      return Err(ErrorCode::kIo, url + ": only " + std::to_string(n_joined) + " of the " +
                                     std::to_string(world_size - 1) +
                                     " other ranks joined within " + seconds(timeout) +
                                     " s (missing: rank " + missing + ")");
    }
    if (*accepted == asio::error::connection_aborted) continue;
    if (*accepted) return Err(ErrorCode::kIo, url + ": accept failed: " + accepted->message());
    auto hello = read_message(link_state->ioc, link_state->socket,
                              std::min(deadline, Clock::now() + kHelloTimeout), "a new peer");
    if (!hello.ok() || header_string(hello->header, "op") != "hello") continue;  // not a rank
    const nlohmann::json& h = hello->header;
    const int64_t rank = header_int(h, "rank").value_or(-1);
    const int64_t their_world = header_int(h, "world_size").value_or(-1);
    std::string refusal;
    if (their_world != world_size) {
      refusal = "a process with --world-size " + std::to_string(their_world) +
                " joined rank 0's world of " + std::to_string(world_size);
    } else if (rank < 1 || rank >= world_size) {
      refusal = "a process announced rank " + std::to_string(rank) + ", outside 1.." +
                std::to_string(world_size - 1);
    } else if (joined[static_cast<size_t>(rank - 1)].has_value()) {
      refusal = "rank " + std::to_string(rank) + " joined twice (two processes with one --rank?)";
    } else {
      refusal = check(h);
    }
    if (!refusal.empty()) {
      (void)write_message(link_state->socket, {{"op", "refused"}, {"error", refusal}}, {},
                          "a new peer");
      return Err(ErrorCode::kInvalidInput, url + ": " + refusal);
    }
    link_state->peer_rank = static_cast<int>(rank);
    RankLink link(std::move(link_state));
    NOVASERVE_RETURN_IF_ERROR(link.send({{"op", "welcome"}}));
    joined[static_cast<size_t>(rank - 1)] = JoinedRank{std::move(link), h};
    ++n_joined;
  }
  std::vector<JoinedRank> out;
  for (auto& j : joined) out.push_back(std::move(*j));
  return out;
}

Result<RankLink> connect_to_rank0(const RendezvousAddress& address, const nlohmann::json& hello,
                                  std::chrono::milliseconds timeout) {
  const std::string url = url_of(address);
  const auto deadline = Clock::now() + timeout;
  auto state = std::make_unique<RankLink::State>();
  state->peer_rank = 0;
  tcp::resolver resolver(state->ioc);
  error_code resolve_error;
  bool connected = false;
  while (Clock::now() < deadline) {
    const auto endpoints = resolver.resolve(tcp::v4(), address.host, std::to_string(address.port),
                                            tcp::resolver::numeric_service, resolve_error);
    if (resolve_error) break;
    connected = !run_until(state->ioc, state->socket, deadline,
                           [&](auto done) { asio::async_connect(state->socket, endpoints, done); });
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
  NOVASERVE_RETURN_IF_ERROR(write_message(state->socket, hello, {}, "rank 0"));
  auto answer = read_message(state->ioc, state->socket, deadline, "rank 0");
  if (!answer.ok()) {
    return Err(ErrorCode::kIo,
               url + ": no answer to the hello" + within + ": " + answer.error().message);
  }
  const std::string op = header_string(answer->header, "op");
  if (op == "refused") {
    return Err(ErrorCode::kIo,
               url + ": rank 0 refused this rank: " + header_string(answer->header, "error"));
  }
  if (op != "welcome") return Err(ErrorCode::kIo, url + ": rank 0 answered '" + op + "'");
  return RankLink(std::move(state));
}

}  // namespace novaserve
