#include "runtime/pipeline/rank_pipeline.h"

#include <cstdio>
#include <numeric>

#include "runtime/pipeline/layer_split.h"
#include "runtime/pipeline/remote_stage.h"
#include "runtime/pipeline/staged_copy_transport.h"

namespace novaserve {
namespace {

// What identifies the model a rank loaded: its shape and the bytes of its tensors.
Result<nlohmann::json> model_identity(const GgufFile& file) {
  auto config = ModelConfig::from_gguf(file);
  if (!config.ok()) return config.error();
  auto w = weight_bytes(file, *config);
  if (!w.ok()) return w.error();
  const uint64_t bytes =
      std::accumulate(w->layer.begin(), w->layer.end(), w->embedding + w->head + w->other);
  return nlohmann::json{{"arch", config->arch_name},  {"n_layer", config->n_layer},
                        {"n_embd", config->n_embd},   {"n_ff", config->n_ff},
                        {"n_head", config->n_head},   {"n_head_kv", config->n_head_kv},
                        {"n_vocab", config->n_vocab}, {"tensor_bytes", bytes}};
}

}  // namespace

Result<std::unique_ptr<PipelineRunner>> create_rank0_pipeline(std::shared_ptr<const GgufFile> file,
                                                              PipelineConfig config,
                                                              const RankWorld& world,
                                                              const std::string& device,
                                                              const StageFactory& make_local) {
  auto model_config = ModelConfig::from_gguf(*file);
  if (!model_config.ok()) return model_config.error();
  auto identity = model_identity(*file);
  if (!identity.ok()) return identity.error();
  config.n_stages = world.world_size;
  auto split = choose_layer_split(*file, config);
  if (!split.ok()) return split.error();
  auto listener = RankListener::listen(world.address);
  if (!listener.ok()) return listener.error();
  std::fprintf(stderr, "novaserve pipeline: rank 0 waiting on port %u for ranks 1..%d\n",
               static_cast<unsigned>(listener->port()), world.world_size - 1);
  const auto check = [&](const nlohmann::json& hello) -> std::string {
    const std::string who = "rank " + std::to_string(header_int(hello, "rank").value_or(-1));
    if (header_string(hello, "device") != device) {
      return who + " runs --device " + header_string(hello, "device") + ", rank 0 " + device;
    }
    const auto it = hello.find("model");
    if (it == hello.end() || *it != *identity) {
      return who + " loaded another model (" + (it == hello.end() ? "none" : it->dump()) +
             "; rank 0 has " + identity->dump() + ")";
    }
    return "";
  };
  auto ranks = listener->accept_ranks(world.world_size, world.timeout, check);
  if (!ranks.ok()) return ranks.error();
  const std::vector<LayerRange> ranges = layer_ranges(*split);
  std::vector<std::unique_ptr<PipelineStage>> stages;
  auto local = make_local(ranges[0]);
  if (!local.ok()) return local.error();
  stages.push_back(std::move(local.value()));
  for (size_t r = 1; r < ranges.size(); ++r) {
    auto remote =
        RemoteStage::create(std::move((*ranks)[r - 1].link), ranges[r], model_config->n_embd,
                            model_config->n_vocab, r + 1 == ranges.size());
    if (!remote.ok()) return remote.error();
    stages.push_back(std::move(remote.value()));
  }
  std::vector<PipelineStage*> views;
  for (const auto& s : stages) views.push_back(s.get());
  return PipelineRunner::create(
      *model_config, std::move(stages),
      std::make_unique<StagedCopyTransport>(std::move(views), model_config->n_embd),
      PipelineOptions{config.micro_batching, config.kv_bytes});
}

Status run_pipeline_rank(const GgufFile& file, const RankWorld& world, const std::string& device,
                         const StageFactory& make_stage) {
  auto config = ModelConfig::from_gguf(file);
  if (!config.ok()) return config.error();
  auto identity = model_identity(file);
  if (!identity.ok()) return identity.error();
  const nlohmann::json hello = {{"op", "hello"},
                                {"rank", world.rank},
                                {"world_size", world.world_size},
                                {"device", device},
                                {"model", *identity}};
  auto link = connect_to_rank0(world.address, hello, world.timeout);
  if (!link.ok()) return link.error();
  std::fprintf(stderr, "novaserve pipeline: rank %d of %d joined rank 0 at %s:%u\n", world.rank,
               world.world_size, world.address.host.c_str(),
               static_cast<unsigned>(world.address.port));
  const Status st = serve_stage(*link, *config, make_stage);
  if (st.ok()) std::fprintf(stderr, "novaserve pipeline: rank %d: rank 0 shut down\n", world.rank);
  return st;
}

}  // namespace novaserve
