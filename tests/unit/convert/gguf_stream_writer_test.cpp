// GgufStreamWriter: its files are byte-identical to GgufWriter's for the same content, whatever
// the write pieces, and misuse is rejected without leaving a partial file.
#include "convert/gguf_stream_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "convert/gguf_writer.h"
#include "gguf/gguf_file.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;

class GgufStreamWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("gguf_stream_" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static std::vector<uint8_t> read(const fs::path& p) {
    std::ifstream f(p, std::ios::binary);
    return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
  }

  fs::path dir_;
};

std::vector<uint8_t> bytes(size_t n, uint8_t seed) {
  std::vector<uint8_t> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = static_cast<uint8_t>(seed * 31 + i * 7);
  return v;
}

std::vector<GgufKv> sample_kvs(uint32_t alignment) {
  std::vector<GgufKv> kvs = {
      {"general.architecture", gguf_string("llama")},
      {"t.ints", gguf_array(GgufValueType::kInt32, {gguf_i32(-1), gguf_i32(7)})},
      {"t.f64", gguf_f64(0.25)},
      {"t.nested", gguf_array(GgufValueType::kArray, {gguf_string_array({"a", "bc"})})},
  };
  if (alignment != 0) kvs.push_back({"general.alignment", gguf_u32(alignment)});
  return kvs;
}

TEST_F(GgufStreamWriterTest, MatchesGgufWriterBytesForAnyWritePieces) {
  // Odd sizes so every tensor needs padding; a 64-byte alignment as well as the default.
  const auto a = bytes(4 * 3 * 5, 1);   // f32 [3, 5]
  const auto b = bytes(18 * 2 * 3, 2);  // q4_0 [64, 3]
  const auto c = bytes(2 * 7, 3);       // f16 [7]
  for (uint32_t alignment : {0u, 64u}) {
    GgufWriter ref;
    for (const auto& kv : sample_kvs(alignment)) ref.add(kv.key, kv.value);
    ASSERT_TRUE(ref.add_tensor("a", GgmlType::kF32, {3, 5}, a).ok());
    ASSERT_TRUE(ref.add_tensor("b", GgmlType::kQ4_0, {64, 3}, b).ok());
    ASSERT_TRUE(ref.add_tensor("c", GgmlType::kF16, {7}, c).ok());
    const std::vector<uint8_t> expected = ref.serialize();

    for (size_t piece : {size_t{1}, size_t{5}, size_t{1000}}) {
      const fs::path p = dir_ / "s.gguf";
      auto w = GgufStreamWriter::create(p.string(), sample_kvs(alignment),
                                        {{"a", GgmlType::kF32, {3, 5}},
                                         {"b", GgmlType::kQ4_0, {64, 3}},
                                         {"c", GgmlType::kF16, {7}}});
      ASSERT_TRUE(w.ok()) << w.error().message;
      EXPECT_EQ((*w)->file_size(), expected.size());
      for (const auto* data : {&a, &b, &c}) {
        for (size_t off = 0; off < data->size(); off += piece) {
          const size_t n = std::min(piece, data->size() - off);
          ASSERT_TRUE((*w)->write(data->data() + off, n).ok());
        }
      }
      EXPECT_EQ((*w)->current_tensor(), 3u);
      ASSERT_TRUE((*w)->finish().ok());
      EXPECT_EQ(read(p), expected) << "alignment " << alignment << ", pieces of " << piece;
      auto f = GgufFile::open(p.string());
      ASSERT_TRUE(f.ok()) << f.error().message;
      EXPECT_EQ((*f)->tensors().size(), 3u);
    }
  }
}

TEST_F(GgufStreamWriterTest, RejectsOverlongWritesAndIncompleteFiles) {
  const fs::path p = dir_ / "bad.gguf";
  {
    auto w = GgufStreamWriter::create(p.string(), sample_kvs(0),
                                      {{"a", GgmlType::kF32, {2}}, {"b", GgmlType::kF32, {1}}});
    ASSERT_TRUE(w.ok());
    const auto data = bytes(12, 4);
    // A write may not span tensors: "a" needs 8 bytes.
    auto st = (*w)->write(data.data(), 12);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(st.error().message.find("'a'"), std::string::npos) << st.error().message;
    ASSERT_TRUE((*w)->write(data.data(), 8).ok());
    st = (*w)->finish();
    ASSERT_FALSE(st.ok());
    EXPECT_NE(st.error().message.find("'b'"), std::string::npos) << st.error().message;
    EXPECT_TRUE(fs::exists(p));
  }
  EXPECT_FALSE(fs::exists(p)) << "an unfinished file must be removed";
}

TEST_F(GgufStreamWriterTest, RejectsBadDeclarationsAndPaths) {
  auto bad_block =
      GgufStreamWriter::create((dir_ / "x.gguf").string(), {}, {{"q", GgmlType::kQ4_0, {33, 2}}});
  ASSERT_FALSE(bad_block.ok());
  EXPECT_EQ(bad_block.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(bad_block.error().message.find("'q'"), std::string::npos);

  EXPECT_FALSE(
      GgufStreamWriter::create((dir_ / "x.gguf").string(), {}, {{"z", GgmlType::kF32, {4, 0}}})
          .ok());
  EXPECT_FALSE(GgufStreamWriter::create((dir_ / "x.gguf").string(), {},
                                        {{std::string(65, 'n'), GgmlType::kF32, {4}}})
                   .ok());
  auto no_dir = GgufStreamWriter::create((dir_ / "missing" / "x.gguf").string(), {},
                                         {{"a", GgmlType::kF32, {1}}});
  ASSERT_FALSE(no_dir.ok());
  EXPECT_EQ(no_dir.error().code, ErrorCode::kIo);
}

}  // namespace
}  // namespace novaserve
