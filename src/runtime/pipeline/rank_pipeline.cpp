#include "runtime/pipeline/rank_pipeline.h"

#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <numeric>

#include "gguf/gguf_fingerprint.h"
#include "runtime/pipeline/layer_split.h"
#include "runtime/pipeline/nccl_transport.h"
#include "runtime/pipeline/rank_listener.h"
#include "runtime/pipeline/remote_stage.h"
#include "runtime/pipeline/staged_copy_transport.h"

namespace novaserve {
namespace {

// The identity's fields, in the order a mismatch is reported (the fingerprint last: it differs
// whenever anything else does).
constexpr const char* kIdentityFields[] = {"arch",    "n_layer",      "n_embd",
                                           "n_ff",    "n_head",       "n_head_kv",
                                           "n_vocab", "tensor_bytes", "fingerprint"};

std::string field_text(const nlohmann::json& model, const char* key) {
  const auto it = model.find(key);
  if (it == model.end()) return "none";
  return it->is_string() ? it->get<std::string>() : it->dump();
}

// Rank 0's side of the NCCL world: the unique id to every rank ("nccl_init", sent before rank
// 0 creates its own communicator, which returns only once every rank has called
// ncclCommInitRank), then their answers. The remote stages are direct afterwards.
Result<std::unique_ptr<Transport>> start_nccl_world(const TransportChoice& choice,
                                                    const std::vector<RemoteStage*>& remotes,
                                                    const PipelineStage& local,
                                                    const RankWorld& world) {
  auto id = choice.library->unique_id();
  if (!id.ok()) return id.error();
  const std::string hex = unique_id_hex(*id);
  for (RemoteStage* r : remotes) NOVASERVE_RETURN_IF_ERROR(r->start_nccl_init(hex));
  auto mine = NcclTransport::create(choice.library, *id, 0, world.world_size, local.stream(),
                                    world.timeout, world.step_timeout);
  if (!mine.ok()) {
    // A rank that failed first explains more than rank 0's own failure (often a timeout).
    for (RemoteStage* r : remotes) {
      std::vector<RankLink*> link = {r->link().get()};
      if (!RankLink::wait_any(link, std::chrono::milliseconds(0), nullptr).ok()) continue;
      if (const Status st = r->finish_nccl_init(); !st.ok()) return st.error();
    }
    return mine.error();
  }
  for (RemoteStage* r : remotes) NOVASERVE_RETURN_IF_ERROR(r->finish_nccl_init());
  // The last stage hears the others' failures while it waits for its answer.
  std::vector<std::shared_ptr<RankLink>> others;
  for (size_t i = 0; i + 1 < remotes.size(); ++i) others.push_back(remotes[i]->link());
  remotes.back()->watch(std::move(others));
  return std::unique_ptr<Transport>(std::move(mine.value()));
}

}  // namespace

Result<nlohmann::json> model_identity(const GgufFile& file) {
  auto config = ModelConfig::from_gguf(file);
  if (!config.ok()) return config.error();
  auto w = weight_bytes(file, *config);
  if (!w.ok()) return w.error();
  const uint64_t bytes =
      std::accumulate(w->layer.begin(), w->layer.end(), w->embedding + w->head + w->other);
  char fingerprint[17];
  std::snprintf(fingerprint, sizeof fingerprint, "%016" PRIx64, gguf_fingerprint(file));
  return nlohmann::json{
      {"arch", config->arch_name},  {"n_layer", config->n_layer}, {"n_embd", config->n_embd},
      {"n_ff", config->n_ff},       {"n_head", config->n_head},   {"n_head_kv", config->n_head_kv},
      {"n_vocab", config->n_vocab}, {"tensor_bytes", bytes},      {"fingerprint", fingerprint}};
}

std::string model_mismatch(const nlohmann::json& ours, const nlohmann::json& theirs) {
  if (theirs == ours) return "";
  if (!theirs.is_object()) return "it sent no model description";
  for (const char* key : kIdentityFields) {
    const auto a = ours.find(key);
    const auto b = theirs.find(key);
    if (a != ours.end() && b != theirs.end() && *a == *b) continue;
    const std::string why =
        std::string(key) + " " + field_text(theirs, key) + ", rank 0's " + field_text(ours, key);
    if (std::string_view(key) == "fingerprint") {
      return "the same shapes and tensor sizes but other weights or hyper-parameters (" + why + ")";
    }
    return why;
  }
  return "its model description differs";
}

Result<std::unique_ptr<PipelineRunner>> create_rank0_pipeline(std::shared_ptr<const GgufFile> file,
                                                              PipelineConfig config,
                                                              const RankWorld& world,
                                                              const std::string& device,
                                                              const StageFactory& make_local) {
  auto model_config = ModelConfig::from_gguf(*file);
  if (!model_config.ok()) return model_config.error();
  const auto t0 = std::chrono::steady_clock::now();
  auto identity = model_identity(*file);
  if (!identity.ok()) return identity.error();
  const double identity_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  config.n_stages = world.world_size;
  auto split = choose_layer_split(*file, config);
  if (!split.ok()) return split.error();
  auto listened = RankListener::listen(world.address);
  if (!listened.ok()) return listened.error();
  std::shared_ptr<RankListener> listener = std::move(listened.value());
  std::fprintf(stderr,
               "novaserve pipeline: rank 0 waiting on port %u for ranks 1..%d (model fingerprint "
               "%s, %.1f ms)\n",
               static_cast<unsigned>(listener->port()), world.world_size - 1,
               (*identity)["fingerprint"].get<std::string>().c_str(), identity_ms);
  const auto check = [&](const nlohmann::json& hello) -> std::string {
    const std::string who = "rank " + std::to_string(header_int(hello, "rank").value_or(-1));
    if (header_string(hello, "device") != device) {
      return who + " runs --device " + header_string(hello, "device") + ", rank 0 " + device;
    }
    if (std::string why = transport_mismatch(hello, world.transport); !why.empty()) return why;
    const auto it = hello.find("model");
    const std::string why = model_mismatch(*identity, it == hello.end() ? nullptr : *it);
    return why.empty() ? "" : who + " loaded another model: " + why;
  };
  auto ranks = listener->accept_ranks(world.world_size, world.timeout, check);
  if (!ranks.ok()) return ranks.error();
  listener->refuse_late_joiners([](const std::string& refusal) {
    std::fprintf(stderr, "novaserve pipeline: refused a late process: %s\n", refusal.c_str());
  });
  // From here on a failure tells every rank that joined why (they exit 1 with it).
  std::vector<RemoteStage*> remotes;
  const auto give_up = [&](const Error& e) {
    for (RemoteStage* r : remotes) r->abandon(e.message);
    for (JoinedRank& j : *ranks) j.link.shutdown_peer(e.message);
    return e;
  };
  std::vector<nlohmann::json> hellos;
  for (const JoinedRank& j : *ranks) hellos.push_back(j.hello);
  auto choice = choose_rank_transport(world.transport, device, hellos);
  if (!choice.ok()) return give_up(choice.error());
  std::fprintf(stderr, "novaserve pipeline: %s (%s)\n",
               choice->nccl ? "NCCL transport: hidden states go from rank to rank, rank 0 sends "
                              "step plans"
                            : "TCP star transport: every hidden state goes through rank 0",
               choice->why.c_str());
  const std::vector<LayerRange> ranges = layer_ranges(*split);
  std::vector<std::unique_ptr<PipelineStage>> stages;
  auto local = make_local(ranges[0]);
  if (!local.ok()) return give_up(local.error());
  stages.push_back(std::move(local.value()));
  const RankTimeouts timeouts{world.timeout, world.step_timeout};
  for (size_t r = 1; r < ranges.size(); ++r) {
    // A moved-from link is only told to shut down by its RemoteStage.
    auto remote =
        RemoteStage::create(std::move((*ranks)[r - 1].link), ranges[r], model_config->n_embd,
                            model_config->n_vocab, r + 1 == ranges.size(), timeouts, listener);
    if (!remote.ok()) return give_up(remote.error());
    remotes.push_back(remote->get());
    stages.push_back(std::move(remote.value()));
  }
  std::unique_ptr<Transport> transport;
  if (choice->nccl) {
    auto nccl = start_nccl_world(*choice, remotes, *stages[0], world);
    if (!nccl.ok()) return give_up(nccl.error());
    transport = std::move(nccl.value());
  } else {
    std::vector<PipelineStage*> views;
    for (const auto& s : stages) views.push_back(s.get());
    transport = std::make_unique<StagedCopyTransport>(std::move(views), model_config->n_embd);
  }
  // Fails only on a broken invariant (the split covers the layers); its stages, destroyed then,
  // tell their ranks to shut down.
  return PipelineRunner::create(*model_config, std::move(stages), std::move(transport),
                                PipelineOptions{config.micro_batching, config.kv_bytes});
}

Status run_pipeline_rank(const GgufFile& file, const RankWorld& world, const std::string& device,
                         const StageFactory& make_stage, const std::function<void()>& on_joined) {
  auto config = ModelConfig::from_gguf(file);
  if (!config.ok()) return config.error();
  auto identity = model_identity(file);
  if (!identity.ok()) return identity.error();
  nlohmann::json hello = {{"op", "hello"},
                          {"rank", world.rank},
                          {"world_size", world.world_size},
                          {"device", device},
                          {"model", *identity}};
  add_transport_hello(hello, world.transport, device);
  auto link = connect_to_rank0(world.address, hello, world.timeout);
  if (!link.ok()) return link.error();
  link->set_send_timeout(world.step_timeout);
  std::fprintf(stderr, "novaserve pipeline: rank %d of %d joined rank 0 at %s:%u\n", world.rank,
               world.world_size, world.address.host.c_str(),
               static_cast<unsigned>(world.address.port));
  if (on_joined) on_joined();
  const StageServerOptions options{world.rank, world.world_size, world.timeout, world.step_timeout};
  const Status st = serve_stage(*link, *config, make_stage, options);
  if (st.ok()) std::fprintf(stderr, "novaserve pipeline: rank %d: rank 0 shut down\n", world.rank);
  return st;
}

}  // namespace novaserve
