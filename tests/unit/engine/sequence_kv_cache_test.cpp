#include "engine/sequence_kv_cache.h"

#include <gtest/gtest.h>

namespace novaserve {
namespace {

ModelConfig small_config() {
  ModelConfig c;
  c.n_layer = 3;
  c.n_head = 4;
  c.n_head_kv = 2;
  c.head_dim = 8;
  return c;
}

TEST(SequenceKvCacheTest, LayoutIsPagedWithIdentityBlockTable) {
  auto kv = SequenceKvCache::create(small_config(), 40);
  ASSERT_TRUE(kv.ok());
  EXPECT_EQ(kv->capacity(), 40);
  EXPECT_EQ(kv->size(), 0);
  const KvSequenceView v = kv->view();
  // 40 positions round up to 3 blocks of 16.
  ASSERT_EQ(v.n_blocks, 3);
  EXPECT_EQ(v.block_size, 16);
  EXPECT_EQ(v.capacity(), 48);
  for (int32_t b = 0; b < 3; ++b) EXPECT_EQ(v.block_table[b], b);
  EXPECT_EQ(v.layer_stride, 2 * 8 * 48 * 4);  // kv_dim * padded capacity f32 bytes per layer
  const KvLayerView l2 = v.layer(2);
  EXPECT_EQ(l2.k, static_cast<uint8_t*>(v.k) + 2 * v.layer_stride);
  EXPECT_EQ(l2.v, static_cast<uint8_t*>(v.v) + 2 * v.layer_stride);
  EXPECT_EQ(l2.type, GgmlType::kF32);
  EXPECT_EQ(l2.block_table, v.block_table);
  EXPECT_EQ(l2.capacity(), 48);
}

TEST(SequenceKvCacheTest, QuantizedTypesShrinkTheLayer) {
  ModelConfig c = small_config();
  c.head_dim = 64;  // Q8_0/Q4_0 rows need a multiple of 32
  // Per layer and position: 2 KV heads * one row of 64 values.
  const std::pair<GgmlType, int64_t> rows[] = {{GgmlType::kF32, 256},
                                               {GgmlType::kF16, 128},
                                               {GgmlType::kQ8_0, 68},   // 2 blocks of 34 bytes
                                               {GgmlType::kQ4_0, 36}};  // 2 blocks of 18 bytes
  for (const auto& [type, row_bytes] : rows) {
    auto kv = SequenceKvCache::create(c, 16, uint64_t{1} << 30, type);
    ASSERT_TRUE(kv.ok()) << ggml_type_traits(type).name;
    EXPECT_EQ(kv->view().layer_stride, 2 * 16 * row_bytes) << ggml_type_traits(type).name;
    EXPECT_EQ(kv->view().type, type);
  }
  // head_dim 8 cannot be split into 32-value blocks; K-quants are not KV types.
  EXPECT_FALSE(
      SequenceKvCache::create(small_config(), 16, uint64_t{1} << 30, GgmlType::kQ8_0).ok());
  EXPECT_FALSE(SequenceKvCache::create(c, 16, uint64_t{1} << 30, GgmlType::kQ4_K).ok());
}

TEST(SequenceKvCacheTest, AdvanceTracksSizeAndRejectsOverflow) {
  auto kv = SequenceKvCache::create(small_config(), 4);
  ASSERT_TRUE(kv.ok());
  EXPECT_TRUE(kv->advance(3).ok());
  EXPECT_EQ(kv->size(), 3);
  auto st = kv->advance(2);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(kv->size(), 3);
  EXPECT_FALSE(kv->advance(-1).ok());
  EXPECT_TRUE(kv->advance(1).ok());
  kv->clear();
  EXPECT_EQ(kv->size(), 0);
}

TEST(SequenceKvCacheTest, RejectsBadCapacity) {
  EXPECT_FALSE(SequenceKvCache::create(small_config(), 0).ok());
  EXPECT_FALSE(SequenceKvCache::create(small_config(), (int64_t{1} << 31) + 1).ok());
  // 3 layers * 2 (K, V) * 16 floats * 4 bytes = 384 bytes per position, and capacity rounds up
  // to whole blocks of 16: 993 positions take 1008.
  auto big = SequenceKvCache::create(small_config(), 993, /*max_bytes=*/384 * 992);
  ASSERT_FALSE(big.ok());
  EXPECT_NE(big.error().message.find("MiB"), std::string::npos);
  EXPECT_TRUE(SequenceKvCache::create(small_config(), 992, 384 * 992).ok());
}

}  // namespace
}  // namespace novaserve
