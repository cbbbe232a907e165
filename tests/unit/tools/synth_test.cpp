// `novaserve synth` library: tensor plans against the sizes llama.cpp reported for the same
// architectures (../shared/peer-baselines.md) and the published parameter counts, per-tensor
// types from --type/--keep-f16/--tensor-type (q4_k_m included), the metadata (tokenizers load and
// tokenize like their sources), generated files that load and run, and byte-determinism across
// thread counts.
#include "tools/synth/synth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "convert/gguf_writer.h"
#include "engine/sequence_kv_cache.h"
#include "model/llama_model.h"
#include "tokenizer/tokenizer.h"
#include "tools/synth/synth_rng.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;

std::string source_dir() {
  const char* env = std::getenv("NOVASERVE_SOURCE_DIR");
  return env ? env : NOVASERVE_SOURCE_DIR;
}
fs::path default_model() {
  return fs::path(source_dir()) / "models/SmolLM2-135M-Instruct.Q4_1.gguf";
}
fs::path vocab(const char* name) {
  const char* env = std::getenv("NOVASERVE_SHARED_DIR");
  const fs::path shared = env ? fs::path(env) : fs::path(source_dir()) / "../shared";
  return shared / "testdata/tokenizers" / name;
}

struct PlanTotals {
  uint64_t bytes = 0;
  uint64_t params = 0;
};

PlanTotals totals(const std::vector<SynthTensor>& plan) {
  PlanTotals t;
  for (const auto& s : plan) {
    t.bytes += gguf_tensor_nbytes(s.decl).value();
    t.params += static_cast<uint64_t>(s.n_in) * static_cast<uint64_t>(s.n_rows);
  }
  return t;
}

// synth's type flags: --type TYPE, --keep-f16 and --tensor-type rules.
SynthTypeRules rules_of(const char* type, std::vector<std::string> keep_f16 = {},
                        std::vector<std::string> tensor_types = {}) {
  return SynthTypeRules{parse_quant_type_spec(type).value(), std::move(keep_f16),
                        std::move(tensor_types)};
}

std::vector<SynthTensor> plan_of(const char* preset, const SynthTypeRules& rules) {
  const SynthPreset* p = find_synth_preset(preset);
  EXPECT_NE(p, nullptr) << preset;
  auto shape = synth_shape(*p, nullptr);
  EXPECT_TRUE(shape.ok());
  auto policy = synth_policy(rules, shape->n_layer);
  EXPECT_TRUE(policy.ok()) << policy.error().message;
  auto plan = synth_tensor_plan(*shape, *policy);
  EXPECT_TRUE(plan.ok()) << plan.error().message;
  return plan.ok() ? *plan : std::vector<SynthTensor>{};
}

std::vector<SynthTensor> plan_of(const char* preset, const char* type) {
  return plan_of(preset, rules_of(type));
}

double gib(uint64_t bytes) {
  return static_cast<double>(bytes) / (1024.0 * 1024.0 * 1024.0);
}

const SynthTensor* find(const std::vector<SynthTensor>& plan, const std::string& name) {
  for (const auto& t : plan) {
    if (t.decl.name == name) return &t;
  }
  return nullptr;
}

TEST(SynthPlanTest, Llama3_8bMatchesTheBaselineFiles) {
  const auto q4 = plan_of("llama3-8b", "q4_0");
  // token_embd, output_norm, output + 9 tensors per layer.
  ASSERT_EQ(q4.size(), 3u + 32 * 9);
  // llama-bench reported 4.21 GiB (Q4_0) and 14.96 GiB (F16) for these shapes; Meta gives 8.03 B
  // parameters.
  EXPECT_NEAR(gib(totals(q4).bytes), 4.21, 0.005);
  EXPECT_NEAR(gib(totals(plan_of("llama3-8b", "f16")).bytes), 14.96, 0.005);
  EXPECT_NEAR(static_cast<double>(totals(q4).params) * 1e-9, 8.03, 0.005);

  const SynthTensor* down = find(q4, "blk.31.ffn_down.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->decl.dims, (std::vector<uint64_t>{14336, 4096}));
  EXPECT_EQ(down->decl.type, GgmlType::kQ4_0);
  const SynthTensor* k = find(q4, "blk.0.attn_k.weight");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->decl.dims, (std::vector<uint64_t>{4096, 1024}));  // 8 KV heads of 128
  const SynthTensor* out = find(q4, "output.weight");
  ASSERT_NE(out, nullptr);
  EXPECT_EQ(out->decl.dims, (std::vector<uint64_t>{4096, 128256}));
  EXPECT_EQ(out->decl.type, GgmlType::kQ4_0);  // the baseline files were Q4_0 throughout
  const SynthTensor* norm = find(q4, "blk.7.ffn_norm.weight");
  ASSERT_NE(norm, nullptr);
  EXPECT_EQ(norm->decl.type, GgmlType::kF32);
  EXPECT_EQ(norm->init, SynthInit::kOnes);
  EXPECT_EQ(find(q4, "blk.0.attn_q.bias"), nullptr);
}

TEST(SynthPlanTest, U15Lite12bAndQwen2_7bShapes) {
  const auto u15 = plan_of("u15-lite-12b", "q4_0");
  EXPECT_NEAR(gib(totals(u15).bytes), 6.46, 0.005);  // llama-bench's size for this shape
  EXPECT_NEAR(static_cast<double>(totals(u15).params) * 1e-9, 12.32, 0.005);
  EXPECT_EQ(find(u15, "blk.39.attn_q.weight")->decl.dims, (std::vector<uint64_t>{5120, 5120}));

  const auto qwen = plan_of("qwen2-7b", "q8_0");
  ASSERT_EQ(qwen.size(), 3u + 28 * 12);                                       // plus q/k/v biases
  EXPECT_NEAR(static_cast<double>(totals(qwen).params) * 1e-9, 7.62, 0.005);  // Qwen2-7B card
  const SynthTensor* bk = find(qwen, "blk.27.attn_k.bias");
  ASSERT_NE(bk, nullptr);
  EXPECT_EQ(bk->decl.dims, (std::vector<uint64_t>{512}));
  EXPECT_EQ(bk->decl.type, GgmlType::kF32);
}

TEST(SynthPlanTest, PlainTypesKeepTheHeadAndBadNamesFail) {
  // Unlike quantize's output default (q6_k), a plain synth type covers the head too: the
  // baseline files were one type throughout.
  const auto q4k = plan_of("llama3-8b", "q4_k");
  EXPECT_EQ(find(q4k, "output.weight")->decl.type, GgmlType::kQ4_K);
  EXPECT_EQ(find(q4k, "blk.0.attn_v.weight")->decl.type, GgmlType::kQ4_K);
  EXPECT_FALSE(parse_quant_type_spec("q2_k").ok());
  for (const char* bad : {"ffn_(gate=f16", "attn_q", "attn_q=q7", "=f16"}) {
    auto p = synth_policy(rules_of("q4_0", {}, {bad}), 32);
    ASSERT_FALSE(p.ok()) << bad;
    EXPECT_EQ(p.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(p.error().message.find(bad), std::string::npos) << p.error().message;
  }
  EXPECT_FALSE(synth_policy(rules_of("q4_0", {"[ffn"}), 32).ok());
  // smollm2-135m's shape comes from the default model, so it needs that file.
  EXPECT_FALSE(synth_shape(*find_synth_preset("smollm2-135m"), nullptr).ok());
  EXPECT_EQ(find_synth_preset("llama3-70b"), nullptr);
}

// llama.cpp's Q4_K_M of llama3-8b: q6_k attn_v/ffn_down in the 16 "more bits" layers of 32
// (worked by hand from the formula: i < 4, i >= 28, (i - 4) % 3 == 2), q6_k head, q4_k elsewhere.
TEST(SynthPlanTest, Llama3_8bQ4_K_M) {
  const auto plan = plan_of("llama3-8b", "q4_k_m");
  ASSERT_EQ(plan.size(), 3u + 32 * 9);
  const std::vector<int> more = {0, 1, 2, 3, 6, 9, 12, 15, 18, 21, 24, 27, 28, 29, 30, 31};
  for (const auto& t : plan) {
    GgmlType want = GgmlType::kQ4_K;
    if (t.decl.dims.size() == 1) {
      want = GgmlType::kF32;
    } else if (t.decl.name == "output.weight") {
      want = GgmlType::kQ6_K;
    } else if (t.decl.name.find("attn_v.") != std::string::npos ||
               t.decl.name.find("ffn_down.") != std::string::npos) {
      const int layer = std::atoi(t.decl.name.c_str() + 4);  // blk.N.
      if (std::find(more.begin(), more.end(), layer) != more.end()) want = GgmlType::kQ6_K;
    }
    EXPECT_EQ(t.decl.type, want) << t.decl.name;
  }
  // Tensor bytes: 4.58 GiB, the size llama.cpp's tools report for Llama 3 8B Q4_K_M files.
  EXPECT_NEAR(gib(totals(plan).bytes), 4.58, 0.005);
}

// Rows that are not whole 256-value blocks fall back as in quantize (q4_k -> q5_0, q6_k -> q8_0),
// and each tensor remembers what was asked, which synth's warning counts; whole rows do not.
TEST(SynthPlanTest, BlockSizeFallbackKeepsTheRequestedType) {
  for (const auto& t : plan_of("llama3-8b", "q4_k_m")) {
    EXPECT_EQ(t.requested, t.decl.type) << t.decl.name;
  }
  auto shape = synth_shape(*find_synth_preset("llama3-8b"), nullptr);
  ASSERT_TRUE(shape.ok());
  shape->n_layer = 2, shape->n_embd = 576, shape->n_head = 9, shape->n_head_kv = 3;
  shape->head_dim = 64, shape->n_ff = 1536;
  auto policy = synth_policy(rules_of("q4_k_m"), shape->n_layer);
  ASSERT_TRUE(policy.ok()) << policy.error().message;
  auto plan = synth_tensor_plan(*shape, *policy);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  const SynthTensor* q = find(*plan, "blk.0.attn_q.weight");
  ASSERT_NE(q, nullptr);
  EXPECT_EQ(q->requested, GgmlType::kQ4_K);
  EXPECT_EQ(q->decl.type, GgmlType::kQ5_0);
  const SynthTensor* down = find(*plan, "blk.1.ffn_down.weight");  // rows of 1536: whole blocks
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->decl.type, down->requested);  // q6_k: a "more bits" layer of q4_k_m's rule
}

// The product's mixed policy: q4_0 with ffn_gate/ffn_up kept f16.
TEST(SynthPlanTest, KeepF16Rules) {
  const auto plan = plan_of("llama3-8b", rules_of("q4_0", {"ffn_(gate|up)"}, {"attn_v=q8_0"}));
  for (const auto& t : plan) {
    GgmlType want = t.decl.dims.size() == 1 ? GgmlType::kF32 : GgmlType::kQ4_0;
    if (t.decl.name.find("ffn_gate.") != std::string::npos ||
        t.decl.name.find("ffn_up.") != std::string::npos) {
      want = GgmlType::kF16;
    } else if (t.decl.name.find("attn_v.") != std::string::npos) {
      want = GgmlType::kQ8_0;
    }
    EXPECT_EQ(t.decl.type, want) << t.decl.name;
  }
}

TEST(SynthRngTest, UnitValuesHaveUnitVarianceAndNoRowCorrelation) {
  SynthRowRng a(1, fnv1a64("w"), 0), b(1, fnv1a64("w"), 1), a2(1, fnv1a64("w"), 0);
  const int n = 200000;
  double sum = 0, sum2 = 0, cross = 0, max_abs = 0;
  for (int i = 0; i < n; ++i) {
    const float x = a.next_unit(), y = b.next_unit();
    ASSERT_EQ(x, a2.next_unit());  // same (seed, name, row), same stream
    sum += x;
    sum2 += static_cast<double>(x) * x;
    cross += static_cast<double>(x) * y;
    max_abs = std::max(max_abs, std::fabs(static_cast<double>(x)));
  }
  // Standard errors at n = 2e5: mean ~0.0022, variance ~0.003 (Irwin-Hall kurtosis), cross
  // term ~0.0022; bounds at ~5 sigma.
  EXPECT_NEAR(sum / n, 0.0, 0.012);
  EXPECT_NEAR(sum2 / n, 1.0, 0.02);
  EXPECT_NEAR(cross / n, 0.0, 0.012);
  EXPECT_LE(max_abs, 2.0 * std::sqrt(3.0));
}

// Metadata of a vocab-file preset, parsed back: the tokenizer loads and tokenizes like the
// vocab file it came from.
std::unique_ptr<GgufFile> metadata_file(const char* preset, const GgufFile& source,
                                        std::vector<uint8_t>& storage) {
  const SynthPreset* p = find_synth_preset(preset);
  auto shape = synth_shape(*p, nullptr);
  auto kvs = synth_metadata(*p, *shape, llama_file_type(GgmlType::kQ4_0), 5, source);
  EXPECT_TRUE(kvs.ok()) << kvs.error().message;
  if (!kvs.ok()) return nullptr;
  GgufWriter w;
  for (auto& kv : *kvs) w.add(kv.key, kv.value);
  storage = w.serialize();
  auto f = GgufFile::parse(storage.data(), storage.size());
  EXPECT_TRUE(f.ok()) << f.error().message;
  return f.ok() ? std::move(f.value()) : nullptr;
}

TEST(SynthMetadataTest, VocabPresetsCopyAndPadTheTokenizer) {
  for (const char* preset : {"llama3-8b", "qwen2-7b"}) {
    const fs::path vf = vocab(find_synth_preset(preset)->tokenizer_file.data());
    if (!fs::exists(vf)) GTEST_SKIP() << vf << " is absent (shared test data)";
    auto src = GgufFile::open(vf.string());
    ASSERT_TRUE(src.ok()) << src.error().message;
    std::vector<uint8_t> storage;
    auto f = metadata_file(preset, **src, storage);
    ASSERT_NE(f, nullptr);
    const auto shape = synth_shape(*find_synth_preset(preset), nullptr).value();
    EXPECT_EQ(f->get_string("general.architecture").value(), shape.arch);
    EXPECT_EQ(f->get_int(shape.arch + ".block_count").value(), shape.n_layer);
    EXPECT_EQ(f->get_int(shape.arch + ".attention.head_count_kv").value(), shape.n_head_kv);
    EXPECT_EQ(f->get_float(shape.arch + ".rope.freq_base").value(), shape.rope_freq_base);
    EXPECT_EQ(f->get_int("novaserve.synth.seed").value(), 5);
    const GgufArray* tokens = f->get_array("tokenizer.ggml.tokens").value();
    ASSERT_EQ(static_cast<int64_t>(tokens->items.size()), shape.n_vocab) << preset;
    const size_t n_src = (*src)->get_array("tokenizer.ggml.tokens").value()->items.size();
    if (n_src < tokens->items.size()) {  // qwen2: 151936 tokens for 152064 rows
      EXPECT_EQ(tokens->items[n_src].as_string(), "[PAD" + std::to_string(n_src) + "]");
      const GgufArray* types = f->get_array("tokenizer.ggml.token_type").value();
      EXPECT_EQ(types->items.back().as_int(), 5);
    }
    auto tok_src = Tokenizer::from_gguf(**src);
    auto tok = Tokenizer::from_gguf(*f);
    ASSERT_TRUE(tok_src.ok() && tok.ok()) << preset;
    const std::string text = "Synthetic weights, real tokenizer: 12345 caf\xc3\xa9!";
    EXPECT_EQ((*tok)->encode(text, true, false), (*tok_src)->encode(text, true, false)) << preset;
  }
}

class SynthFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(default_model())) GTEST_SKIP() << default_model() << " is absent";
    dir_ = fs::temp_directory_path() / ("synth_test_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  Result<SynthReport> write(const std::string& name, SynthTypeRules types, uint64_t seed,
                            int threads) {
    SynthOptions o;
    o.preset = "smollm2-135m";
    o.types = std::move(types);
    o.seed = seed;
    o.n_threads = threads;
    o.tokenizer_source = default_model().string();
    return write_synth_gguf((dir_ / name).string(), o);
  }

  std::vector<uint8_t> read(const std::string& name) {
    std::ifstream f(dir_ / name, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }

  fs::path dir_;
};

// Runs 5 tokens through `m`: every logit finite, of a spread that makes the next-token
// distribution neither flat nor one-hot.
void expect_spread_logits(LlamaModel& m, const std::string& name) {
  const ModelConfig& c = m.config();
  auto kv = SequenceKvCache::create(c, 16);
  ASSERT_TRUE(kv.ok());
  const std::vector<int32_t> tokens = {1, 504, 3458, 28, 2};
  ForwardSeq seq{tokens, 0, kv->view(), true};
  ASSERT_TRUE(m.forward({&seq, 1}, ActQuant::kNone).ok());
  for (int32_t t = 0; t < static_cast<int32_t>(tokens.size()); ++t) {
    const float* l = m.logits(0, t);
    double sum = 0, sum2 = 0, max_l = -1e30;
    for (int64_t i = 0; i < c.n_vocab; ++i) {
      ASSERT_TRUE(std::isfinite(l[i])) << name << " token " << t << " logit " << i;
      sum += l[i];
      sum2 += static_cast<double>(l[i]) * l[i];
      max_l = std::max(max_l, static_cast<double>(l[i]));
    }
    // Unit-RMS final hidden state times a tied head of deviation 1/sqrt(n_embd): logits of
    // deviation ~1, so the next-token distribution is neither flat nor one-hot.
    const double mean = sum / c.n_vocab;
    const double sd = std::sqrt(sum2 / c.n_vocab - mean * mean);
    EXPECT_GT(sd, 0.3) << name << " token " << t;
    EXPECT_LT(sd, 3.0) << name << " token " << t;
    double z = 0;
    for (int64_t i = 0; i < c.n_vocab; ++i) z += std::exp(l[i] - max_l);
    EXPECT_LT(1.0 / z, 0.5) << "top token probability, " << name << " token " << t;
  }
}

TEST_F(SynthFileTest, Smollm2LoadsAndGivesFiniteSpreadLogits) {
  auto source = GgufFile::open(default_model().string());
  ASSERT_TRUE(source.ok());
  const ModelConfig ref = ModelConfig::from_gguf(**source).value();
  for (const char* type_name : {"f32", "q8_0"}) {
    const GgmlType type = *ggml_type_from_name(type_name);
    const std::string name = std::string(type_name) + ".gguf";
    auto r = write(name, rules_of(type_name), 1, 2);
    ASSERT_TRUE(r.ok()) << r.error().message;
    EXPECT_EQ(r->file_bytes, fs::file_size(dir_ / name));
    auto f = GgufFile::open((dir_ / name).string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    std::shared_ptr<const GgufFile> file(std::move(f.value()));
    EXPECT_EQ(file->find_tensor("blk.29.ffn_up.weight")->type, type);
    EXPECT_EQ(file->find_tensor("output.weight"), nullptr);  // SmolLM2 ties its head
    auto m = LlamaModel::create(file, std::make_unique<CpuBackend>(2));
    ASSERT_TRUE(m.ok()) << m.error().message;
    const ModelConfig& c = (*m)->config();
    EXPECT_EQ(c.n_layer, ref.n_layer);
    EXPECT_EQ(c.n_embd, ref.n_embd);
    EXPECT_EQ(c.n_head_kv, ref.n_head_kv);
    EXPECT_EQ(c.n_ff, ref.n_ff);
    EXPECT_EQ(c.n_vocab, ref.n_vocab);
    EXPECT_EQ(c.rope_freq_base, ref.rope_freq_base);
    EXPECT_TRUE(c.tied_output);
    expect_spread_logits(**m, name);
  }
}

// synth with rules writes each tensor in the type asked, and the files run: the product's mixed
// policy (q4_0, ffn_gate/ffn_up kept f16) and q4_k_m, on smollm2-135m (30 layers, a tied head,
// 576-wide rows that no K-quant fits, 1536-wide ffn_down rows).
TEST_F(SynthFileTest, TypeRulesGiveEachTensorTheTypeAsked) {
  struct Case {
    const char* file;
    SynthTypeRules rules;
    int64_t file_type;
  };
  const std::vector<Case> cases = {{"mixed.gguf", rules_of("q4_0", {"ffn_(gate|up)"}), 2},
                                   {"q4_k_m.gguf", rules_of("q4_k_m"), 15}};
  for (const Case& k : cases) {
    auto r = write(k.file, k.rules, 1, 2);
    ASSERT_TRUE(r.ok()) << r.error().message;
    auto f = GgufFile::open((dir_ / k.file).string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    std::shared_ptr<const GgufFile> file(std::move(f.value()));
    EXPECT_EQ(file->get_int("general.file_type").value(), k.file_type) << k.file;
    ASSERT_EQ(file->tensors().size(), 2u + 30 * 9) << k.file;
    const bool mixed = k.rules.type.mixture == QuantMixture::kNone;
    for (const GgufTensorInfo& t : file->tensors()) {
      const std::string& n = t.name;
      const int layer = n.rfind("blk.", 0) == 0 ? std::atoi(n.c_str() + 4) : -1;
      // use_more_bits for 30 layers: n/8 = 3, 7n/8 = 26.
      const bool more = layer >= 0 && (layer < 3 || layer >= 26 || (layer - 3) % 3 == 2);
      const auto is = [&n](const char* part) { return n.find(part) != std::string::npos; };
      GgmlType want;
      if (t.dims.size() == 1) {
        want = GgmlType::kF32;
      } else if (mixed) {
        want = is("ffn_gate.") || is("ffn_up.") ? GgmlType::kF16 : GgmlType::kQ4_0;
      } else if (n == "token_embd.weight") {
        want = GgmlType::kQ8_0;  // tied head: q6_k does not fit 576, llama.cpp's q8_0
      } else if (is("attn_v.")) {
        want = more ? GgmlType::kQ8_0 : GgmlType::kQ5_0;  // q6_k / q4_k, falling back
      } else if (is("ffn_down.")) {
        want = more ? GgmlType::kQ6_K : GgmlType::kQ4_K;
      } else {
        want = GgmlType::kQ5_0;  // q4_k on 576-wide rows
      }
      EXPECT_EQ(t.type, want) << k.file << " " << n << ": " << ggml_type_traits(t.type).name;
    }
    auto m = LlamaModel::create(file, std::make_unique<CpuBackend>(2));
    ASSERT_TRUE(m.ok()) << m.error().message;
    expect_spread_logits(**m, k.file);
  }
}

TEST_F(SynthFileTest, BytesDependOnSeedNotThreads) {
  ASSERT_TRUE(write("t1.gguf", rules_of("q4_0"), 7, 1).ok());
  ASSERT_TRUE(write("t3.gguf", rules_of("q4_0"), 7, 3).ok());
  ASSERT_TRUE(write("s8.gguf", rules_of("q4_0"), 8, 2).ok());
  const auto t1 = read("t1.gguf");
  ASSERT_GT(t1.size(), 1000000u);
  EXPECT_TRUE(t1 == read("t3.gguf")) << "1 and 3 threads wrote different bytes";
  const auto s8 = read("s8.gguf");
  ASSERT_EQ(s8.size(), t1.size());
  // Different seeds: same header except the seed key, different weights.
  EXPECT_NE(std::memcmp(s8.data() + s8.size() / 2, t1.data() + t1.size() / 2, 4096), 0);
}

TEST_F(SynthFileTest, ErrorsNameTheProblemAndLeaveNoFile) {
  SynthOptions o;
  o.preset = "nope";
  o.tokenizer_source = default_model().string();
  auto r = write_synth_gguf((dir_ / "x.gguf").string(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("llama3-8b"), std::string::npos) << r.error().message;

  o.preset = "smollm2-135m";
  o.tokenizer_source = (dir_ / "missing.gguf").string();
  r = write_synth_gguf((dir_ / "x.gguf").string(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);

  o.tokenizer_source = default_model().string();
  r = write_synth_gguf((dir_ / "no_dir" / "x.gguf").string(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
  EXPECT_TRUE(fs::is_empty(dir_));

  // Writing over the tokenizer source would truncate the mapping being read (a copy, so a bug
  // here cannot destroy the default model).
  const fs::path copy = dir_ / "source.gguf";
  fs::copy_file(default_model(), copy);
  o.tokenizer_source = copy.string();
  r = write_synth_gguf(copy.string(), o);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(fs::file_size(copy), fs::file_size(default_model()));
}

}  // namespace
}  // namespace novaserve
