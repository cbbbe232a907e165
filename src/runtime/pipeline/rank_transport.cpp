#include "runtime/pipeline/rank_transport.h"

#include "runtime/pipeline/rank_link.h"

namespace novaserve {
namespace {

// Whether this rank would use NCCL if the world chose it.
bool nccl_asked(RankTransport t, const std::string& device) {
  return t == RankTransport::kNccl || (t == RankTransport::kAuto && device == "cuda");
}

}  // namespace

Result<RankTransport> parse_rank_transport(std::string_view value) {
  if (value == "auto") return RankTransport::kAuto;
  if (value == "nccl") return RankTransport::kNccl;
  if (value == "tcp") return RankTransport::kTcp;
  return Err(ErrorCode::kInvalidInput,
             "--pipeline-transport must be auto, nccl or tcp (got '" + std::string(value) + "')");
}

const char* rank_transport_name(RankTransport t) {
  switch (t) {
    case RankTransport::kNccl:
      return "nccl";
    case RankTransport::kTcp:
      return "tcp";
    case RankTransport::kAuto:
      break;
  }
  return "auto";
}

Status check_rank_transport(RankTransport t) {
  if (t != RankTransport::kNccl) return {};
  auto library = NcclLibrary::load();
  if (!library.ok()) {
    return Err(library.error().code, "--pipeline-transport nccl: " + library.error().message);
  }
  return {};
}

void add_transport_hello(nlohmann::json& hello, RankTransport t, const std::string& device) {
  hello["pipeline_transport"] = rank_transport_name(t);
  if (!nccl_asked(t, device)) {
    hello["nccl"] = "not asked";
    return;
  }
  auto library = NcclLibrary::load();
  hello["nccl"] = library.ok() ? std::string() : library.error().message;
}

std::string transport_mismatch(const nlohmann::json& hello, RankTransport t) {
  const std::string theirs = header_string(hello, "pipeline_transport");
  if (theirs == rank_transport_name(t)) return "";
  return "rank " + std::to_string(header_int(hello, "rank").value_or(-1)) +
         " runs --pipeline-transport " + (theirs.empty() ? "(none)" : theirs) + ", rank 0 " +
         rank_transport_name(t) + " (every rank must give the same)";
}

Result<TransportChoice> choose_rank_transport(RankTransport t, const std::string& device,
                                              const std::vector<nlohmann::json>& hellos) {
  TransportChoice c;
  const std::string flag = std::string("--pipeline-transport ") + rank_transport_name(t);
  if (!nccl_asked(t, device)) {
    c.why = flag + (t == RankTransport::kTcp ? "" : " with --device " + device);
    return c;
  }
  auto library = NcclLibrary::load();
  std::string missing;  // why a rank cannot use NCCL
  if (!library.ok()) missing = "rank 0: " + library.error().message;
  for (const nlohmann::json& h : hellos) {
    const std::string why = header_string(h, "nccl");
    if (missing.empty() && !why.empty()) {
      missing = "rank " + std::to_string(header_int(h, "rank").value_or(-1)) + ": " + why;
    }
  }
  if (!missing.empty()) {
    if (t == RankTransport::kNccl) return Err(ErrorCode::kIo, flag + ": " + missing);
    c.why = flag + ": NCCL is not usable on every rank (" + missing + ")";
    return c;
  }
  c.nccl = true;
  c.library = *library;
  c.why = flag + "; NCCL " + c.library->version() + " from " + c.library->path();
  return c;
}

}  // namespace novaserve
