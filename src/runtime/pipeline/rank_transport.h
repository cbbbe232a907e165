// How the stages of a multi-process pipeline pass hidden states (--pipeline-transport
// auto|nccl|tcp, docs/multi-gpu.md "The NCCL transport"): the flag, what each rank says about it
// in its hello, and rank 0's choice for the world.
//
//   tcp   the TCP star: rank 0 sends each remote stage its input hidden state with the step plan
//         and reads its output back (every hidden state crosses rank 0's links);
//   nccl  the direct protocol: rank 0 sends each remote stage its plan only, stage r receives
//         its input from rank r - 1 and sends its output to rank r + 1 over NCCL, and only the
//         last stage answers rank 0;
//   auto  nccl for --device cuda when every rank can load libnccl, else tcp.
#pragma once

#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "runtime/pipeline/nccl_library.h"

namespace novaserve {

enum class RankTransport { kAuto, kNccl, kTcp };

/// Parses --pipeline-transport. Errors: kInvalidInput, one line naming the flag and the value.
Result<RankTransport> parse_rank_transport(std::string_view value);
/// "auto", "nccl" or "tcp".
const char* rank_transport_name(RankTransport t);

/// What a rank checks before it loads a model: with `nccl`, that NCCL loads
/// (NcclLibrary::load). Errors: "--pipeline-transport nccl: " and the load's error (kNotFound,
/// kUnsupported).
Status check_rank_transport(RankTransport t);

/// Adds this rank's transport fields to its hello: "pipeline_transport" (the flag) and "nccl":
/// "" when NCCL loads here, else why not ("not asked" where the flag and `device` never use it:
/// tcp, or auto off --device cuda).
void add_transport_hello(nlohmann::json& hello, RankTransport t, const std::string& device);

/// "" when `hello` gave rank 0's flag `t`, else why the rank is refused ("rank 1 runs
/// --pipeline-transport tcp, rank 0 nccl").
std::string transport_mismatch(const nlohmann::json& hello, RankTransport t);

/// Rank 0's choice for the world.
struct TransportChoice {
  bool nccl = false;
  std::string why;                             ///< for the start-up log
  std::shared_ptr<const NcclLibrary> library;  ///< with nccl
};

/// Chooses from rank 0's flag `t` and `device` and the other ranks' hellos (which gave the same
/// flag): tcp for tcp; nccl for nccl; for auto, nccl when `device` is cuda and NCCL loads on
/// rank 0 and on every rank, else tcp (`why` names the reason). Errors: with nccl, a rank that
/// cannot load NCCL (kIo naming it) or rank 0's load error.
Result<TransportChoice> choose_rank_transport(RankTransport t, const std::string& device,
                                              const std::vector<nlohmann::json>& hellos);

}  // namespace novaserve
