// RankLink: the TCP connection between rank 0 of a multi-process pipeline and one other rank
// (--nccl-init tcp://HOST:PORT --rank R --world-size W, docs/multi-gpu.md "Several processes").
// Rank 0 listens on HOST:PORT (rank_listener.h); every other rank connects (retrying until rank 0
// is up), says hello with its rank, world size and model, and keeps the connection for the whole
// run: rank 0 sends it commands (remote_stage.h) and it answers (stage_server.h).
//
// Wire format of one message (rank_wire.h), integers little-endian: the magic "NVSP", u32 header
// length, u64 payload length, the header (JSON text: "op" and the command's fields), the payload
// (raw bytes: token ids, block tables, hidden states, logits).
#pragma once

#include <chrono>
#include <cstdint>
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

/// "--nccl-init tcp://HOST:PORT", for messages.
std::string rendezvous_flag(const RendezvousAddress& address);

/// One message: a JSON header and a binary payload.
struct RankMessage {
  nlohmann::json header;
  std::vector<uint8_t> payload;
};

/// header[key] when it is an integer (a peer's message never throws), else nullopt.
std::optional<int64_t> header_int(const nlohmann::json& header, const char* key);
/// header[key] when it is a string, else "".
std::string header_string(const nlohmann::json& header, const char* key);

/// Largest header and payload accepted from a rank that has joined (bounds what a peer can make
/// a rank allocate): 16 MiB of JSON, 4 GiB of payload (a prefill step's hidden state of 8192
/// rows x 16384 f32 is 512 MiB).
inline constexpr uint32_t kMaxRankHeaderBytes = 16u << 20;
inline constexpr uint64_t kMaxRankPayloadBytes = uint64_t{4} << 30;
/// Largest header, and largest payload, of a hello and of rank 0's answer to it: a peer that has
/// not joined yet (a port scanner, a stray client) makes rank 0 allocate at most this much.
inline constexpr uint64_t kMaxHelloBytes = uint64_t{64} << 10;

/// TCP keepalive of every link (SO_KEEPALIVE, TCP_KEEPIDLE/INTVL/CNT): the kernel probes a link
/// silent for kKeepaliveIdleS seconds every kKeepaliveIntervalS seconds and fails it after
/// kKeepaliveProbes unanswered probes (about 25 s), so a rank whose peer's host vanished or was
/// cut off stops waiting. A stopped process's kernel still answers probes: that is what the step
/// timeout (RemoteStage) is for.
inline constexpr int kKeepaliveIdleS = 10;
inline constexpr int kKeepaliveIntervalS = 5;
inline constexpr int kKeepaliveProbes = 3;

/// A connected link. send() and receive() are blocking and used by one thread at a time;
/// shutdown_peer() may be called from any thread. Movable, not copyable.
class RankLink {
 public:
  /// Adopts `fd`, a connected TCP socket (the link owns and closes it), to the rank `peer_rank`,
  /// and turns on TCP keepalive. Errors: kIo when the socket cannot be adopted.
  static Result<RankLink> adopt(int fd, int peer_rank);

  RankLink(RankLink&&) noexcept;
  RankLink& operator=(RankLink&&) noexcept;
  ~RankLink();

  /// The rank at the other end.
  int peer_rank() const;

  /// How long send() waits for the peer to take a message (default 60 s).
  void set_send_timeout(std::chrono::milliseconds timeout);

  /// Sends one message. Errors: kIo naming the peer when the connection fails or the peer takes
  /// nothing for the send timeout. Once a send has failed, every later send fails at once with
  /// that first error; receive() still returns what the peer sent before it went away.
  Status send(const nlohmann::json& header, std::span<const uint8_t> payload = {});
  /// Waits for the next message: for ever without `timeout` (a rank waiting for commands; TCP
  /// keepalive still ends the wait when the peer's host is gone), else at most `timeout`.
  /// Errors: kIo when the peer closed the connection or it failed, when `timeout` passed ("rank R
  /// did not answer within S s", followed by `timeout_flag` in parentheses when given), or when
  /// the bytes are not a message (bad magic, lengths over the limits, a header that is not a JSON
  /// object with a string "op"). Once a receive has failed, every later send and receive fails
  /// at once with that first error.
  Result<RankMessage> receive(std::optional<std::chrono::milliseconds> timeout = std::nullopt,
                              const char* timeout_flag = nullptr);

  /// Waits until one of `links` has bytes to read, or its connection closed or failed, for at
  /// most `timeout`. links[0] is the link whose answer is awaited; the others are watched for a
  /// message they may send meanwhile (rank 0 waits for the last stage of a direct pipeline and
  /// hears the other ranks' failures). Returns the index of the first such link (one whose
  /// receive already failed counts at once); receive() on it then reads the message. Errors:
  /// kIo on the timeout, "rank R did not answer within S s (`timeout_flag`)" for links[0],
  /// which then stays failed as after a receive() timeout.
  static Result<size_t> wait_any(std::span<RankLink* const> links,
                                 std::chrono::milliseconds timeout, const char* timeout_flag);

  /// Tells the peer to shut down: {"op": "shutdown"}, with "error": `reason` when it is not
  /// empty (the rank then exits 1 with it, else 0). At most once per link (later calls do
  /// nothing); best effort and bounded: it waits at most 1 s for a message another thread is
  /// sending and 1 s for the peer to take the bytes, and sends nothing when an earlier send
  /// stopped mid-message (the peer then sees the connection close). Works on a link whose
  /// receive failed (a rank that did not answer in time gets it when it resumes). Thread-safe
  /// against send() and receive() on another thread: rank 0's exit hooks call it.
  void shutdown_peer(const std::string& reason = "");

 private:
  friend Result<RankLink> connect_to_rank0(const RendezvousAddress&, const nlohmann::json&,
                                           std::chrono::milliseconds);
  struct State;
  explicit RankLink(std::unique_ptr<State> state);
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
