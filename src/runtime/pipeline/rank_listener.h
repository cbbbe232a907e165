// RankListener: rank 0's side of the rendezvous of a multi-process pipeline (--nccl-init
// tcp://HOST:PORT, docs/multi-gpu.md "Several processes"). It listens on HOST:PORT, reads the
// hellos of every connection at once (an idle connection never delays a rank), admits ranks 1 ..
// W-1 and, once the world is complete, goes on answering late hellos with a refusal for as long
// as it lives.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/result.h"
#include "runtime/pipeline/rank_link.h"

namespace novaserve {

/// A rank that joined: its link and its hello header.
struct JoinedRank {
  RankLink link;
  nlohmann::json hello;
};

/// Sees a hello ({"op": "hello", "rank": R, "world_size": W, ...}) whose world size and rank are
/// right; returns "" to admit the rank or the reason to refuse it.
using HelloCheck = std::function<std::string(const nlohmann::json& hello)>;

/// Seconds a new connection has to send its hello before it is dropped.
inline constexpr int kHelloTimeoutS = 5;

class RankListener {
 public:
  /// Binds and listens on `address` (IPv4; port 0 picks a free port, see port()). Errors: kIo
  /// when the host does not resolve or the port cannot be bound.
  static Result<std::unique_ptr<RankListener>> listen(const RendezvousAddress& address);

  /// Stops answering late hellos and closes the port.
  ~RankListener();
  RankListener(const RankListener&) = delete;
  RankListener& operator=(const RankListener&) = delete;

  uint16_t port() const;

  /// Accepts connections until ranks 1 .. world_size - 1 have each said hello, or until
  /// `timeout` passes. Hellos are read concurrently, each under kMaxHelloBytes and within
  /// kHelloTimeoutS seconds; a connection that sends anything else is dropped. A refused rank is
  /// told the reason and the call fails with it. Returns the ranks in rank order (element i is
  /// rank i + 1). Errors: kInvalidInput for a world size below 2; kIo for a hello with another
  /// world size, a rank outside [1, W) or one that already joined, `check`'s refusals, the
  /// timeout (naming the ranks missing) and a failed accept.
  Result<std::vector<JoinedRank>> accept_ranks(int world_size, std::chrono::milliseconds timeout,
                                               const HelloCheck& check);

  /// After accept_ranks() succeeded: on a thread of its own, answers every later hello with a
  /// refusal ("rank R has already joined ...", or the world-size or rank-range reason), which
  /// the late process exits with, and calls `on_refusal` with it (from that thread), until the
  /// listener is destroyed.
  void refuse_late_joiners(std::function<void(const std::string& refusal)> on_refusal);

 private:
  struct State;
  explicit RankListener(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

}  // namespace novaserve
