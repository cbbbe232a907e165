#include "convert/hf_checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <map>

#include "convert/hf_json.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;

constexpr const char* kSingle = "model.safetensors";
constexpr const char* kIndex = "model.safetensors.index.json";

// The index's weight_map, grouped by shard (sorted by shard name).
Result<std::map<std::string, std::vector<std::string>>> read_index(const std::string& path) {
  auto j = read_json_file(path);
  if (!j.ok()) return j.error();
  if (!j->is_object() || !j->contains("weight_map") || !(*j)["weight_map"].is_object()) {
    return Err(ErrorCode::kInvalidInput, path + ": no 'weight_map' object");
  }
  std::map<std::string, std::vector<std::string>> shards;
  for (const auto& [tensor, shard] : (*j)["weight_map"].items()) {
    if (!shard.is_string()) {
      return Err(ErrorCode::kInvalidInput,
                 path + ": weight_map entry of '" + tensor + "' is not a file name");
    }
    const std::string file = shard.get<std::string>();
    // Shards sit next to the index; a path here could read files outside the checkpoint.
    if (file.empty() || file == "." || file == ".." || file.find('/') != std::string::npos ||
        file.find('\\') != std::string::npos) {
      return Err(ErrorCode::kInvalidInput, path + ": weight_map entry of '" + tensor + "' ('" +
                                               file + "') is not a plain file name");
    }
    shards[file].push_back(tensor);
  }
  return shards;
}

}  // namespace

Result<std::unique_ptr<HfCheckpoint>> HfCheckpoint::open(const std::string& dir) {
  std::unique_ptr<HfCheckpoint> c(new HfCheckpoint());
  const fs::path root(dir);
  std::error_code ec;
  auto add_file = [&](const fs::path& path) -> Result<const SafetensorsFile*> {
    if (!fs::exists(path, ec)) {
      return Err(ErrorCode::kNotFound, path.string() + ": no such file");
    }
    auto f = SafetensorsFile::open(path.string());
    if (!f.ok()) return f.error();
    c->files_.push_back(std::move(f.value()));
    const SafetensorsFile* file = c->files_.back().get();
    for (const auto& t : file->tensors()) {
      if (!c->index_.emplace(t.name, c->tensors_.size()).second) {
        const HfTensorRef& other = c->tensors_[c->index_[t.name]];
        return Err(ErrorCode::kInvalidInput, "tensor '" + t.name + "' is in both " +
                                                 other.file->name() + " and " + file->name());
      }
      c->tensors_.push_back({file, &t});
    }
    return file;
  };

  const fs::path index = root / kIndex;
  if (fs::exists(index, ec)) {
    auto shards = read_index(index.string());
    if (!shards.ok()) return shards.error();
    // First every listed tensor must be where the index says, then every stored tensor must
    // be listed for its file, so a misplaced entry is reported as such.
    std::vector<const SafetensorsFile*> files;
    for (const auto& [shard, names] : *shards) {
      auto file = add_file(root / shard);
      if (!file.ok()) return file.error();
      files.push_back(*file);
      for (const auto& name : names) {
        if ((*file)->find(name) == nullptr) {
          return Err(ErrorCode::kInvalidInput, index.string() + " puts tensor '" + name + "' in " +
                                                   shard + ", which does not hold it");
        }
      }
    }
    size_t i = 0;
    for (const auto& [shard, names] : *shards) {
      for (const auto& t : files[i++]->tensors()) {
        if (std::find(names.begin(), names.end(), t.name) == names.end()) {
          return Err(ErrorCode::kInvalidInput, root.string() + "/" + shard + " holds tensor '" +
                                                   t.name + "', which " + index.string() +
                                                   " does not assign to it");
        }
      }
    }
    return c;
  }
  if (fs::exists(root / kSingle, ec)) {
    auto file = add_file(root / kSingle);
    if (!file.ok()) return file.error();
    return c;
  }
  return Err(ErrorCode::kNotFound, dir + ": no " + std::string(kSingle) + " or " + kIndex +
                                       " (only safetensors checkpoints are supported)");
}

const HfTensorRef* HfCheckpoint::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace novaserve
