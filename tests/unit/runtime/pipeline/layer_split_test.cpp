// The pipeline's layer split: --layer-split parsing and validation, and the memory-balanced auto
// split (runtime/pipeline/layer_split.h).
#include "runtime/pipeline/layer_split.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>

#include "../../gguf/gguf_test_util.h"

namespace novaserve {
namespace {

PipelineMemoryModel uniform(int64_t n_layer, uint64_t per_layer) {
  PipelineMemoryModel m;
  m.layer_bytes.assign(static_cast<size_t>(n_layer), per_layer);
  return m;
}

TEST(LayerSplit, ExplicitListIsAcceptedAsGiven) {
  auto s = parse_layer_split("12,12,8", 3, uniform(32, 1));
  ASSERT_TRUE(s.ok()) << s.error().message;
  EXPECT_EQ(*s, (std::vector<int64_t>{12, 12, 8}));
  const auto r = layer_ranges(*s);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[1].first, 12);
  EXPECT_EQ(r[1].last, 24);
  EXPECT_EQ(r[2].last, 32);
}

TEST(LayerSplit, BadListsAreOneLineErrors) {
  const PipelineMemoryModel m = uniform(30, 1);
  for (const char* bad : {"10,10", "20,11", "10,x", "", "10,,20", "0,30", "-1,31", "15,15,0",
                          "99999999999999999999,1", "15, 15"}) {
    auto s = parse_layer_split(bad, 2, m);
    ASSERT_FALSE(s.ok()) << bad;
    EXPECT_EQ(s.error().code, ErrorCode::kInvalidInput);
    EXPECT_EQ(s.error().message.find('\n'), std::string::npos);
    EXPECT_NE(s.error().message.find("--layer-split"), std::string::npos) << s.error().message;
  }
  auto wrong_count = parse_layer_split("10,10,10", 2, m);
  ASSERT_FALSE(wrong_count.ok());
  EXPECT_NE(wrong_count.error().message.find("--pipeline-parallel is 2"), std::string::npos);
  auto sum = parse_layer_split("10,10", 2, m);
  ASSERT_FALSE(sum.ok());
  EXPECT_NE(sum.error().message.find("sum to the model's 30 layers"), std::string::npos);
}

TEST(LayerSplit, MoreStagesThanLayersIsRefused) {
  for (const char* text : {"auto", "1,1,1,1"}) {
    auto s = parse_layer_split(text, 4, uniform(3, 1));
    ASSERT_FALSE(s.ok()) << text;
    EXPECT_NE(s.error().message.find("--pipeline-parallel 4"), std::string::npos)
        << s.error().message;
  }
  EXPECT_FALSE(auto_layer_split(uniform(3, 1), 0).ok());
  EXPECT_TRUE(auto_layer_split(uniform(3, 1), 3).ok());
}

TEST(LayerSplit, AutoSplitsUniformLayersEvenly) {
  auto s = auto_layer_split(uniform(30, 100), 3);
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(*s, (std::vector<int64_t>{10, 10, 10}));
  auto uneven = auto_layer_split(uniform(32, 100), 3);
  ASSERT_TRUE(uneven.ok());
  // 11 + 11 + 10 in some order; the earlier stages take fewer layers among equal maxima.
  EXPECT_EQ(*uneven, (std::vector<int64_t>{10, 11, 11}));
  auto one = auto_layer_split(uniform(7, 1), 1);
  ASSERT_TRUE(one.ok());
  EXPECT_EQ(*one, (std::vector<int64_t>{7}));
}

TEST(LayerSplit, AutoCountsTheEmbeddingAndTheHeadWhereTheyLive) {
  PipelineMemoryModel m = uniform(12, 100);
  m.first_stage_bytes = 300;  // the embedding: three layers' worth on stage 0
  m.last_stage_bytes = 100;   // the head: one layer's worth on the last stage
  m.stage_bytes = 50;
  auto s = auto_layer_split(m, 2);
  ASSERT_TRUE(s.ok());
  // 300 + 5 * 100 = 800 and 100 + 7 * 100 = 800: both stages hold 850 bytes.
  EXPECT_EQ(*s, (std::vector<int64_t>{5, 7}));
  const auto bytes = stage_bytes(m, *s);
  EXPECT_EQ(bytes, (std::vector<uint64_t>{850, 850}));
}

TEST(LayerSplit, AutoMinimisesTheLargestStage) {
  // Every contiguous split of these layers into 3 is tried; the auto split's largest stage is
  // the smallest of them.
  PipelineMemoryModel m;
  m.layer_bytes = {5, 1, 9, 2, 2, 8, 3, 7, 1, 4};
  m.first_stage_bytes = 6;
  m.last_stage_bytes = 3;
  auto s = auto_layer_split(m, 3);
  ASSERT_TRUE(s.ok());
  const auto max_of = [&](const std::vector<int64_t>& split) {
    const auto b = stage_bytes(m, split);
    return *std::max_element(b.begin(), b.end());
  };
  uint64_t best = UINT64_MAX;
  for (int64_t a = 1; a <= 8; ++a) {
    for (int64_t b = 1; a + b <= 9; ++b) best = std::min(best, max_of({a, b, 10 - a - b}));
  }
  EXPECT_EQ(max_of(*s), best);
}

TEST(LayerSplit, KvSharesAreEvenAcrossLayers) {
  WeightBytes w;
  w.layer = {10, 10, 10, 10};
  w.embedding = 7;
  w.head = 5;
  w.other = 1;
  const PipelineMemoryModel m = pipeline_memory_model(w, 400, 20);
  EXPECT_EQ(m.layer_bytes, (std::vector<uint64_t>{110, 110, 110, 110}));
  EXPECT_EQ(m.first_stage_bytes, 7u);
  EXPECT_EQ(m.last_stage_bytes, 5u);
  EXPECT_EQ(m.stage_bytes, 21u);
}

TEST(LayerSplit, WeightBytesOfTheDefaultModelAddUp) {
  const std::string path = testing::default_model_path();
  if (!std::filesystem::exists(path)) GTEST_SKIP() << "default model absent: tools/fetch_model.sh";
  auto file = GgufFile::open(path);
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto config = ModelConfig::from_gguf(**file);
  ASSERT_TRUE(config.ok());
  auto w = weight_bytes(**file, *config);
  ASSERT_TRUE(w.ok()) << w.error().message;
  ASSERT_EQ(static_cast<int64_t>(w->layer.size()), config->n_layer);
  uint64_t total = 0;
  for (const auto& t : (*file)->tensors()) total += t.nbytes;
  uint64_t sum = w->embedding + w->other;
  for (uint64_t b : w->layer) {
    EXPECT_EQ(b, w->layer[0]);  // every SmolLM2 block has the same tensors
    sum += b;
  }
  const bool tied = (*file)->find_tensor("output.weight") == nullptr;
  // A tied head counts the embedding again (the last stage reads it too).
  EXPECT_EQ(sum + w->head - (tied ? w->embedding : 0), total);
}

}  // namespace
}  // namespace novaserve
