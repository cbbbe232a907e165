#include "doctor/model_footprint.h"

#include "gguf/gguf_file.h"
#include "model/model_config.h"

namespace novaserve::doctor {

Result<ModelFootprint> model_footprint(const std::string& path) {
  auto file = GgufFile::open(path);
  if (!file.ok()) return file.error();
  auto config = ModelConfig::from_gguf(*file.value());
  if (!config.ok()) return Err(config.error().code, path + ": " + config.error().message);
  ModelFootprint f;
  f.path = path;
  for (const auto& t : file.value()->tensors()) f.weight_bytes += t.nbytes;
  const ModelConfig& c = config.value();
  f.kv_bytes_per_token = static_cast<uint64_t>(2 * c.n_layer * c.kv_dim() * 2);
  f.context = c.n_ctx_train;
  return f;
}

}  // namespace novaserve::doctor
