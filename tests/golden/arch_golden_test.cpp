// Golden tests of the qwen3 and phi3 architectures without committed weights: the checkpoint of
// tools/reference/make_arch_golden.py is rebuilt from the weight formula (arch_checkpoint.h),
// converted with `novaserve convert`, and our tokenizer and CPU forward pass are compared with
// the Hugging Face transformers reference in tests/golden/data/<arch>/golden.json.
//
// Bounds, exact mode (f32 activations): max |ours - ref| / max |ref| <= 1e-3 on the last prompt
// position's logits, on every prompt position's reference top-k and on every greedy step's
// top-k; greedy tokens identical, except that a flip to the reference's runner-up is allowed at
// a step whose reference top-2 gap is below the bound (then the comparison stops there).
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <set>

#include "arch_checkpoint.h"
#include "backend/cpu/cpu_backend.h"
#include "engine/sequence_kv_cache.h"
#include "gguf/gguf_file.h"
#include "model/llama_model.h"
#include "tokenizer/tokenizer.h"

namespace novaserve::golden {
namespace {

namespace fs = std::filesystem;

constexpr double kExactBound = 1e-3;

std::string source_dir() {
  const char* env = std::getenv("NOVASERVE_SOURCE_DIR");
  return env ? env : NOVASERVE_SOURCE_DIR;
}

double max_abs(const std::vector<float>& v) {
  double m = 0.0;
  for (float x : v) m = std::max(m, std::fabs(static_cast<double>(x)));
  return m;
}

double topk_error(const float* ours, const std::vector<TopKEntry>& ref) {
  double e = 0.0;
  for (const auto& t : ref) e = std::max(e, std::fabs(static_cast<double>(ours[t.id]) - t.logit));
  return e;
}

// The GGUF tensor names the converter writes for the architecture's HF tensors.
std::set<std::string> expected_gguf_tensors(const std::string& arch, int64_t n_layer, bool tied) {
  std::set<std::string> names = {"token_embd.weight", "output_norm.weight"};
  if (!tied) names.insert("output.weight");
  std::vector<std::string> block = {"attn_norm", "attn_output", "ffn_norm", "ffn_up", "ffn_down"};
  if (arch == "phi3") {
    names.insert({"rope_factors_long.weight", "rope_factors_short.weight"});
    block.push_back("attn_qkv");
  } else {
    block.insert(block.end(),
                 {"attn_q", "attn_k", "attn_v", "attn_q_norm", "attn_k_norm", "ffn_gate"});
  }
  for (int64_t il = 0; il < n_layer; ++il) {
    for (const auto& b : block) names.insert("blk." + std::to_string(il) + "." + b + ".weight");
  }
  return names;
}

class ArchGoldenTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    data_dir_ = arch_golden_dir(source_dir(), GetParam());
    auto g = load_arch_golden(data_dir_);
    ASSERT_TRUE(g.ok()) << g.error().message;
    golden_ = std::move(g.value());
    ASSERT_EQ(golden_.arch, GetParam());
    work_ = fs::temp_directory_path() /
            ("novaserve_arch_golden_" + std::to_string(::getpid()) + "_" + GetParam() + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(work_);
    fs::create_directories(work_);
    gguf_path_ = (work_ / "model.f32.gguf").string();
  }
  void TearDown() override { fs::remove_all(work_); }

  // Converts the formula checkpoint and opens the GGUF (a fatal test failure on error).
  std::shared_ptr<const GgufFile> convert() {
    auto r = convert_arch_golden(data_dir_, golden_, work_.string(), gguf_path_);
    EXPECT_TRUE(r.ok()) << r.error().message;
    if (!r.ok()) return nullptr;
    EXPECT_EQ(r->arch, golden_.arch);
    auto f = GgufFile::open(gguf_path_);
    EXPECT_TRUE(f.ok()) << f.error().message;
    if (!f.ok()) return nullptr;
    return std::shared_ptr<const GgufFile>(std::move(f.value()));
  }

  // One prompt and its greedy continuation against the reference.
  void check_prompt(LlamaModel& model, const ArchGoldenPrompt& p) {
    SCOPED_TRACE(p.name);
    const int64_t n_vocab = model.config().n_vocab;
    ASSERT_EQ(n_vocab, golden_.n_vocab);
    const auto t_len = static_cast<int32_t>(p.prompt_ids.size());
    auto kv = SequenceKvCache::create(model.config(), t_len + p.greedy_ids.size());
    ASSERT_TRUE(kv.ok()) << kv.error().message;
    ForwardSeq seq{p.prompt_ids, 0, kv->view(), /*all_logits=*/true};
    ASSERT_TRUE(model.forward({&seq, 1}, ActQuant::kNone).ok());
    ASSERT_TRUE(kv->advance(t_len).ok());

    const double scale = max_abs(p.last_logits);
    const float* last = model.logits(0);
    double last_err = 0.0;
    for (int64_t i = 0; i < n_vocab; ++i) {
      last_err = std::max(last_err, std::fabs(static_cast<double>(last[i]) - p.last_logits[i]));
    }
    double pos_err = 0.0;
    for (int32_t t = 0; t < t_len; ++t) {
      pos_err = std::max(pos_err, topk_error(model.logits(0, t), p.position_topk[t]));
    }
    EXPECT_LE(last_err / scale, kExactBound) << "last position";
    EXPECT_LE(pos_err / scale, kExactBound) << "prompt positions' top-k";

    double greedy_err = 0.0;
    int32_t matched = 0;
    const float* logits = last;
    for (size_t i = 0; i < p.greedy_ids.size(); ++i) {
      const auto ours = static_cast<int32_t>(std::max_element(logits, logits + n_vocab) - logits);
      greedy_err = std::max(greedy_err, topk_error(logits, p.greedy_topk[i]));
      if (ours != p.greedy_ids[i]) {
        const auto& topk = p.greedy_topk[i];
        const bool near_tie =
            topk.size() >= 2 && topk[1].id == ours && p.top2_gap[i] < kExactBound * scale;
        EXPECT_TRUE(near_tie) << "greedy step " << i << ": ours " << ours << ", reference "
                              << p.greedy_ids[i] << ", reference top-2 gap " << p.top2_gap[i];
        break;
      }
      ++matched;
      if (i + 1 == p.greedy_ids.size()) break;
      ForwardSeq step{{&ours, 1}, static_cast<int32_t>(kv->size()), kv->view(), false};
      ASSERT_TRUE(model.forward({&step, 1}, ActQuant::kNone).ok());
      ASSERT_TRUE(kv->advance(1).ok());
      logits = model.logits(0);
    }
    EXPECT_LE(greedy_err / scale, kExactBound) << "greedy steps' top-k";
    std::printf("  %-6s %-13s last %.2e  positions %.2e  greedy %.2e  (relative)  match %d/%zu\n",
                golden_.arch.c_str(), p.name.c_str(), last_err / scale, pos_err / scale,
                greedy_err / scale, matched, p.greedy_ids.size());
  }

  std::string data_dir_;
  ArchGolden golden_;
  fs::path work_;
  std::string gguf_path_;
};

// The formula reproduces the script's weights bit for bit (write_arch_checkpoint checks every
// tensor's hash) and the checkpoint has the files transformers loaded.
TEST_P(ArchGoldenTest, FormulaCheckpointMatchesTheScript) {
  const std::string hf = (work_ / "hf").string();
  const Status s = write_arch_checkpoint(data_dir_, golden_, hf);
  ASSERT_TRUE(s.ok()) << s.error().message;
  for (const char* name :
       {"config.json", "tokenizer.json", "tokenizer_config.json", "model.safetensors"}) {
    EXPECT_TRUE(fs::is_regular_file(fs::path(hf) / name)) << name;
  }
}

TEST_P(ArchGoldenTest, ConvertWritesTheArchitecturesTensorsAndKeys) {
  auto f = convert();
  ASSERT_NE(f, nullptr);
  const std::string& a = golden_.arch;
  EXPECT_EQ(f->get_string("general.architecture").value(), a);
  const int64_t n_layer = f->get_int(a + ".block_count").value();
  EXPECT_EQ(n_layer, 2);
  const bool tied = f->find_tensor("output.weight") == nullptr;
  std::set<std::string> names;
  for (const auto& t : f->tensors()) {
    names.insert(t.name);
    EXPECT_EQ(t.type, GgmlType::kF32) << t.name;
  }
  EXPECT_EQ(names, expected_gguf_tensors(a, n_layer, tied));
  EXPECT_EQ(f->get_int(a + ".rope.dimension_count").value(), 64);
  EXPECT_EQ(f->get_int(a + ".vocab_size").value(), golden_.n_vocab);
  EXPECT_EQ(f->get_array("tokenizer.ggml.tokens").value()->items.size(),
            static_cast<size_t>(golden_.n_vocab));
  if (a == "qwen3") {
    EXPECT_TRUE(tied);
    EXPECT_EQ(f->get_int("qwen3.attention.key_length").value(), 64);
    EXPECT_EQ(f->get_int("qwen3.attention.head_count").value(), 8);
    EXPECT_EQ(f->get_string("tokenizer.ggml.pre").value(), "qwen2");
  } else {
    EXPECT_FALSE(tied);
    EXPECT_EQ(f->get_string("phi3.rope.scaling.type").value(), "longrope");
    EXPECT_EQ(f->get_int("phi3.rope.scaling.original_context_length").value(), 128);
    EXPECT_EQ(f->get_int("phi3.context_length").value(), 512);
    EXPECT_NEAR(f->get_float("phi3.rope.scaling.attn_factor").value(),
                std::sqrt(1.0 + std::log(4.0) / std::log(128.0)), 1e-7);
    EXPECT_EQ(f->get_string("tokenizer.ggml.model").value(), "llama");
  }
}

TEST_P(ArchGoldenTest, TokenizationMatchesReferenceIds) {
  auto f = convert();
  ASSERT_NE(f, nullptr);
  auto tok = Tokenizer::from_gguf(*f);
  ASSERT_TRUE(tok.ok()) << tok.error().message;
  for (const auto& p : golden_.prompts) {
    EXPECT_EQ((*tok)->encode(p.text, /*add_special=*/p.add_bos, /*parse_special=*/true),
              p.prompt_ids)
        << p.name;
  }
}

TEST_P(ArchGoldenTest, ExactModeMatchesReference) {
  auto f = convert();
  ASSERT_NE(f, nullptr);
  auto model = LlamaModel::create(f, std::make_unique<CpuBackend>(1));
  ASSERT_TRUE(model.ok()) << "model load: " << model.error().message;
  for (const auto& p : golden_.prompts) check_prompt(**model, p);
}

// "golden" in the name so that `ctest -R golden` selects these.
INSTANTIATE_TEST_SUITE_P(golden, ArchGoldenTest, ::testing::Values("qwen3", "phi3"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace novaserve::golden
