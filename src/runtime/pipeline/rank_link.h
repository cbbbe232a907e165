// RankLink: the TCP connection between rank 0 of a multi-process pipeline and one other rank
// (--nccl-init tcp://HOST:PORT --rank R --world-size W, docs/multi-gpu.md "Several processes").
// Rank 0 listens on HOST:PORT; every other rank connects (retrying until rank 0 is up), says
// hello with its rank, world size and model, and keeps the connection for the whole run: rank 0
// sends it commands (remote_stage.h) and it answers (stage_server.h).
//
// Wire format of one message, integers little-endian: the magic "NVSP", u32 header length, u64
// payload length, the header (JSON text: "op" and the command's fields), the payload (raw bytes:
// token ids, block tables, hidden states, logits).
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// Where rank 0 listens: a host name or dotted IPv4 address, and a TCP port.
struct RendezvousAddress {
  std::string host;
  uint16_t port = 0;
};

/// Parses exactly `tcp://HOST:PORT`: HOST a host name or dotted IPv4 address, PORT 1..65535.
/// Errors: kInvalidInput, one line naming --nccl-init, the bad value and what is wrong with it.
Result<RendezvousAddress> parse_rendezvous_url(std::string_view url);

/// One message: a JSON header and a binary payload.
struct RankMessage {
  nlohmann::json header;
  std::vector<uint8_t> payload;
};

/// header[key] when it is an integer (a peer's message never throws), else nullopt.
std::optional<int64_t> header_int(const nlohmann::json& header, const char* key);
/// header[key] when it is a string, else "".
std::string header_string(const nlohmann::json& header, const char* key);

/// Largest header and payload accepted (bounds what a stray peer can make a rank allocate):
/// 16 MiB of JSON, 4 GiB of payload (a prefill step's hidden state of 8192 rows x 16384 f32 is
/// 512 MiB).
inline constexpr uint32_t kMaxRankHeaderBytes = 16u << 20;
inline constexpr uint64_t kMaxRankPayloadBytes = uint64_t{4} << 30;

/// A connected link. Blocking, one thread at a time. Movable, not copyable.
class RankLink {
 public:
  RankLink(RankLink&&) noexcept;
  RankLink& operator=(RankLink&&) noexcept;
  ~RankLink();

  /// The rank at the other end.
  int peer_rank() const;

  /// Sends one message. Errors: kIo naming the peer when the connection fails.
  Status send(const nlohmann::json& header, std::span<const uint8_t> payload = {});
  /// Waits for the next message. Errors: kIo when the peer closed the connection or it failed,
  /// or the bytes are not a message (bad magic, lengths over the limits, a header that is not a
  /// JSON object with a string "op").
  Result<RankMessage> receive();

 private:
  friend class RankListener;
  friend Result<RankLink> connect_to_rank0(const RendezvousAddress&, const nlohmann::json&,
                                           std::chrono::milliseconds);
  struct State;
  explicit RankLink(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// A rank that joined: its link and its hello header.
struct JoinedRank {
  RankLink link;
  nlohmann::json hello;
};

/// Rank 0's side. listen() first (so the port is known), then accept_ranks(). Movable.
class RankListener {
 public:
  /// Binds and listens on `address` (IPv4; port 0 picks a free port, see port()). Errors: kIo
  /// when the host does not resolve or the port cannot be bound.
  static Result<RankListener> listen(const RendezvousAddress& address);

  RankListener(RankListener&&) noexcept;
  RankListener& operator=(RankListener&&) noexcept;
  ~RankListener();

  uint16_t port() const;

  /// Accepts connections until ranks 1 .. world_size - 1 have each said hello ({"op": "hello",
  /// "rank": R, "world_size": W, ...}), or until `timeout` passes. `check` sees each hello and
  /// returns an empty string to admit the rank or the reason to refuse it; a refused rank is told
  /// the reason and the call fails with it. A connection that sends no valid hello within 5 s is
  /// dropped. Returns the ranks in rank order (element i is rank i + 1). Errors: kInvalidInput
  /// for a world size below 2, a hello with another world size, a rank outside [1, W) or one
  /// that already joined, and `check`'s refusals; kIo when the timeout passes first (naming the
  /// ranks missing) or accepting fails.
  Result<std::vector<JoinedRank>> accept_ranks(
      int world_size, std::chrono::milliseconds timeout,
      const std::function<std::string(const nlohmann::json& hello)>& check);

 private:
  struct State;
  explicit RankListener(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

/// Rank R's side: connects to rank 0 at `address`, retrying every 100 ms while nobody answers,
/// sends `hello` (which names the rank) and waits for rank 0 to admit it, all within `timeout`.
/// Errors: kIo when nobody answered within the timeout ("nobody answered ... within N s (rank 0
/// not started?)"), when the host does not resolve, or when rank 0 refused the rank (its reason)
/// or closed the connection.
Result<RankLink> connect_to_rank0(const RendezvousAddress& address, const nlohmann::json& hello,
                                  std::chrono::milliseconds timeout);

}  // namespace novaserve
