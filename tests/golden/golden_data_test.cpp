// Checks that the committed golden data (tests/golden/data/) loads and is internally consistent:
// the pieces make_golden.py wrote separately (full last logits, top-k lists, greedy ids, gaps)
// must agree with one another. Also checks that the loader rejects malformed files with an error.
#include "golden_data.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <functional>
#include <set>

namespace novaserve::golden {
namespace {

const std::string kDataDir = std::string(NOVASERVE_SOURCE_DIR) + "/tests/golden/data";

// First index of the largest value, the tie rule make_golden.py uses.
int32_t argmax(const std::vector<float>& v) {
  return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

class GoldenDataTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto manifest = load_golden_manifest(kDataDir);
    ASSERT_TRUE(manifest.ok()) << manifest.error().message;
    manifest_ = *manifest;
    auto prompts = load_golden(kDataDir);
    ASSERT_TRUE(prompts.ok()) << prompts.error().message;
    prompts_ = *prompts;
  }
  GoldenManifest manifest_;
  std::vector<GoldenPrompt> prompts_;
};

TEST_F(GoldenDataTest, ManifestDescribesSmolLM2) {
  EXPECT_EQ(manifest_.model_file, "SmolLM2-135M-Instruct.Q4_1.gguf");
  EXPECT_EQ(manifest_.model_sha256.size(), 64u);
  EXPECT_EQ(manifest_.vocab_size, 49152);
  EXPECT_EQ(manifest_.n_layers, 30);
  EXPECT_EQ(manifest_.n_head, 9);
  EXPECT_EQ(manifest_.n_head_kv, 3);
  EXPECT_DOUBLE_EQ(manifest_.rope_theta, 100000.0);
  EXPECT_NEAR(manifest_.rms_norm_eps, 1e-5, 1e-9);
  EXPECT_TRUE(manifest_.tied_embeddings);
  EXPECT_FALSE(manifest_.add_bos);
}

TEST_F(GoldenDataTest, CoversEveryPromptKind) {
  std::set<std::string> names;
  for (const auto& p : prompts_) names.insert(p.name);
  for (const char* kind : {"english", "chinese", "japanese", "emoji", "code", "chat"}) {
    EXPECT_TRUE(names.count(kind)) << "missing prompt " << kind;
  }
  ASSERT_EQ(prompts_.size(), manifest_.prompts.size());
  for (size_t i = 0; i < prompts_.size(); ++i) EXPECT_EQ(prompts_[i].name, manifest_.prompts[i]);
}

TEST_F(GoldenDataTest, ShapesMatchManifest) {
  for (const auto& p : prompts_) {
    SCOPED_TRACE(p.name);
    EXPECT_EQ(p.last_logits.size(), static_cast<size_t>(manifest_.vocab_size));
    EXPECT_EQ(p.greedy_ids.size(), static_cast<size_t>(manifest_.n_greedy));
    EXPECT_EQ(p.add_bos, manifest_.add_bos);
    for (const auto& row : p.position_topk) {
      EXPECT_EQ(row.size(), static_cast<size_t>(manifest_.position_topk));
    }
    for (const auto& row : p.greedy_topk) {
      EXPECT_EQ(row.size(), static_cast<size_t>(manifest_.greedy_topk));
    }
  }
}

TEST_F(GoldenDataTest, FirstGreedyTokenIsArgmaxOfLastLogits) {
  for (const auto& p : prompts_) {
    SCOPED_TRACE(p.name);
    ASSERT_FALSE(p.greedy_ids.empty());
    EXPECT_EQ(p.greedy_ids[0], argmax(p.last_logits));
    std::vector<float> sorted = p.last_logits;
    std::partial_sort(sorted.begin(), sorted.begin() + 2, sorted.end(), std::greater<float>());
    EXPECT_EQ(p.top2_gap[0], sorted[0] - sorted[1]);
  }
}

TEST_F(GoldenDataTest, LastPositionTopkIsTopkOfLastLogits) {
  for (const auto& p : prompts_) {
    SCOPED_TRACE(p.name);
    const auto& top = p.position_topk.back();
    std::vector<float> sorted = p.last_logits;
    std::sort(sorted.begin(), sorted.end(), std::greater<float>());
    for (size_t r = 0; r < top.size(); ++r) {
      EXPECT_EQ(top[r].logit, p.last_logits[top[r].id]) << "rank " << r;
      EXPECT_EQ(top[r].logit, sorted[r]) << "rank " << r;
    }
  }
}

TEST_F(GoldenDataTest, TopkRowsAreSortedWithDistinctIds) {
  for (const auto& p : prompts_) {
    SCOPED_TRACE(p.name);
    for (const auto* rows : {&p.position_topk, &p.greedy_topk}) {
      for (const auto& row : *rows) {
        std::set<int32_t> ids;
        for (size_t r = 0; r < row.size(); ++r) {
          ids.insert(row[r].id);
          if (r > 0) {
            EXPECT_GE(row[r - 1].logit, row[r].logit);
          }
        }
        EXPECT_EQ(ids.size(), row.size());
      }
    }
  }
}

TEST_F(GoldenDataTest, GreedyStepsAgreeWithTheirTopk) {
  for (const auto& p : prompts_) {
    SCOPED_TRACE(p.name);
    for (size_t i = 0; i < p.greedy_ids.size(); ++i) {
      const auto& top = p.greedy_topk[i];
      ASSERT_GE(top.size(), 2u);
      EXPECT_EQ(top[0].id, p.greedy_ids[i]) << "step " << i;
      EXPECT_EQ(p.top2_gap[i], top[0].logit - top[1].logit) << "step " << i;
      EXPECT_GE(p.top2_gap[i], 0.0f);
    }
    // Step 0 decodes from the last prompt position, so both lists describe the same logits.
    for (size_t r = 0; r < p.greedy_topk[0].size(); ++r) {
      EXPECT_EQ(p.greedy_topk[0][r].id, p.position_topk.back()[r].id);
      EXPECT_EQ(p.greedy_topk[0][r].logit, p.position_topk.back()[r].logit);
    }
  }
}

TEST_F(GoldenDataTest, NoBosAddedAndChatUsesImStart) {
  constexpr int32_t kImStart = 1;  // <|im_start|>, also SmolLM2's bos_token_id
  for (const auto& p : prompts_) {
    SCOPED_TRACE(p.name);
    const bool starts_with_special = p.text.rfind("<|im_start|>", 0) == 0;
    EXPECT_EQ(p.prompt_ids[0] == kImStart, starts_with_special);
  }
}

// --- loader robustness: malformed data gives an error, never a crash ---

class GoldenLoaderErrorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ =
        std::filesystem::temp_directory_path() /
        ("novaserve_golden_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
         "_" + ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    for (const char* f : {"manifest.json", "english.json", "english.last_logits.f32"}) {
      std::filesystem::copy_file(std::filesystem::path(kDataDir) / f, dir_ / f);
    }
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& file, const std::string& bytes) {
    std::ofstream(dir_ / file, std::ios::binary | std::ios::trunc) << bytes;
  }
  std::filesystem::path dir_;
};

TEST_F(GoldenLoaderErrorTest, CopiedPromptLoads) {
  auto p = load_golden_prompt(dir_.string(), "english");
  ASSERT_TRUE(p.ok()) << p.error().message;
  EXPECT_EQ(p->text, "The capital of France is");
}

TEST_F(GoldenLoaderErrorTest, MissingDirectoryIsNotFound) {
  auto r = load_golden((dir_ / "absent").string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kNotFound);
}

TEST_F(GoldenLoaderErrorTest, MalformedManifestIsInvalidInput) {
  write("manifest.json", "{\"format_version\": 1, \"vocab_size\": ");
  auto r = load_golden_manifest(dir_.string());
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
}

TEST_F(GoldenLoaderErrorTest, MistypedFieldIsInvalidInput) {
  write("english.json", "{\"format_version\": 1, \"name\": \"english\", \"text\": 5}");
  auto r = load_golden_prompt(dir_.string(), "english");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
}

TEST_F(GoldenLoaderErrorTest, TruncatedLogitsFileIsInvalidInput) {
  write("english.last_logits.f32", std::string(100, '\0'));
  auto r = load_golden_prompt(dir_.string(), "english");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("expected 196608"), std::string::npos) << r.error().message;
}

TEST_F(GoldenLoaderErrorTest, PathLikePromptNameIsRefused) {
  auto r = load_golden_prompt(dir_.string(), "../english");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
}

}  // namespace
}  // namespace novaserve::golden
