// One test per class of malformed GGUF input. Each starts from valid writer output, breaks one
// field, and checks the error code and that the message names the field (and offset where the
// field has one).
#include <gtest/gtest.h>

#include <limits>

#include "gguf_test_util.h"

namespace novaserve {
namespace {

using testing::expect_rejected;
using testing::find_unique;
using testing::poke;
using testing::small_writer;
using testing::tensor_fields;

constexpr uint64_t kHuge = uint64_t{1} << 62;

std::vector<uint8_t> small_file() {
  return small_writer().serialize();
}

TEST(GgufReject, SmallFileIsValid) {
  const auto buf = small_file();
  auto f = GgufFile::parse(buf.data(), buf.size());
  ASSERT_TRUE(f.ok()) << f.error().message;
}

TEST(GgufReject, EmptyAndTruncatedHeader) {
  expect_rejected({}, ErrorCode::kInvalidInput, {"truncated", "magic", "offset 0"});
  expect_rejected({'G', 'G', 'U', 'F'}, ErrorCode::kInvalidInput, {"truncated", "version"});
  auto buf = small_file();
  buf.resize(12);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"truncated", "tensor count", "offset 8"});
}

TEST(GgufReject, BadMagic) {
  auto buf = small_file();
  buf[3] = 'X';
  expect_rejected(buf, ErrorCode::kInvalidInput, {"magic", "offset 0"});
}

TEST(GgufReject, UnsupportedVersions) {
  for (uint32_t v : {0u, 1u, 4u, 0x03000000u}) {
    SCOPED_TRACE(v);
    auto buf = small_file();
    poke<uint32_t>(buf, 4, v);
    expect_rejected(buf, ErrorCode::kUnsupported, {"version", "offset 4"});
  }
}

TEST(GgufReject, TensorCountTooLarge) {
  auto buf = small_file();
  poke<uint64_t>(buf, 8, kHuge);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor count", "offset 8"});
  // Small enough for the whole file, too large for what follows the metadata.
  buf = small_file();
  poke<uint64_t>(buf, 8, 5);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor"});
}

TEST(GgufReject, KvCountTooLarge) {
  auto buf = small_file();
  poke<uint64_t>(buf, 16, kHuge);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"kv count", "offset 24"});
}

TEST(GgufReject, ArrayLengthTooLarge) {
  auto buf = small_file();
  // key, value type (4), element type (4), then the length.
  const size_t len_pos = find_unique(buf, "test.words") + 10 + 8;
  poke<uint64_t>(buf, len_pos, 1000);  // strings need >= 8 bytes each: cannot fit
  expect_rejected(buf, ErrorCode::kInvalidInput,
                  {"test.words", "array length 1000", "offset " + std::to_string(len_pos)});
}

TEST(GgufReject, StringLengthPastEnd) {
  auto buf = small_file();
  const size_t len_pos = find_unique(buf, "llama") - 8;
  poke<uint64_t>(buf, len_pos, std::numeric_limits<uint64_t>::max());
  expect_rejected(buf, ErrorCode::kInvalidInput,
                  {"general.architecture", "string length", "offset " + std::to_string(len_pos)});
}

TEST(GgufReject, KeyLengthPastEnd) {
  auto buf = small_file();
  const size_t len_pos = find_unique(buf, "test.count") - 8;
  poke<uint64_t>(buf, len_pos, buf.size());
  expect_rejected(buf, ErrorCode::kInvalidInput, {"metadata kv #1", "key length"});
}

TEST(GgufReject, UnknownValueType) {
  auto buf = small_file();
  const size_t type_pos = find_unique(buf, "test.count") + 10;
  poke<uint32_t>(buf, type_pos, 13);
  expect_rejected(buf, ErrorCode::kUnsupported,
                  {"test.count", "value type id 13", "offset " + std::to_string(type_pos)});
}

TEST(GgufReject, UnknownArrayElementType) {
  auto buf = small_file();
  const size_t elem_pos = find_unique(buf, "test.words") + 10 + 4;
  poke<uint32_t>(buf, elem_pos, 99);
  expect_rejected(buf, ErrorCode::kUnsupported, {"test.words", "element type id 99"});
}

TEST(GgufReject, BoolNotZeroOrOne) {
  GgufWriter w;
  w.add("flag.x", gguf_bool(true));
  auto buf = w.serialize();
  const size_t value_pos = find_unique(buf, "flag.x") + 6 + 4;
  buf[value_pos] = 2;
  expect_rejected(buf, ErrorCode::kInvalidInput, {"flag.x", "bool value 2"});
}

void expect_key_rejected(const std::string& key, std::string_view why) {
  SCOPED_TRACE(key);
  GgufWriter w;
  w.add("general.name", gguf_string("ok"));
  w.add(key, gguf_u32(1));
  expect_rejected(w.serialize(), ErrorCode::kInvalidInput, {"metadata kv #1", "key", why});
}

TEST(GgufReject, InvalidKeys) {
  expect_key_rejected("", "empty");
  expect_key_rejected("bad\xff.key", "UTF-8");
  expect_key_rejected("caf\xc3\xa9.key", "invalid character");  // valid UTF-8, not ASCII
  expect_key_rejected("has space", "invalid character");
  expect_key_rejected("a..b", "empty segment");
  expect_key_rejected(".a", "empty segment");
  expect_key_rejected("a.", "empty segment");
}

TEST(GgufReject, LenientKeysAccepted) {
  GgufWriter w;
  w.add("General.Some-Key_2.x", gguf_u32(1));
  w.add("tokenizer.ggml.pre", gguf_string("x"));
  const auto buf = w.serialize();
  auto f = GgufFile::parse(buf.data(), buf.size());
  EXPECT_TRUE(f.ok()) << f.error().message;
}

TEST(GgufReject, DuplicateKey) {
  GgufWriter w;
  w.add("dup.key", gguf_u32(1));
  w.add("dup.key", gguf_string("again"));
  expect_rejected(w.serialize(), ErrorCode::kInvalidInput, {"dup.key", "duplicate key"});
}

TEST(GgufReject, DuplicateTensorName) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor("same", GgmlType::kF32, {1}, {0, 0, 0, 0}).ok());
  ASSERT_TRUE(w.add_tensor("same", GgmlType::kF32, {1}, {0, 0, 0, 0}).ok());
  expect_rejected(w.serialize(), ErrorCode::kInvalidInput, {"same", "duplicate tensor name"});
}

TEST(GgufReject, TensorNameTooLongOrEmpty) {
  GgufWriter w;
  ASSERT_TRUE(w.add_tensor(std::string(65, 'n'), GgmlType::kF32, {1}, {0, 0, 0, 0}).ok());
  expect_rejected(w.serialize(), ErrorCode::kInvalidInput, {"tensor info #0", "64"});
  GgufWriter e;
  ASSERT_TRUE(e.add_tensor("", GgmlType::kF32, {1}, {0, 0, 0, 0}).ok());
  expect_rejected(e.serialize(), ErrorCode::kInvalidInput, {"tensor info #0", "name is empty"});
}

TEST(GgufReject, BadAlignment) {
  struct Case {
    GgufValue value;
    const char* why;
  };
  const Case cases[] = {{gguf_u32(48), "power of two"},
                        {gguf_u32(0), "power of two"},
                        {gguf_u64(32), "expected uint32"},
                        {gguf_string("32"), "expected uint32"}};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.why);
    GgufWriter w;
    w.add("general.alignment", c.value);
    expect_rejected(w.serialize(), ErrorCode::kInvalidInput, {"general.alignment", c.why});
  }
}

TEST(GgufReject, DimCount) {
  for (uint32_t n : {0u, 5u}) {
    auto buf = small_file();
    const auto fields = tensor_fields(buf, "tensor_a", 2);
    poke<uint32_t>(buf, fields.n_dims, n);
    expect_rejected(
        buf, ErrorCode::kInvalidInput,
        {"tensor_a", "n_dims " + std::to_string(n), "offset " + std::to_string(fields.n_dims)});
  }
}

TEST(GgufReject, ZeroDim) {
  auto buf = small_file();
  const auto fields = tensor_fields(buf, "tensor_a", 2);
  poke<uint64_t>(buf, fields.dims + 8, 0);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor_a", "dim 1", "is 0"});
}

TEST(GgufReject, DimProductOverflows) {
  auto buf = small_file();
  const auto fields = tensor_fields(buf, "tensor_a", 2);
  poke<uint64_t>(buf, fields.dims, uint64_t{1} << 40);
  poke<uint64_t>(buf, fields.dims + 8, uint64_t{1} << 40);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor_a", "overflows"});
  // 2^62 f32 elements fit int64 but their 2^64 bytes do not fit uint64.
  buf = small_file();
  poke<uint64_t>(buf, fields.dims, uint64_t{1} << 62);
  poke<uint64_t>(buf, fields.dims + 8, 1);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor_a", "overflows"});
}

TEST(GgufReject, RowNotMultipleOfBlock) {
  auto buf = small_file();
  const auto fields = tensor_fields(buf, "tensor_b", 2);
  poke<uint64_t>(buf, fields.dims, 33);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor_b", "q4_0 block size 32"});
}

TEST(GgufReject, UnknownTensorType) {
  auto buf = small_file();
  const auto fields = tensor_fields(buf, "tensor_b", 2);
  poke<uint32_t>(buf, fields.type, 4);  // ids 4 and 5 (old q4_2/q4_3) were removed from ggml
  expect_rejected(buf, ErrorCode::kUnsupported,
                  {"tensor_b", "tensor type id 4", "offset " + std::to_string(fields.type)});
}

TEST(GgufReject, MisalignedOffset) {
  auto buf = small_file();
  poke<uint64_t>(buf, tensor_fields(buf, "tensor_b", 2).offset, 36);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor_b", "data offset 36", "alignment 32"});
}

TEST(GgufReject, OffsetOutsideFile) {
  auto buf = small_file();
  poke<uint64_t>(buf, tensor_fields(buf, "tensor_b", 2).offset, uint64_t{1} << 40);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor_b", "outside the file"});
}

TEST(GgufReject, OverlappingTensors) {
  auto buf = small_file();
  poke<uint64_t>(buf, tensor_fields(buf, "tensor_b", 2).offset, 0);
  expect_rejected(buf, ErrorCode::kInvalidInput, {"overlaps", "tensor_a", "tensor_b"});
}

TEST(GgufReject, DataShorterThanDeclared) {
  auto buf = small_file();
  buf.resize(buf.size() - 32);  // tensor_b's 36 bytes lose their tail
  expect_rejected(buf, ErrorCode::kInvalidInput, {"tensor_b", "shorter than declared"});
}

GgufValue nested(int depth) {
  GgufValue v = gguf_array(GgufValueType::kUint8, {gguf_u8(1)});
  for (int i = 1; i < depth; ++i) v = gguf_array(GgufValueType::kArray, {v});
  return v;
}

TEST(GgufReject, ArrayNestingDepth) {
  GgufWriter ok;
  ok.add("deep.ok", nested(8));
  const auto ok_buf = ok.serialize();
  auto f = GgufFile::parse(ok_buf.data(), ok_buf.size());
  EXPECT_TRUE(f.ok()) << f.error().message;
  GgufWriter bad;
  bad.add("deep.bad", nested(9));
  expect_rejected(bad.serialize(), ErrorCode::kInvalidInput, {"deep.bad", "nested deeper than 8"});
}

TEST(GgufReject, TooManyArrayItems) {
  GgufWriter w;
  w.add("big.bytes", gguf_array(GgufValueType::kUint8, {gguf_u8(0)}));
  auto buf = w.serialize();
  const size_t len_pos = find_unique(buf, "big.bytes") + 9 + 4 + 4;
  const uint64_t len = (uint64_t{1} << 24) + 1;
  poke<uint64_t>(buf, len_pos, len);
  buf.resize(buf.size() + len);  // the bytes are there: only the item cap can reject it
  expect_rejected(
      buf, ErrorCode::kUnsupported,
      {"big.bytes", "exceeds the limit of 16777216", "offset " + std::to_string(len_pos)});
}

// Every prefix of a valid file that cuts into a declared field or tensor must be rejected, and
// none may crash (run under ASan to make "never reads out of bounds" a checked property).
TEST(GgufReject, EveryTruncationFails) {
  const auto full = small_file();
  auto f = GgufFile::parse(full.data(), full.size());
  ASSERT_TRUE(f.ok());
  const auto& last = f.value()->tensors().back();
  const size_t data_end = f.value()->data_offset() + last.offset + last.nbytes;
  for (size_t n = 0; n < data_end; ++n) {
    // Exactly-sized heap copy so ASan sees any read past the end.
    std::vector<uint8_t> cut(full.begin(), full.begin() + static_cast<long>(n));
    auto r = GgufFile::parse(cut.data(), cut.size());
    ASSERT_FALSE(r.ok()) << "prefix of " << n << " bytes accepted";
    EXPECT_FALSE(r.error().message.empty());
  }
}

}  // namespace
}  // namespace novaserve
