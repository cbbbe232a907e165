// The safetensors weights of a Hugging Face checkpoint directory: one `model.safetensors`, or
// shards listed by `model.safetensors.index.json` ({"weight_map": {tensor: shard file}}).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "common/result.h"
#include "gguf/safetensors_file.h"

namespace novaserve {

/// A tensor and the (validated, mapped) file that holds it.
struct HfTensorRef {
  const SafetensorsFile* file = nullptr;
  const SafetensorsTensorInfo* info = nullptr;
};

/// Every tensor of a checkpoint's safetensors files, each file validated by SafetensorsFile.
class HfCheckpoint {
 public:
  /// Opens the weights in `dir`. With an index, every shard it names is opened once; each
  /// indexed tensor must be in its shard, and every tensor of a shard must be indexed to it.
  /// Errors: kNotFound when `dir` has neither model.safetensors nor the index (or a shard is
  /// missing); kInvalidInput for an invalid safetensors file or index (not JSON, no weight_map,
  /// a shard name that is not a plain file name, a tensor missing from its shard or present in
  /// two files), naming the file and tensor; kIo from mapping.
  static Result<std::unique_ptr<HfCheckpoint>> open(const std::string& dir);

  /// All tensors: shard by shard (in shard name order), in file order within a shard.
  const std::vector<HfTensorRef>& tensors() const { return tensors_; }
  /// nullptr when absent.
  const HfTensorRef* find(std::string_view name) const;
  size_t n_files() const { return files_.size(); }

 private:
  HfCheckpoint() = default;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::vector<HfTensorRef> tensors_;
  std::unordered_map<std::string, size_t> index_;
};

}  // namespace novaserve
