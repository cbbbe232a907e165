#include "golden_data.h"

#include <bit>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <sstream>

namespace novaserve::golden {
namespace {

using nlohmann::json;

Result<std::string> read_file(const std::filesystem::path& path) {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) {
    return Err(ErrorCode::kNotFound, "golden data file missing: " + path.string());
  }
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return Err(ErrorCode::kIo, "cannot read " + path.string());
  return bytes;
}

Result<json> read_json(const std::filesystem::path& path) {
  auto bytes = read_file(path);
  if (!bytes.ok()) return bytes.error();
  json doc = json::parse(*bytes, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return Err(ErrorCode::kInvalidInput, path.string() + ": not a JSON object");
  }
  return doc;
}

// Names become file names, so anything but a plain stem (no separators, no "..") is refused.
bool is_plain_stem(const std::string& name) {
  if (name.empty()) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == '-';
    if (!ok) return false;
  }
  return true;
}

// Reads n little-endian float32 values; the byte order is fixed by the format, not the host.
Result<std::vector<float>> read_f32_le(const std::filesystem::path& path, size_t n) {
  auto bytes = read_file(path);
  if (!bytes.ok()) return bytes.error();
  if (bytes->size() != n * 4) {
    std::ostringstream msg;
    msg << path.string() << ": " << bytes->size() << " bytes, expected " << n * 4 << " (" << n
        << " float32)";
    return Err(ErrorCode::kInvalidInput, msg.str());
  }
  std::vector<float> values(n);
  const auto* p = reinterpret_cast<const unsigned char*>(bytes->data());
  for (size_t i = 0; i < n; ++i) {
    const uint32_t bits = uint32_t{p[4 * i]} | (uint32_t{p[4 * i + 1]} << 8) |
                          (uint32_t{p[4 * i + 2]} << 16) | (uint32_t{p[4 * i + 3]} << 24);
    values[i] = std::bit_cast<float>(bits);
  }
  return values;
}

Status check_ids(const std::string& where, const std::vector<int32_t>& ids, int32_t n_vocab) {
  for (int32_t id : ids) {
    if (id < 0 || id >= n_vocab) {
      return Err(ErrorCode::kInvalidInput,
                 where + ": token id " + std::to_string(id) + " outside [0, n_vocab)");
    }
  }
  return {};
}

Status check_shapes(const std::string& file, const GoldenPrompt& p, int32_t n_vocab) {
  auto bad = [&](const std::string& what) {
    return Err(ErrorCode::kInvalidInput, file + ": " + what);
  };
  if (p.prompt_ids.empty()) return bad("prompt_ids is empty");
  if (p.position_topk.size() != p.prompt_ids.size()) {
    return bad("position_topk needs one row per prompt id");
  }
  if (p.top2_gap.size() != p.greedy_ids.size() || p.greedy_topk.size() != p.greedy_ids.size()) {
    return bad("greedy_ids, top2_gap and greedy_topk differ in length");
  }
  NOVASERVE_RETURN_IF_ERROR(check_ids(file + " prompt_ids", p.prompt_ids, n_vocab));
  NOVASERVE_RETURN_IF_ERROR(check_ids(file + " greedy_ids", p.greedy_ids, n_vocab));
  for (const auto* rows : {&p.position_topk, &p.greedy_topk}) {
    for (const auto& row : *rows) {
      for (const TopKEntry& e : row) {
        if (e.id < 0 || e.id >= n_vocab) return bad("top-k id outside [0, n_vocab)");
      }
    }
  }
  return {};
}

}  // namespace

Result<std::vector<std::vector<TopKEntry>>> parse_topk_rows(const json& rows,
                                                            const std::string& key) {
  auto bad =
      Err(ErrorCode::kInvalidInput, key + " is not a list of non-empty rows of [id, logit] pairs");
  if (!rows.is_array()) return bad;
  std::vector<std::vector<TopKEntry>> out;
  for (const json& row : rows) {
    if (!row.is_array() || row.empty()) return bad;
    std::vector<TopKEntry> entries;
    for (const json& pair : row) {
      if (!pair.is_array() || pair.size() != 2) return bad;
      entries.push_back({pair[0].get<int32_t>(), pair[1].get<float>()});
    }
    out.push_back(std::move(entries));
  }
  return out;
}

Result<GoldenManifest> load_golden_manifest(const std::string& dir) {
  const auto path = std::filesystem::path(dir) / "manifest.json";
  auto doc = read_json(path);
  if (!doc.ok()) return doc.error();
  GoldenManifest m;
  try {
    const json& j = *doc;
    m.format_version = j.at("format_version").get<int>();
    m.model_file = j.at("model_file").get<std::string>();
    m.model_sha256 = j.at("model_sha256").get<std::string>();
    m.vocab_size = j.at("vocab_size").get<int32_t>();
    m.n_layers = j.at("n_layers").get<int32_t>();
    m.n_embd = j.at("n_embd").get<int32_t>();
    m.n_ff = j.at("n_ff").get<int32_t>();
    m.n_head = j.at("n_head").get<int32_t>();
    m.n_head_kv = j.at("n_head_kv").get<int32_t>();
    m.rope_theta = j.at("rope_theta").get<double>();
    m.rms_norm_eps = j.at("rms_norm_eps").get<double>();
    m.tied_embeddings = j.at("tied_embeddings").get<bool>();
    m.add_bos = j.at("add_bos").get<bool>();
    m.n_greedy = j.at("n_greedy").get<int32_t>();
    m.position_topk = j.at("position_topk").get<int32_t>();
    m.greedy_topk = j.at("greedy_topk").get<int32_t>();
    m.prompts = j.at("prompts").get<std::vector<std::string>>();
  } catch (const json::exception& e) {
    return Err(ErrorCode::kInvalidInput, path.string() + ": " + e.what());
  }
  if (m.format_version != kGoldenFormatVersion) {
    return Err(ErrorCode::kInvalidInput,
               path.string() + ": format_version " + std::to_string(m.format_version) +
                   ", this loader reads " + std::to_string(kGoldenFormatVersion));
  }
  for (const std::string& name : m.prompts) {
    if (!is_plain_stem(name)) {
      return Err(ErrorCode::kInvalidInput, path.string() + ": bad prompt name '" + name + "'");
    }
  }
  return m;
}

Result<GoldenPrompt> load_golden_prompt(const std::string& dir, const std::string& name) {
  if (!is_plain_stem(name)) {
    return Err(ErrorCode::kInvalidInput, "bad golden prompt name '" + name + "'");
  }
  const auto path = std::filesystem::path(dir) / (name + ".json");
  auto doc = read_json(path);
  if (!doc.ok()) return doc.error();
  GoldenPrompt p;
  int32_t n_vocab = 0;
  std::string logits_file;
  try {
    const json& j = *doc;
    const int version = j.at("format_version").get<int>();
    if (version != kGoldenFormatVersion) {
      return Err(ErrorCode::kInvalidInput,
                 path.string() + ": format_version " + std::to_string(version));
    }
    p.name = j.at("name").get<std::string>();
    p.text = j.at("text").get<std::string>();
    p.add_bos = j.at("add_bos").get<bool>();
    p.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
    p.greedy_ids = j.at("greedy_ids").get<std::vector<int32_t>>();
    p.top2_gap = j.at("top2_gap").get<std::vector<float>>();
    auto position_topk = parse_topk_rows(j.at("position_topk"), "position_topk");
    auto greedy_topk = parse_topk_rows(j.at("greedy_topk"), "greedy_topk");
    for (const auto* rows : {&position_topk, &greedy_topk}) {
      if (!rows->ok()) {
        return Err(ErrorCode::kInvalidInput, path.string() + ": " + rows->error().message);
      }
    }
    p.position_topk = std::move(*position_topk);
    p.greedy_topk = std::move(*greedy_topk);
    n_vocab = j.at("n_vocab").get<int32_t>();
    logits_file = j.at("last_logits_file").get<std::string>();
  } catch (const json::exception& e) {
    return Err(ErrorCode::kInvalidInput, path.string() + ": " + e.what());
  }
  if (p.name != name) {
    return Err(ErrorCode::kInvalidInput, path.string() + ": name field is '" + p.name + "'");
  }
  if (n_vocab <= 0) return Err(ErrorCode::kInvalidInput, path.string() + ": n_vocab <= 0");
  // The logits file must sit beside the JSON; a path component would escape `dir`.
  if (logits_file.empty() || logits_file.find('/') != std::string::npos ||
      logits_file.find("..") != std::string::npos) {
    return Err(ErrorCode::kInvalidInput, path.string() + ": bad last_logits_file");
  }
  NOVASERVE_RETURN_IF_ERROR(check_shapes(path.string(), p, n_vocab));
  auto logits = read_f32_le(std::filesystem::path(dir) / logits_file, static_cast<size_t>(n_vocab));
  if (!logits.ok()) return logits.error();
  p.last_logits = std::move(*logits);
  return p;
}

Result<std::vector<GoldenPrompt>> load_golden(const std::string& dir) {
  auto manifest = load_golden_manifest(dir);
  if (!manifest.ok()) return manifest.error();
  std::vector<GoldenPrompt> prompts;
  for (const std::string& name : manifest->prompts) {
    auto prompt = load_golden_prompt(dir, name);
    if (!prompt.ok()) return prompt.error();
    prompts.push_back(std::move(*prompt));
  }
  return prompts;
}

}  // namespace novaserve::golden
