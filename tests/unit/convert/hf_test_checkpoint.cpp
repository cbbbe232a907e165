#include "hf_test_checkpoint.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <unordered_map>

#include "../gguf/safetensors_test_writer.h"
#include "quant/dequantize.h"

namespace novaserve::testing {
namespace {

using Json = nlohmann::json;

constexpr int64_t kControl = 3, kUserDefined = 4, kUnused = 5, kUnknown = 2;

std::vector<std::string> strings(const GgufFile& g, const char* key) {
  std::vector<std::string> out;
  auto a = g.get_array(key);
  if (!a.ok()) return out;
  for (const auto& v : (*a)->items) out.push_back(v.as_string());
  return out;
}

std::vector<int64_t> ints(const GgufFile& g, const char* key) {
  std::vector<int64_t> out;
  auto a = g.get_array(key);
  if (!a.ok()) return out;
  for (const auto& v : (*a)->items) out.push_back(v.as_int());
  return out;
}

std::vector<double> floats(const GgufFile& g, const char* key) {
  std::vector<double> out;
  auto a = g.get_array(key);
  if (!a.ok()) return out;
  for (const auto& v : (*a)->items) out.push_back(v.as_double());
  return out;
}

int64_t get_int(const GgufFile& g, const std::string& key) {
  auto v = g.get_int(key);
  EXPECT_TRUE(v.ok()) << key;
  return v.ok() ? *v : 0;
}

Json added_token(int64_t id, const std::string& content, bool special) {
  return {{"id", id},        {"content", content},     {"single_word", false}, {"lstrip", false},
          {"rstrip", false}, {"normalized", !special}, {"special", special}};
}

// A GGUF tensor dequantized to f32, row-major [dims[1]][dims[0]].
std::vector<float> dequantized(const GgufFile& g, const std::string& name) {
  const GgufTensorInfo* t = g.find_tensor(name);
  EXPECT_NE(t, nullptr) << name;
  if (t == nullptr) return {};
  std::vector<float> v(t->n_elements());
  EXPECT_TRUE(dequantize_row(t->type, g.tensor_data(*t), v.data(), v.size()).ok()) << name;
  return v;
}

// GGUF llama files pair rows (2i, 2i+1) of each head for RoPE, HF rows (i, i + head_dim/2):
// HF row h*hd + s*hd/2 + i holds GGUF row h*hd + 2i + s (s in {0, 1}).
std::vector<float> to_hf_rope_order(const std::vector<float>& gguf, int64_t rows, int64_t cols,
                                    int64_t hd) {
  std::vector<float> hf(gguf.size());
  for (int64_t h = 0; h < rows / hd; ++h) {
    for (int64_t s = 0; s < 2; ++s) {
      for (int64_t i = 0; i < hd / 2; ++i) {
        const int64_t hf_row = h * hd + s * (hd / 2) + i;
        const int64_t gguf_row = h * hd + 2 * i + s;
        std::copy_n(gguf.begin() + gguf_row * cols, cols, hf.begin() + hf_row * cols);
      }
    }
  }
  return hf;
}

}  // namespace

Json smollm_pre_tokenizer() {
  return {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Digits"}, {"individual_digits", true}},
            {{"type", "ByteLevel"},
             {"add_prefix_space", false},
             {"trim_offsets", true},
             {"use_regex", true}}}}};
}

Json hf_bpe_tokenizer_json(const GgufFile& g, const Json& pre_tokenizer, bool ignore_merges,
                           bool added_in_vocab) {
  const auto tokens = strings(g, "tokenizer.ggml.tokens");
  auto types = ints(g, "tokenizer.ggml.token_type");
  types.resize(tokens.size(), 1);
  Json vocab = Json::object(), added = Json::array();
  for (size_t i = 0; i < tokens.size(); ++i) {
    const bool is_added = types[i] == kControl || types[i] == kUserDefined;
    if (types[i] == kUnused && tokens[i].starts_with("[PAD")) continue;  // embedding padding
    if (is_added)
      added.push_back(added_token(static_cast<int64_t>(i), tokens[i], types[i] == kControl));
    if (!is_added || added_in_vocab) vocab[tokens[i]] = i;
  }
  Json model = {{"type", "BPE"},
                {"dropout", nullptr},
                {"unk_token", nullptr},
                {"continuing_subword_prefix", nullptr},
                {"end_of_word_suffix", nullptr},
                {"fuse_unk", false},
                {"byte_fallback", false},
                {"ignore_merges", ignore_merges},
                {"vocab", vocab},
                {"merges", strings(g, "tokenizer.ggml.merges")}};
  return {{"version", "1.0"},
          {"truncation", nullptr},
          {"padding", nullptr},
          {"added_tokens", added},
          {"normalizer", nullptr},
          {"pre_tokenizer", pre_tokenizer},
          {"post_processor", nullptr},
          {"decoder", {{"type", "ByteLevel"}}},
          {"model", model}};
}

Json hf_spm_tokenizer_json(const GgufFile& g) {
  const auto tokens = strings(g, "tokenizer.ggml.tokens");
  const auto scores = floats(g, "tokenizer.ggml.scores");
  auto types = ints(g, "tokenizer.ggml.token_type");
  types.resize(tokens.size(), 1);
  std::unordered_map<std::string, int64_t> ids;
  for (size_t i = 0; i < tokens.size(); ++i) ids.emplace(tokens[i], static_cast<int64_t>(i));
  // HF's SentencePiece extractor: every split of a piece into two pieces is a merge; merges are
  // ordered by the joined piece's score (highest first), splits of one piece by their ids.
  struct Merge {
    std::string left, right;
    double score;
  };
  std::vector<Merge> merges;
  for (size_t i = 0; i < tokens.size(); ++i) {
    const std::string& piece = tokens[i];
    std::vector<Merge> local;
    for (size_t cut = 1; cut < piece.size(); ++cut) {
      if ((static_cast<unsigned char>(piece[cut]) & 0xC0) == 0x80) continue;  // inside a char
      const std::string l = piece.substr(0, cut), r = piece.substr(cut);
      if (ids.count(l) && ids.count(r)) local.push_back({l, r, scores[i]});
    }
    std::sort(local.begin(), local.end(), [&](const Merge& a, const Merge& b) {
      return std::pair(ids[a.left], ids[a.right]) < std::pair(ids[b.left], ids[b.right]);
    });
    merges.insert(merges.end(), local.begin(), local.end());
  }
  std::stable_sort(merges.begin(), merges.end(),
                   [](const Merge& a, const Merge& b) { return a.score > b.score; });
  Json merge_list = Json::array(), vocab = Json::object(), added = Json::array();
  for (const Merge& m : merges) merge_list.push_back(m.left + " " + m.right);
  for (size_t i = 0; i < tokens.size(); ++i) {
    vocab[tokens[i]] = i;
    if (types[i] == kControl || types[i] == kUnknown) {
      added.push_back(added_token(static_cast<int64_t>(i), tokens[i], true));
    }
  }
  const std::string space = "\xE2\x96\x81";
  Json normalizer = {{"type", "Sequence"},
                     {"normalizers",
                      {{{"type", "Prepend"}, {"prepend", space}},
                       {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", space}}}}};
  Json post = {{"type", "TemplateProcessing"},
               {"single",
                {{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                 {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}}}};
  Json model = {{"type", "BPE"},    {"dropout", nullptr},    {"unk_token", "<unk>"},
                {"fuse_unk", true}, {"byte_fallback", true}, {"ignore_merges", false},
                {"vocab", vocab},   {"merges", merge_list}};
  return {{"version", "1.0"},         {"added_tokens", added},  {"normalizer", normalizer},
          {"pre_tokenizer", nullptr}, {"post_processor", post}, {"model", model}};
}

Json hf_tokenizer_config_json(const GgufFile& g) {
  const auto tokens = strings(g, "tokenizer.ggml.tokens");
  Json c = Json::object();
  for (auto [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token"},
                            std::pair{"tokenizer.ggml.eos_token_id", "eos_token"},
                            std::pair{"tokenizer.ggml.unknown_token_id", "unk_token"},
                            std::pair{"tokenizer.ggml.padding_token_id", "pad_token"}}) {
    auto id = g.get_int(key);
    if (id.ok()) c[field] = tokens.at(static_cast<size_t>(*id));
  }
  for (auto [key, field] : {std::pair{"tokenizer.ggml.add_bos_token", "add_bos_token"},
                            std::pair{"tokenizer.ggml.add_eos_token", "add_eos_token"}}) {
    auto v = g.get_bool(key);
    if (v.ok()) c[field] = *v;
  }
  auto t = g.get_string("tokenizer.chat_template");
  if (t.ok()) c["chat_template"] = *t;
  return c;
}

Json hf_config_json(const GgufFile& g, int64_t n_layer) {
  const int64_t n_embd = get_int(g, "llama.embedding_length");
  const int64_t n_head = get_int(g, "llama.attention.head_count");
  Json c = {{"architectures", {"LlamaForCausalLM"}},
            {"model_type", "llama"},
            {"hidden_act", "silu"},
            {"hidden_size", n_embd},
            {"intermediate_size", get_int(g, "llama.feed_forward_length")},
            {"num_hidden_layers", n_layer},
            {"num_attention_heads", n_head},
            {"num_key_value_heads", get_int(g, "llama.attention.head_count_kv")},
            {"head_dim", n_embd / n_head},
            {"max_position_embeddings", get_int(g, "llama.context_length")},
            {"rms_norm_eps", g.get_float("llama.attention.layer_norm_rms_epsilon").value()},
            {"rope_theta", g.get_float("llama.rope.freq_base").value()},
            {"rope_scaling", nullptr},
            {"attention_bias", false},
            {"mlp_bias", false},
            {"tie_word_embeddings", g.find_tensor("output.weight") == nullptr},
            {"vocab_size", g.find_tensor("token_embd.weight")->dims[1]},
            {"torch_dtype", "float32"}};
  for (auto [key, field] : {std::pair{"tokenizer.ggml.bos_token_id", "bos_token_id"},
                            std::pair{"tokenizer.ggml.eos_token_id", "eos_token_id"}}) {
    auto id = g.get_int(key);
    if (id.ok()) c[field] = *id;
  }
  return c;
}

bool write_hf_checkpoint(const GgufFile& g, const std::string& dir, int64_t n_layer, int n_shards) {
  namespace fs = std::filesystem;
  fs::create_directories(dir);
  const Json config = hf_config_json(g, n_layer);
  const int64_t hd = config["head_dim"].get<int64_t>();
  std::vector<StTensor> tensors;
  auto add = [&](const std::string& hf, const std::string& gguf, bool rope_rows) {
    const GgufTensorInfo* t = g.find_tensor(gguf);
    std::vector<float> v = dequantized(g, gguf);
    std::vector<uint64_t> shape(t->dims.rbegin(), t->dims.rend());  // PyTorch order
    if (rope_rows) {
      v = to_hf_rope_order(v, static_cast<int64_t>(shape[0]), static_cast<int64_t>(shape[1]), hd);
    }
    tensors.push_back(st_f32(hf, shape, v));
  };
  add("model.embed_tokens.weight", "token_embd.weight", false);
  for (int64_t il = 0; il < n_layer; ++il) {
    const std::string hf = "model.layers." + std::to_string(il) + ".";
    const std::string gg = "blk." + std::to_string(il) + ".";
    add(hf + "input_layernorm.weight", gg + "attn_norm.weight", false);
    add(hf + "self_attn.q_proj.weight", gg + "attn_q.weight", true);
    add(hf + "self_attn.k_proj.weight", gg + "attn_k.weight", true);
    add(hf + "self_attn.v_proj.weight", gg + "attn_v.weight", false);
    add(hf + "self_attn.o_proj.weight", gg + "attn_output.weight", false);
    add(hf + "post_attention_layernorm.weight", gg + "ffn_norm.weight", false);
    add(hf + "mlp.gate_proj.weight", gg + "ffn_gate.weight", false);
    add(hf + "mlp.up_proj.weight", gg + "ffn_up.weight", false);
    add(hf + "mlp.down_proj.weight", gg + "ffn_down.weight", false);
  }
  add("model.norm.weight", "output_norm.weight", false);
  if (g.find_tensor("output.weight") != nullptr) add("lm_head.weight", "output.weight", false);

  bool ok = true;
  if (n_shards <= 1) {
    ok &= write_bytes(dir + "/model.safetensors", make_safetensors(tensors, {{"format", "pt"}}));
  } else {
    Json weight_map = Json::object();
    uint64_t total = 0;
    const size_t n = tensors.size();
    for (int s = 0; s < n_shards; ++s) {
      char file[64];
      std::snprintf(file, sizeof(file), "model-%05d-of-%05d.safetensors", s + 1, n_shards);
      std::vector<StTensor> shard(tensors.begin() + n * s / n_shards,
                                  tensors.begin() + n * (s + 1) / n_shards);
      for (const auto& t : shard) {
        weight_map[t.name] = file;
        total += t.data.size();
      }
      ok &= write_bytes(dir + "/" + file, make_safetensors(shard, {{"format", "pt"}}));
    }
    const Json index = {{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}};
    ok &= write_bytes(dir + "/model.safetensors.index.json", index.dump(2));
  }
  ok &= write_bytes(dir + "/config.json", config.dump(2));
  ok &= write_bytes(dir + "/tokenizer.json",
                    hf_bpe_tokenizer_json(g, smollm_pre_tokenizer(), false, true).dump());
  ok &= write_bytes(dir + "/tokenizer_config.json", hf_tokenizer_config_json(g).dump(2));
  EXPECT_TRUE(ok) << "writing the checkpoint to " << dir;
  return ok;
}

}  // namespace novaserve::testing
