#include "runtime/pipeline/rank_listener.h"

#include <array>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <thread>

#include "runtime/pipeline/rank_wire.h"

namespace novaserve {
namespace {

namespace asio = boost::asio;
using asio::ip::tcp;
using boost::system::error_code;

// Connections reading their hello at once beyond the world's ranks: bounds what idle or stray
// peers can hold (each at most 2 x kMaxHelloBytes).
constexpr size_t kExtraPending = 64;

// A connection that has not said hello yet, or is being answered.
struct Peer {
  explicit Peer(asio::io_context& ioc) : socket(ioc), timer(ioc) {}
  tcp::socket socket;
  asio::steady_timer timer;
  std::array<uint8_t, kRankPrefixBytes> prefix{};
  std::string header;
  std::vector<uint8_t> payload;
  std::string answer;  // the bytes being written back
};
using PeerPtr = std::shared_ptr<Peer>;

std::string seconds(std::chrono::milliseconds t) {
  std::ostringstream s;
  s << static_cast<double>(t.count()) / 1000.0;
  return s.str();
}

std::string encode(const nlohmann::json& header) {
  const std::string text = header.dump();
  const auto prefix = encode_rank_prefix(static_cast<uint32_t>(text.size()), 0);
  return std::string(prefix.begin(), prefix.end()) + text;
}

}  // namespace

// Everything below runs on the thread that runs `ioc`: accept_ranks()'s caller, then the refuser.
struct RankListener::State {
  asio::io_context ioc;
  tcp::acceptor acceptor{ioc};
  asio::steady_timer deadline{ioc};
  RendezvousAddress address;
  std::set<PeerPtr> peers;  // reading a hello or being answered
  size_t max_peers = kExtraPending;
  std::thread refuser;

  // The world being joined (accept_ranks), then complete (refusing).
  bool refusing = false;
  int world_size = 0;
  HelloCheck check;
  std::vector<std::optional<JoinedRank>> joined;  // element i: rank i + 1
  std::vector<bool> taken;                        // a rank admitted, its welcome maybe unsent
  int n_joined = 0;
  std::optional<Error> failure;
  std::function<void(const std::string&)> on_refusal;

  std::string url() const {
    RendezvousAddress a = address;
    error_code ec;
    a.port = acceptor.local_endpoint(ec).port();
    return rendezvous_flag(a);
  }

  void drop(const PeerPtr& p) {
    error_code ignored;
    p->socket.close(ignored);
    p->timer.cancel();
    peers.erase(p);
  }

  void accept_next() {
    auto peer = std::make_shared<Peer>(ioc);
    acceptor.async_accept(peer->socket, [this, peer](const error_code& ec) {
      if (ec == asio::error::operation_aborted) return;  // stopping
      if (ec && ec != asio::error::connection_aborted) {
        if (!refusing) failure = Err(ErrorCode::kIo, url() + ": accept failed: " + ec.message());
        ioc.stop();
        return;
      }
      if (!ec && peers.size() < max_peers) read_hello(peer);
      accept_next();
    });
  }

  void read_hello(const PeerPtr& p) {
    peers.insert(p);
    p->timer.expires_after(std::chrono::seconds(kHelloTimeoutS));
    p->timer.async_wait([this, w = std::weak_ptr<Peer>(p)](const error_code& ec) {
      if (auto q = w.lock(); q && !ec) drop(q);
    });
    asio::async_read(p->socket, asio::buffer(p->prefix), [this, p](const error_code& ec, size_t) {
      if (ec) return drop(p);
      auto lengths = decode_rank_prefix(p->prefix, kMaxHelloBytes, kMaxHelloBytes, "a new peer");
      if (!lengths.ok()) return drop(p);
      p->header.resize(lengths->header_bytes);
      p->payload.resize(lengths->payload_bytes);
      const std::array<asio::mutable_buffer, 2> body = {asio::buffer(p->header),
                                                        asio::buffer(p->payload)};
      asio::async_read(p->socket, body, [this, p](const error_code& ec2, size_t) {
        if (ec2) return drop(p);
        auto h = parse_rank_header(p->header, "a new peer");
        if (!h.ok() || header_string(*h, "op") != "hello") return drop(p);
        p->timer.cancel();
        on_hello(p, *h);
      });
    });
  }

  // Writes `header` to `p`, then calls `then` with the result (the peer stays in `peers`).
  void answer(const PeerPtr& p, const nlohmann::json& header,
              std::function<void(const error_code&)> then) {
    p->answer = encode(header);
    asio::async_write(p->socket, asio::buffer(p->answer),
                      [p, then = std::move(then)](const error_code& ec, size_t) { then(ec); });
  }

  // Why a hello cannot join this world, or "".
  std::string world_refusal(const nlohmann::json& h) const {
    const int64_t rank = header_int(h, "rank").value_or(-1);
    const int64_t their_world = header_int(h, "world_size").value_or(-1);
    if (their_world != world_size) {
      return "a process with --world-size " + std::to_string(their_world) +
             " joined rank 0's world of " + std::to_string(world_size);
    }
    if (rank < 1 || rank >= world_size) {
      return "a process announced rank " + std::to_string(rank) + ", outside 1.." +
             std::to_string(world_size - 1);
    }
    return "";
  }

  void on_hello(const PeerPtr& p, const nlohmann::json& h) {
    const int64_t rank = header_int(h, "rank").value_or(-1);
    std::string refusal = world_refusal(h);
    if (refusing) {
      if (refusal.empty()) {
        refusal = "rank " + std::to_string(rank) + " has already joined rank 0's world of " +
                  std::to_string(world_size) + " (two processes with one --rank?)";
      }
      if (on_refusal) on_refusal(refusal);
      answer(p, {{"op", "refused"}, {"error", refusal}}, [this, p](const error_code&) { drop(p); });
      return;
    }
    if (refusal.empty() && taken[static_cast<size_t>(rank - 1)]) {
      refusal = "rank " + std::to_string(rank) + " joined twice (two processes with one --rank?)";
    }
    if (refusal.empty()) refusal = check(h);
    if (!refusal.empty()) {
      if (!failure) failure = Err(ErrorCode::kIo, url() + ": " + refusal);
      answer(p, {{"op", "refused"}, {"error", refusal}}, [this, p](const error_code&) {
        drop(p);
        ioc.stop();
      });
      return;
    }
    taken[static_cast<size_t>(rank - 1)] = true;
    answer(p, {{"op", "welcome"}}, [this, p, rank, h](const error_code& ec) {
      peers.erase(p);
      error_code released;
      const int fd = ec ? -1 : p->socket.release(released);
      auto link = fd >= 0 && !released ? RankLink::adopt(fd, static_cast<int>(rank))
                                       : Result<RankLink>(Err(ErrorCode::kIo, "welcome failed"));
      if (!link.ok()) {  // the rank went away before its welcome: it may come again
        taken[static_cast<size_t>(rank - 1)] = false;
        return;
      }
      joined[static_cast<size_t>(rank - 1)] = JoinedRank{std::move(link.value()), h};
      if (++n_joined == world_size - 1) ioc.stop();
    });
  }
};

RankListener::RankListener(std::unique_ptr<State> state) : state_(std::move(state)) {}

RankListener::~RankListener() {
  state_->ioc.stop();
  if (state_->refuser.joinable()) state_->refuser.join();
}

Result<std::unique_ptr<RankListener>> RankListener::listen(const RendezvousAddress& address) {
  auto state = std::make_unique<State>();
  state->address = address;
  const std::string url = rendezvous_flag(address);
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
  return std::unique_ptr<RankListener>(new RankListener(std::move(state)));
}

uint16_t RankListener::port() const {
  error_code ec;
  return state_->acceptor.local_endpoint(ec).port();
}

Result<std::vector<JoinedRank>> RankListener::accept_ranks(int world_size,
                                                           std::chrono::milliseconds timeout,
                                                           const HelloCheck& check) {
  State& s = *state_;
  if (world_size < 2) {
    return Err(ErrorCode::kInvalidInput, s.url() + ": a world of " + std::to_string(world_size) +
                                             " rank has nobody to accept");
  }
  s.world_size = world_size;
  s.check = check;
  s.joined.clear();
  s.joined.resize(static_cast<size_t>(world_size - 1));
  s.taken.assign(static_cast<size_t>(world_size - 1), false);
  s.n_joined = 0;
  s.failure.reset();
  s.max_peers = static_cast<size_t>(world_size) + kExtraPending;
  s.deadline.expires_after(timeout);
  s.deadline.async_wait([&s, timeout](const error_code& ec) {
    if (ec) return;
    std::string missing;
    for (size_t i = 0; i < s.joined.size(); ++i) {
      if (!s.joined[i]) missing += (missing.empty() ? "" : ", ") + std::to_string(i + 1);
    }
    s.failure =
        Err(ErrorCode::kIo, s.url() + ": only " + std::to_string(s.n_joined) + " of the " +
                                std::to_string(s.world_size - 1) + " other ranks joined within " +
                                seconds(timeout) + " s (missing: rank " + missing + ")");
    s.ioc.stop();
  });
  s.ioc.restart();
  s.accept_next();
  s.ioc.run();
  error_code ignored;
  s.deadline.cancel();
  if (s.failure) {
    s.acceptor.cancel(ignored);
    for (const PeerPtr& p : std::set<PeerPtr>(s.peers)) s.drop(p);
    s.ioc.restart();
    s.ioc.run();  // the cancelled handlers
    s.check = nullptr;
    return *s.failure;
  }
  // Connections still reading a hello, and the accept, carry on once refuse_late_joiners runs.
  s.check = nullptr;
  s.refusing = true;
  std::vector<JoinedRank> out;
  for (auto& j : s.joined) out.push_back(std::move(*j));
  s.joined.clear();
  return out;
}

void RankListener::refuse_late_joiners(std::function<void(const std::string&)> on_refusal) {
  State& s = *state_;
  s.on_refusal = std::move(on_refusal);
  s.refuser = std::thread([&s] {
    s.ioc.restart();
    s.ioc.run();
  });
}

}  // namespace novaserve
