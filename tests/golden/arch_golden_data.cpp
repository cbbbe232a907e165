#include "arch_golden_data.h"

#include <filesystem>
#include <nlohmann/json.hpp>

#include "convert/hf_json.h"

namespace novaserve::golden {
namespace {

using nlohmann::json;

Result<ArchGoldenPrompt> parse_prompt(const json& j) {
  ArchGoldenPrompt p;
  p.name = j.at("name").get<std::string>();
  p.text = j.at("text").get<std::string>();
  p.add_bos = j.at("add_bos").get<bool>();
  p.prompt_ids = j.at("prompt_ids").get<std::vector<int32_t>>();
  p.last_logits = j.at("last_logits").get<std::vector<float>>();
  p.greedy_ids = j.at("greedy_ids").get<std::vector<int32_t>>();
  p.top2_gap = j.at("top2_gap").get<std::vector<float>>();
  auto position = parse_topk_rows(j.at("position_topk"), "position_topk");
  if (!position.ok()) return position.error();
  p.position_topk = std::move(position.value());
  auto greedy = parse_topk_rows(j.at("greedy_topk"), "greedy_topk");
  if (!greedy.ok()) return greedy.error();
  p.greedy_topk = std::move(greedy.value());
  return p;
}

Status check_prompt(const ArchGolden& g, const ArchGoldenPrompt& p) {
  auto bad = [&](const std::string& what) {
    return Err(ErrorCode::kInvalidInput, "prompt '" + p.name + "': " + what);
  };
  auto in_vocab = [&](int32_t id) { return id >= 0 && id < g.n_vocab; };
  if (p.prompt_ids.empty()) return bad("prompt_ids is empty");
  if (p.last_logits.size() != static_cast<size_t>(g.n_vocab)) {
    return bad("last_logits has " + std::to_string(p.last_logits.size()) + " values, n_vocab is " +
               std::to_string(g.n_vocab));
  }
  if (p.position_topk.size() != p.prompt_ids.size()) {
    return bad("position_topk needs one row per prompt id");
  }
  const auto n = static_cast<size_t>(g.n_greedy);
  if (p.greedy_ids.size() != n || p.top2_gap.size() != n || p.greedy_topk.size() != n) {
    return bad("greedy_ids, top2_gap and greedy_topk need n_greedy entries");
  }
  for (const auto* ids : {&p.prompt_ids, &p.greedy_ids}) {
    for (int32_t id : *ids) {
      if (!in_vocab(id)) return bad("token id " + std::to_string(id) + " outside [0, n_vocab)");
    }
  }
  for (const auto* rows : {&p.position_topk, &p.greedy_topk}) {
    for (const auto& row : *rows) {
      for (const TopKEntry& e : row) {
        if (!in_vocab(e.id)) return bad("top-k id outside [0, n_vocab)");
      }
    }
  }
  return {};
}

}  // namespace

Result<ArchGolden> load_arch_golden(const std::string& dir) {
  const std::string path = (std::filesystem::path(dir) / "golden.json").string();
  auto doc = read_json_file(path);
  if (!doc.ok()) return doc.error();
  ArchGolden g;
  try {
    const json& j = *doc;
    const int version = j.at("format_version").get<int>();
    if (version != kArchGoldenFormatVersion) {
      return Err(ErrorCode::kInvalidInput, path + ": format_version " + std::to_string(version) +
                                               ", this loader reads " +
                                               std::to_string(kArchGoldenFormatVersion));
    }
    g.arch = j.at("arch").get<std::string>();
    g.hf_arch = j.at("hf_arch").get<std::string>();
    g.n_vocab = j.at("n_vocab").get<int32_t>();
    g.n_greedy = j.at("n_greedy").get<int32_t>();
    for (const json& t : j.at("tensors").get_ref<const json::array_t&>()) {
      ArchTensorSpec s;
      s.name = t.at("name").get<std::string>();
      s.shape = t.at("shape").get<std::vector<uint64_t>>();
      s.fnv1a64 = std::stoull(t.at("fnv1a64").get<std::string>(), nullptr, 16);
      g.tensors.push_back(std::move(s));
    }
    for (const json& p : j.at("prompts").get_ref<const json::array_t&>()) {
      auto prompt = parse_prompt(p);
      if (!prompt.ok()) return Err(ErrorCode::kInvalidInput, path + ": " + prompt.error().message);
      g.prompts.push_back(std::move(prompt.value()));
    }
  } catch (const json::exception& e) {
    return Err(ErrorCode::kInvalidInput, path + ": " + e.what());
  } catch (const std::logic_error& e) {  // std::stoull on a malformed hash
    return Err(ErrorCode::kInvalidInput, path + ": bad fnv1a64 value: " + e.what());
  }
  if (g.n_vocab <= 0 || g.n_greedy <= 0 || g.prompts.empty() || g.tensors.empty()) {
    return Err(ErrorCode::kInvalidInput, path + ": n_vocab, n_greedy, tensors or prompts empty");
  }
  for (const ArchTensorSpec& t : g.tensors) {
    bool ok = !t.shape.empty() && t.shape.size() <= 2;
    for (uint64_t d : t.shape) ok = ok && d > 0;
    if (!ok)
      return Err(ErrorCode::kInvalidInput, path + ": tensor '" + t.name + "' has a bad shape");
  }
  for (const ArchGoldenPrompt& p : g.prompts) {
    const Status s = check_prompt(g, p);
    if (!s.ok()) return Err(s.error().code, path + ": " + s.error().message);
  }
  return g;
}

}  // namespace novaserve::golden
