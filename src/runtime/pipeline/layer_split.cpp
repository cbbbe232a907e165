#include "runtime/pipeline/layer_split.h"

#include <algorithm>
#include <charconv>
#include <limits>
#include <string>

#include "gguf/block_layer.h"

namespace novaserve {

namespace {

Error bad(const std::string& message) {
  return Error{ErrorCode::kInvalidInput, message};
}

}  // namespace

Result<WeightBytes> weight_bytes(const GgufFile& file, const ModelConfig& config) {
  WeightBytes w;
  w.layer.assign(static_cast<size_t>(config.n_layer), 0);
  bool has_output = false;
  for (const GgufTensorInfo& t : file.tensors()) {
    if (t.name.starts_with("blk.")) {
      const int64_t l = block_layer(t.name);
      if (l < 0 || l >= config.n_layer) {
        return bad("tensor " + t.name + " names no layer in [0, " + std::to_string(config.n_layer) +
                   ")");
      }
      w.layer[static_cast<size_t>(l)] += t.nbytes;
    } else if (t.name == "token_embd.weight") {
      w.embedding += t.nbytes;
    } else if (t.name == "output.weight" || t.name == "output_norm.weight") {
      w.head += t.nbytes;
      has_output = has_output || t.name == "output.weight";
    } else {
      w.other += t.nbytes;
    }
  }
  if (!has_output) w.head += w.embedding;
  return w;
}

PipelineMemoryModel pipeline_memory_model(const WeightBytes& w, uint64_t kv_bytes,
                                          uint64_t workspace_bytes) {
  PipelineMemoryModel m;
  const uint64_t n = w.layer.size();
  m.layer_bytes = w.layer;
  for (uint64_t& b : m.layer_bytes) b += n == 0 ? 0 : kv_bytes / n;
  m.first_stage_bytes = w.embedding;
  m.last_stage_bytes = w.head;
  m.stage_bytes = workspace_bytes + w.other;
  return m;
}

uint64_t range_bytes(const PipelineMemoryModel& m, LayerRange r) {
  const auto n_layer = static_cast<int64_t>(m.layer_bytes.size());
  uint64_t b = m.stage_bytes;
  if (r.first == 0) b += m.first_stage_bytes;
  if (r.last == n_layer) b += m.last_stage_bytes;
  for (int64_t l = std::max<int64_t>(r.first, 0); l < std::min(r.last, n_layer); ++l) {
    b += m.layer_bytes[static_cast<size_t>(l)];
  }
  return b;
}

std::vector<uint64_t> stage_bytes(const PipelineMemoryModel& m,
                                  const std::vector<int64_t>& layers_per_stage) {
  std::vector<uint64_t> out;
  for (const LayerRange& r : layer_ranges(layers_per_stage)) out.push_back(range_bytes(m, r));
  return out;
}

Result<std::vector<int64_t>> auto_layer_split(const PipelineMemoryModel& m, int64_t n_stages) {
  const auto n_layer = static_cast<int64_t>(m.layer_bytes.size());
  if (n_stages < 1 || n_stages > n_layer) {
    return bad("--pipeline-parallel " + std::to_string(n_stages) + " needs between 1 and " +
               std::to_string(n_layer) + " stages (one layer at least per stage; the model has " +
               std::to_string(n_layer) + " layers)");
  }
  // prefix[i]: bytes of layers [0, i).
  std::vector<uint64_t> prefix(static_cast<size_t>(n_layer) + 1, 0);
  for (int64_t i = 0; i < n_layer; ++i) prefix[i + 1] = prefix[i] + m.layer_bytes[i];
  const auto cost = [&](int64_t s, int64_t begin, int64_t end) {
    uint64_t b = m.stage_bytes + prefix[end] - prefix[begin];
    if (s == 0) b += m.first_stage_bytes;
    if (s + 1 == n_stages) b += m.last_stage_bytes;
    return b;
  };
  constexpr uint64_t kInf = std::numeric_limits<uint64_t>::max();
  // best[s][i]: the smallest largest-stage bytes of stages 0..s over layers [0, i); cut[s][i]:
  // where stage s begins in that optimum.
  const auto rows = static_cast<size_t>(n_stages);
  const auto cols = static_cast<size_t>(n_layer) + 1;
  std::vector<uint64_t> best(rows * cols, kInf);
  std::vector<int64_t> cut(rows * cols, 0);
  for (int64_t i = 1; i <= n_layer; ++i) best[i] = cost(0, 0, i);
  for (int64_t s = 1; s < n_stages; ++s) {
    for (int64_t i = s + 1; i <= n_layer; ++i) {
      for (int64_t j = s; j < i; ++j) {
        const uint64_t prev = best[(s - 1) * cols + j];
        if (prev == kInf) continue;
        const uint64_t b = std::max(prev, cost(s, j, i));
        // `<` keeps the earliest cut among equals: earlier stages take fewer layers.
        if (b < best[s * cols + i]) {
          best[s * cols + i] = b;
          cut[s * cols + i] = j;
        }
      }
    }
  }
  std::vector<int64_t> counts(rows, 0);
  int64_t end = n_layer;
  for (int64_t s = n_stages - 1; s >= 0; --s) {
    const int64_t begin = s == 0 ? 0 : cut[s * cols + end];
    counts[s] = end - begin;
    end = begin;
  }
  return counts;
}

Result<std::vector<int64_t>> parse_layer_split(std::string_view text, int64_t n_stages,
                                               const PipelineMemoryModel& m) {
  const auto n_layer = static_cast<int64_t>(m.layer_bytes.size());
  if (text == "auto") return auto_layer_split(m, n_stages);
  if (n_stages < 1 || n_stages > n_layer) return auto_layer_split(m, n_stages).error();
  const std::string given(text);
  std::vector<int64_t> counts;
  int64_t sum = 0;
  while (true) {
    const size_t comma = text.find(',');
    const std::string_view item = text.substr(0, comma);
    int64_t n = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), n);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size()) {
      return bad("--layer-split must be auto or a comma-separated list of layer counts (got '" +
                 given + "')");
    }
    if (n < 1) return bad("--layer-split: every stage needs >= 1 layer (got '" + given + "')");
    counts.push_back(n);
    sum += std::min(n, n_layer + 1);  // no overflow: the sum check fails anyway
    if (comma == std::string_view::npos) break;
    text.remove_prefix(comma + 1);
  }
  if (static_cast<int64_t>(counts.size()) != n_stages) {
    return bad("--layer-split '" + given + "' lists " + std::to_string(counts.size()) +
               " stages; --pipeline-parallel is " + std::to_string(n_stages));
  }
  if (sum != n_layer) {
    return bad("--layer-split '" + given + "' does not sum to the model's " +
               std::to_string(n_layer) + " layers");
  }
  return counts;
}

bool stage_holds_tensor(std::string_view name, LayerRange range, int64_t n_layer, bool tied_head) {
  const bool first = range.first == 0, last = range.last == n_layer;
  if (name.starts_with("blk.")) {
    const int64_t l = block_layer(name);
    return l >= range.first && l < range.last;
  }
  if (name == "token_embd.weight") return first || (last && tied_head);
  if (name == "output.weight" || name == "output_norm.weight") return last;
  return true;
}

std::vector<LayerRange> layer_ranges(const std::vector<int64_t>& layers_per_stage) {
  std::vector<LayerRange> out;
  int64_t first = 0;
  for (int64_t n : layers_per_stage) {
    out.push_back(LayerRange{first, first + n});
    first += n;
  }
  return out;
}

}  // namespace novaserve
