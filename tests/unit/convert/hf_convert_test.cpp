// convert_hf_to_gguf on tiny synthetic checkpoints: what lands in the GGUF (names, order,
// permutation, biases, rope_freqs, types) and every input error, which must leave no output.
#include "convert/hf_convert.h"

#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <tuple>

#include "../gguf/safetensors_test_writer.h"
#include "backend/cpu/cpu_backend.h"
#include "convert/hf_config.h"
#include "convert/hf_rope_config.h"
#include "convert/hf_tensor_convert.h"
#include "gguf/gguf_file.h"
#include "hf_test_util.h"
#include "model/llama_model.h"
#include "quant/half.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;
using testing::st_by_name;
using testing::StTensor;
using testing::write_bytes;

// Rows of 32 (the CPU matmul's activation block) so that the converted model loads.
constexpr int64_t kEmbd = 32, kHeads = 2, kKvHeads = 1, kHd = 16, kFf = 64, kVocab = 8;

Json tiny_config(const char* arch) {
  return {{"architectures", {arch}},       {"hidden_size", kEmbd},
          {"intermediate_size", kFf},      {"num_hidden_layers", 1},
          {"num_attention_heads", kHeads}, {"num_key_value_heads", kKvHeads},
          {"vocab_size", kVocab},          {"max_position_embeddings", 64},
          {"rms_norm_eps", 1e-5},          {"tie_word_embeddings", false}};
}

Json tiny_tokenizer() {
  return {{"added_tokens", {{{"id", 4}, {"content", "<s>"}, {"special", true}}}},
          {"pre_tokenizer", {{"type", "ByteLevel"}, {"add_prefix_space", false}}},
          {"model",
           {{"type", "BPE"},
            {"vocab", {{"a", 0}, {"b", 1}, {"ab", 2}, {"c", 3}}},
            {"merges", {"a b"}}}}};
}

// HF tensors of the tiny model: name -> (shape, values); BF16 when `bf16`.
std::vector<StTensor> tiny_tensors(bool qwen2, bool bf16, uint32_t seed = 1) {
  testing::RandomValues values(seed);
  std::vector<StTensor> out;
  auto add = [&](const std::string& name, std::vector<uint64_t> shape, float base = 0.0f) {
    const std::vector<float> v = values(shape, base);
    StTensor t = testing::st_f32(name, shape, v);
    if (bf16) {
      t.dtype = "BF16";
      t.data.resize(v.size() * 2);
      for (size_t i = 0; i < v.size(); ++i) {
        const uint16_t h = f32_to_bf16(v[i]);
        std::memcpy(t.data.data() + 2 * i, &h, 2);
      }
    }
    out.push_back(std::move(t));
  };
  const uint64_t q = kHeads * kHd, kv = kKvHeads * kHd;
  add("model.embed_tokens.weight", {kVocab, kEmbd});
  const std::string p = "model.layers.0.";
  add(p + "input_layernorm.weight", {kEmbd}, 1.0f);
  add(p + "self_attn.q_proj.weight", {q, kEmbd});
  add(p + "self_attn.k_proj.weight", {kv, kEmbd});
  add(p + "self_attn.v_proj.weight", {kv, kEmbd});
  if (qwen2) {
    add(p + "self_attn.q_proj.bias", {q});
    add(p + "self_attn.k_proj.bias", {kv});
    add(p + "self_attn.v_proj.bias", {kv});
  }
  add(p + "self_attn.o_proj.weight", {kEmbd, q});
  add(p + "post_attention_layernorm.weight", {kEmbd}, 1.0f);
  add(p + "mlp.gate_proj.weight", {kFf, kEmbd});
  add(p + "mlp.up_proj.weight", {kFf, kEmbd});
  add(p + "mlp.down_proj.weight", {kEmbd, kFf});
  add("model.norm.weight", {kEmbd}, 1.0f);
  add("lm_head.weight", {kVocab, kEmbd});
  add(p + "self_attn.rotary_emb.inv_freq", {kHd / 2});  // dropped by the converter
  return out;
}

class HfConvertTest : public testing::HfCheckpointDirTest {
 protected:
  HfConvertTest() : HfCheckpointDirTest("novaserve_hfconvert_") {}

  void write_checkpoint(const Json& config, const std::vector<StTensor>& tensors) {
    ASSERT_TRUE(write_bytes((dir_ / "config.json").string(), config.dump()));
    ASSERT_TRUE(write_bytes((dir_ / "tokenizer.json").string(), tiny_tokenizer().dump()));
    ASSERT_TRUE(write_bytes((dir_ / "tokenizer_config.json").string(),
                            Json{{"bos_token", "<s>"}, {"chat_template", "{{ m }}"}}.dump()));
    ASSERT_TRUE(
        write_bytes((dir_ / "model.safetensors").string(), testing::make_safetensors(tensors)));
  }

  Result<HfConvertResult> convert(GgmlType type = GgmlType::kF32) {
    HfConvertOptions o;
    o.matrix_type = type;
    return convert_hf_to_gguf(dir_.string(), out_, o);
  }

  // Converts, expects failure with `code` and `needle`, and that no output was left behind.
  void expect_failure(ErrorCode code, const std::string& needle, GgmlType type = GgmlType::kF32) {
    expect_failed(convert(type), code, needle);
  }
};

TEST_F(HfConvertTest, Qwen2KeepsRowOrderAndWritesBiasesAndHead) {
  const auto tensors = tiny_tensors(/*qwen2=*/true, /*bf16=*/false);
  write_checkpoint(tiny_config("Qwen2ForCausalLM"), tensors);
  auto r = convert(GgmlType::kF32);
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ(r->arch, "qwen2");
  EXPECT_EQ(r->n_tensors, 2u + 12u + 1u);  // embd, norm, 12 per block, head
  auto f = GgufFile::open(out_);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->get_string("general.name").value(), "hf");
  EXPECT_EQ((*f)->tensors().front().name, "token_embd.weight");
  EXPECT_EQ((*f)->tensors().back().name, "output.weight");
  for (auto [hf, gguf] :
       {std::pair{"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight"},
        std::pair{"model.layers.0.self_attn.k_proj.bias", "blk.0.attn_k.bias"},
        std::pair{"model.layers.0.mlp.down_proj.weight", "blk.0.ffn_down.weight"},
        std::pair{"lm_head.weight", "output.weight"}}) {
    const GgufTensorInfo* t = (*f)->find_tensor(gguf);
    ASSERT_NE(t, nullptr) << gguf;
    const StTensor& src = st_by_name(tensors, hf);
    EXPECT_EQ(t->type, GgmlType::kF32);
    EXPECT_EQ(std::vector<uint64_t>(t->dims.rbegin(), t->dims.rend()), src.shape) << gguf;
    ASSERT_EQ(t->nbytes, src.data.size());
    EXPECT_EQ(std::memcmp((*f)->tensor_data(*t), src.data.data(), t->nbytes), 0) << gguf;
  }
  EXPECT_EQ((*f)->find_tensor("blk.0.attn_q.bias")->type, GgmlType::kF32);
  EXPECT_EQ((*f)->find_tensor("rotary_emb.inv_freq"), nullptr);
  std::shared_ptr<const GgufFile> shared(std::move(f.value()));
  auto model = LlamaModel::create(shared, std::make_unique<CpuBackend>(1));
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_TRUE((*model)->config().qkv_bias);
  EXPECT_FALSE((*model)->config().tied_output);
}

TEST_F(HfConvertTest, LlamaPermutesQkCopiesBf16AndWritesRopeFreqs) {
  const auto tensors = tiny_tensors(/*qwen2=*/false, /*bf16=*/true);
  Json config = tiny_config("LlamaForCausalLM");
  config["rope_scaling"] = {{"rope_type", "llama3"},
                            {"factor", 8.0},
                            {"low_freq_factor", 1.0},
                            {"high_freq_factor", 4.0},
                            {"original_max_position_embeddings", 16}};
  write_checkpoint(config, tensors);
  auto r = convert(GgmlType::kBF16);
  ASSERT_TRUE(r.ok()) << r.error().message;
  auto f = GgufFile::open(out_);
  ASSERT_TRUE(f.ok()) << f.error().message;
  EXPECT_EQ((*f)->get_int("general.file_type").value(), 32);
  EXPECT_EQ((*f)->tensors()[1].name, "rope_freqs.weight");
  const GgufTensorInfo* freqs = (*f)->find_tensor("rope_freqs.weight");
  ASSERT_NE(freqs, nullptr);
  auto cfg = parse_hf_config(config.dump(), "config.json");
  ASSERT_TRUE(cfg.ok());
  const std::vector<float> want = hf_rope_freq_factors(*cfg);
  ASSERT_EQ(freqs->nbytes, want.size() * 4);
  EXPECT_EQ(std::memcmp((*f)->tensor_data(*freqs), want.data(), freqs->nbytes), 0);

  for (auto [hf, gguf, rows] :
       {std::tuple{"model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight", kHeads * kHd},
        std::tuple{"model.layers.0.self_attn.k_proj.weight", "blk.0.attn_k.weight",
                   kKvHeads * kHd}}) {
    const GgufTensorInfo* t = (*f)->find_tensor(gguf);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->type, GgmlType::kBF16);
    const StTensor& src = st_by_name(tensors, hf);
    const uint64_t row_bytes = kEmbd * 2;
    for (int64_t row = 0; row < rows; ++row) {
      EXPECT_EQ(std::memcmp((*f)->tensor_data(*t) + row * row_bytes,
                            src.data.data() + qk_source_row(row, kHd) * row_bytes, row_bytes),
                0)
          << gguf << " row " << row;
    }
  }
  // v_proj is not permuted.
  const GgufTensorInfo* v = (*f)->find_tensor("blk.0.attn_v.weight");
  EXPECT_EQ(std::memcmp((*f)->tensor_data(*v),
                        st_by_name(tensors, "model.layers.0.self_attn.v_proj.weight").data.data(),
                        v->nbytes),
            0);
  // Norms are widened to f32 exactly.
  const GgufTensorInfo* norm = (*f)->find_tensor("output_norm.weight");
  EXPECT_EQ(norm->type, GgmlType::kF32);
  float first;
  std::memcpy(&first, (*f)->tensor_data(*norm), 4);
  uint16_t src_first;
  std::memcpy(&src_first, st_by_name(tensors, "model.norm.weight").data.data(), 2);
  EXPECT_EQ(first, bf16_to_f32(src_first));

  std::shared_ptr<const GgufFile> shared(std::move(f.value()));
  auto model = LlamaModel::create(shared, std::make_unique<CpuBackend>(1));
  ASSERT_TRUE(model.ok()) << model.error().message;
  EXPECT_TRUE((*model)->config().rope_scaling.from_tensor);
}

TEST_F(HfConvertTest, RejectsMissingDirectoryAndFiles) {
  auto missing = convert_hf_to_gguf((root_ / "nope").string(), out_, {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("no such directory"), std::string::npos);
  ASSERT_TRUE(write_bytes((root_ / "file").string(), std::string("x")));
  auto file = convert_hf_to_gguf((root_ / "file").string(), out_, {});
  ASSERT_FALSE(file.ok());
  EXPECT_NE(file.error().message.find("not a directory"), std::string::npos);

  expect_failure(ErrorCode::kNotFound, "config.json: no such file");
  write_checkpoint(tiny_config("LlamaForCausalLM"), tiny_tensors(false, false));
  fs::remove(dir_ / "tokenizer.json");
  expect_failure(ErrorCode::kNotFound, "tokenizer.json: no such file");
  fs::remove(dir_ / "model.safetensors");
  expect_failure(ErrorCode::kNotFound, "no model.safetensors or model.safetensors.index.json");
}

TEST_F(HfConvertTest, RejectsBadConfigsAndTypes) {
  write_checkpoint(tiny_config("GPT2LMHeadModel"), tiny_tensors(false, false));
  expect_failure(ErrorCode::kUnsupported, "unsupported architecture 'GPT2LMHeadModel'");
  write_checkpoint(tiny_config("LlamaForCausalLM"), tiny_tensors(false, false));
  expect_failure(ErrorCode::kInvalidInput, "is not f32, f16 or bf16", GgmlType::kQ8_0);
}

TEST_F(HfConvertTest, RejectsCorruptSafetensors) {
  write_checkpoint(tiny_config("LlamaForCausalLM"), tiny_tensors(false, false));
  const auto path = (dir_ / "model.safetensors").string();
  const auto good = testing::make_safetensors(tiny_tensors(false, false));
  ASSERT_TRUE(write_bytes(path, std::vector<uint8_t>(good.begin(), good.end() - 5)));
  expect_failure(ErrorCode::kInvalidInput, "end past the data section");
  ASSERT_TRUE(write_bytes(path, testing::make_raw_safetensors("not json", {})));
  expect_failure(ErrorCode::kInvalidInput, "does not start with '{'");
}

TEST_F(HfConvertTest, RejectsUnknownMissingMisshapenAndUnconvertibleTensors) {
  const Json config = tiny_config("LlamaForCausalLM");
  auto tensors = tiny_tensors(false, false);
  tensors.push_back({"model.layers.0.mlp.experts.weight", "F32", {1}, {0, 0, 0, 0}});
  write_checkpoint(config, tensors);
  expect_failure(ErrorCode::kUnsupported,
                 "tensor 'model.layers.0.mlp.experts.weight' is not part of LlamaForCausalLM");

  tensors = tiny_tensors(false, false);
  std::erase_if(tensors, [](const StTensor& t) { return t.name == "model.norm.weight"; });
  write_checkpoint(config, tensors);
  expect_failure(ErrorCode::kNotFound, "the checkpoint has no tensor 'model.norm.weight'");

  tensors = tiny_tensors(false, false);
  for (auto& t : tensors) {
    if (t.name == "model.layers.0.mlp.up_proj.weight") t.shape = {kEmbd, kFf};
  }
  write_checkpoint(config, tensors);
  expect_failure(ErrorCode::kInvalidInput, "has shape [32, 64], config.json implies [64, 32]");

  tensors = tiny_tensors(false, false);
  for (auto& t : tensors) {
    if (t.name == "model.norm.weight") {
      t.dtype = "I64";
      t.data.resize(kEmbd * 8);
    }
  }
  write_checkpoint(config, tensors);
  expect_failure(ErrorCode::kUnsupported,
                 "'model.norm.weight' has dtype I64: unsupported dtype for conversion");
}

TEST_F(HfConvertTest, ReadsShardsAndRejectsInconsistentIndexes) {
  const Json config = tiny_config("LlamaForCausalLM");
  const auto tensors = tiny_tensors(false, false);
  write_checkpoint(config, tensors);
  fs::remove(dir_ / "model.safetensors");
  const std::vector<StTensor> a(tensors.begin(), tensors.begin() + 5);
  const std::vector<StTensor> b(tensors.begin() + 5, tensors.end());
  ASSERT_TRUE(write_bytes((dir_ / "a.safetensors").string(), testing::make_safetensors(a)));
  ASSERT_TRUE(write_bytes((dir_ / "b.safetensors").string(), testing::make_safetensors(b)));
  auto write_index = [&](const Json& map) {
    ASSERT_TRUE(write_bytes((dir_ / "model.safetensors.index.json").string(),
                            Json{{"metadata", Json::object()}, {"weight_map", map}}.dump()));
  };
  Json map = Json::object();
  for (const auto& t : a) map[t.name] = "a.safetensors";
  for (const auto& t : b) map[t.name] = "b.safetensors";
  write_index(map);
  auto ok = convert();
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->n_weight_files, 2u);
  fs::remove(out_);

  Json wrong = map;
  wrong[a[0].name] = "b.safetensors";
  write_index(wrong);
  expect_failure(ErrorCode::kInvalidInput, "puts tensor '" + a[0].name + "' in b.safetensors");
  Json missing_entry = map;
  missing_entry.erase(b[0].name);
  write_index(missing_entry);
  expect_failure(ErrorCode::kInvalidInput, "model.safetensors.index.json does not assign to it");
  Json traversal = map;
  traversal[a[0].name] = "../a.safetensors";
  write_index(traversal);
  expect_failure(ErrorCode::kInvalidInput, "is not a plain file name");
  Json absent = map;
  absent[a[0].name] = "c.safetensors";
  write_index(absent);
  expect_failure(ErrorCode::kNotFound, "c.safetensors: no such file");
  ASSERT_TRUE(write_bytes((dir_ / "model.safetensors.index.json").string(), std::string("{}")));
  expect_failure(ErrorCode::kInvalidInput, "no 'weight_map' object");
  // The same tensor in two shards.
  Json twice = map;
  twice["x"] = "c.safetensors";
  ASSERT_TRUE(write_bytes((dir_ / "c.safetensors").string(),
                          testing::make_safetensors({a[0], StTensor{"x", "U8", {1}, {0}}})));
  twice[a[0].name] = "a.safetensors";
  write_index(twice);
  expect_failure(ErrorCode::kInvalidInput, "tensor '" + a[0].name + "' is in both");
}

TEST_F(HfConvertTest, RejectsBadOutputPaths) {
  write_checkpoint(tiny_config("LlamaForCausalLM"), tiny_tensors(false, false));
  fs::create_directories(out_);
  auto dir = convert();
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.error().message.find("is a directory"), std::string::npos);
  EXPECT_TRUE(fs::is_directory(out_));
  fs::remove(out_);
  // Every existing file of the checkpoint directory is (or may be) an input.
  for (const char* name : {"model.safetensors", "config.json"}) {
    auto onto_input = convert_hf_to_gguf(dir_.string(), (dir_ / name).string(), {});
    ASSERT_FALSE(onto_input.ok()) << name;
    EXPECT_NE(onto_input.error().message.find("file of the checkpoint directory"),
              std::string::npos)
        << onto_input.error().message;
  }
}

}  // namespace
}  // namespace novaserve
