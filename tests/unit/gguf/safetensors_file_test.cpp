// SafetensorsFile: valid files parse (including empty and scalar tensors and __metadata__), and
// each kind of corruption is rejected with kInvalidInput and a message naming the problem.
#include "gguf/safetensors_file.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "safetensors_test_writer.h"

namespace novaserve {
namespace {

using testing::make_raw_safetensors;
using testing::make_safetensors;
using testing::st_f32;
using testing::StTensor;

Result<std::unique_ptr<SafetensorsFile>> parse(const std::vector<uint8_t>& bytes) {
  return SafetensorsFile::parse(bytes.data(), bytes.size(), "test.safetensors");
}

// Parses `header` over `data_size` zero bytes and expects an error mentioning `needle`.
void expect_rejected(const std::string& header, size_t data_size, const std::string& needle) {
  const auto bytes = make_raw_safetensors(header, std::vector<uint8_t>(data_size));
  auto r = parse(bytes);
  ASSERT_FALSE(r.ok()) << "accepted: " << header;
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("test.safetensors"), std::string::npos) << r.error().message;
  EXPECT_NE(r.error().message.find(needle), std::string::npos)
      << "message '" << r.error().message << "' lacks '" << needle << "'";
}

std::string entry(const char* name, const char* dtype, const std::string& shape, uint64_t begin,
                  uint64_t end) {
  return "\"" + std::string(name) + "\":{\"dtype\":\"" + dtype + "\",\"shape\":" + shape +
         ",\"data_offsets\":[" + std::to_string(begin) + "," + std::to_string(end) + "]}";
}

TEST(SafetensorsFileTest, ParsesTensorsShapesDataAndMetadata) {
  const std::vector<float> a = {1.0f, -2.0f, 3.5f, 4.0f, 5.0f, 6.0f};
  StTensor b{"b", "BF16", {3}, {1, 2, 3, 4, 5, 6}};
  const auto bytes =
      make_safetensors({st_f32("a", {2, 3}, a), b}, {{"format", "pt"}, {"author", "me"}});
  auto r = parse(bytes);
  ASSERT_TRUE(r.ok()) << r.error().message;
  const SafetensorsFile& f = **r;
  ASSERT_EQ(f.tensors().size(), 2u);
  const SafetensorsTensorInfo* ta = f.find("a");
  ASSERT_NE(ta, nullptr);
  EXPECT_EQ(ta->dtype, SafetensorsDtype::kF32);
  EXPECT_EQ(ta->shape, (std::vector<uint64_t>{2, 3}));
  EXPECT_EQ(ta->n_elements(), 6u);
  EXPECT_EQ(ta->nbytes, 24u);
  std::vector<float> got(6);
  std::memcpy(got.data(), f.tensor_data(*ta), 24);
  EXPECT_EQ(got, a);
  const SafetensorsTensorInfo* tb = f.find("b");
  ASSERT_NE(tb, nullptr);
  EXPECT_EQ(tb->dtype, SafetensorsDtype::kBF16);
  EXPECT_EQ(f.tensor_data(*tb)[5], 6);
  EXPECT_EQ(f.find("c"), nullptr);
  EXPECT_EQ(f.metadata(),
            (std::vector<std::pair<std::string, std::string>>{{"author", "me"}, {"format", "pt"}}));
  EXPECT_EQ(f.data_offset() % 8, 0u);  // the writer pads the header with spaces
}

TEST(SafetensorsFileTest, TensorsAreSortedByOffsetWhateverTheHeaderOrder) {
  const std::string header =
      "{" + entry("second", "U8", "[2]", 2, 4) + "," + entry("first", "U8", "[2]", 0, 2) + "}";
  auto r = parse(make_raw_safetensors(header, {1, 2, 3, 4}));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->tensors()[0].name, "first");
  EXPECT_EQ((*r)->tensors()[1].name, "second");
}

TEST(SafetensorsFileTest, EmptyScalarAndEveryDtypeParse) {
  // Zero-element tensors sit anywhere (even at the end), a scalar has shape [] and 1 element.
  const std::string header =
      "{" + entry("empty", "F16", "[0]", 0, 0) + "," + entry("empty2d", "I64", "[3,0]", 4, 4) +
      "," + entry("scalar", "F32", "[]", 0, 4) + "," + entry("bool", "BOOL", "[1]", 4, 5) + "," +
      entry("f8", "F8_E4M3", "[1]", 5, 6) + "," + entry("f8b", "F8_E5M2", "[1]", 6, 7) + "," +
      entry("i8", "I8", "[1]", 7, 8) + "," + entry("i16", "I16", "[1]", 8, 10) + "," +
      entry("u16", "U16", "[1]", 10, 12) + "," + entry("i32", "I32", "[1]", 12, 16) + "," +
      entry("u32", "U32", "[1]", 16, 20) + "," + entry("f64", "F64", "[1]", 20, 28) + "," +
      entry("u64", "U64", "[1]", 28, 36) + "," + entry("end", "F32", "[0]", 36, 36) + "}";
  auto r = parse(make_raw_safetensors(header, std::vector<uint8_t>(36)));
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->tensors().size(), 14u);
  EXPECT_EQ((*r)->find("scalar")->n_elements(), 1u);
  EXPECT_EQ((*r)->find("empty2d")->n_elements(), 0u);
  EXPECT_EQ((*r)->find("f64")->dtype, SafetensorsDtype::kF64);
}

TEST(SafetensorsFileTest, EmptyHeaderAndNullMetadataParse) {
  EXPECT_TRUE(parse(make_raw_safetensors("{}", {})).ok());
  EXPECT_TRUE(parse(make_raw_safetensors("{\"__metadata__\":null}   ", {})).ok());
}

TEST(SafetensorsFileTest, OpensAFileFromDisk) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("novaserve_st_" + std::to_string(::getpid()) + ".safetensors");
  ASSERT_TRUE(testing::write_bytes(path.string(), make_safetensors({st_f32("w", {2}, {1, 2})})));
  auto r = SafetensorsFile::open(path.string());
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_EQ((*r)->name(), path.string());
  EXPECT_EQ((*r)->find("w")->nbytes, 8u);
  std::filesystem::remove(path);
  auto missing = SafetensorsFile::open(path.string());
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
}

TEST(SafetensorsFileTest, RejectsFileShorterThanTheLengthField) {
  const std::vector<uint8_t> bytes = {2, 0, 0};
  auto r = parse(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("fewer than the 8-byte"), std::string::npos);
}

TEST(SafetensorsFileTest, RejectsHeaderLengthOverTheLimit) {
  auto r = parse(make_raw_safetensors("{}", {}, SafetensorsFile::kMaxHeaderBytes + 1));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("exceeds the limit"), std::string::npos) << r.error().message;
  auto huge = parse(make_raw_safetensors("{}", {}, UINT64_MAX - 1));
  ASSERT_FALSE(huge.ok());
}

TEST(SafetensorsFileTest, RejectsHeaderLengthPastTheEnd) {
  auto r = parse(make_raw_safetensors("{}", {}, 3));
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.error().message.find("past the end"), std::string::npos) << r.error().message;
}

TEST(SafetensorsFileTest, RejectsInvalidUtf8) {
  expect_rejected("{\"a\xff\":{}}", 0, "not valid UTF-8");
  expect_rejected("{\"\xed\xa0\x80\":{}}", 0, "not valid UTF-8");  // a surrogate
}

TEST(SafetensorsFileTest, RejectsNonJson) {
  expect_rejected("{not json}", 0, "not valid JSON");
  expect_rejected("{\"a\":{}", 0, "not valid JSON");  // unterminated
  expect_rejected("{} {}", 0, "not valid JSON");      // trailing garbage
}

TEST(SafetensorsFileTest, RejectsNonObjectHeader) {
  expect_rejected("[1, 2]", 0, "does not start with '{'");
  expect_rejected(" {}", 0, "does not start with '{'");
  expect_rejected("", 0, "does not start with '{'");
}

TEST(SafetensorsFileTest, RejectsDuplicateKeys) {
  expect_rejected("{" + entry("a", "U8", "[1]", 0, 1) + "," + entry("a", "U8", "[1]", 1, 2) + "}",
                  2, "'a' twice");
  expect_rejected(
      "{\"a\":{\"dtype\":\"U8\",\"dtype\":\"U8\",\"shape\":[1],"
      "\"data_offsets\":[0,1]}}",
      1, "'dtype' twice");
}

TEST(SafetensorsFileTest, RejectsUnknownOrNonStringDtype) {
  expect_rejected("{" + entry("w", "F128", "[1]", 0, 16) + "}", 16, "unknown dtype 'F128'");
  expect_rejected("{\"w\":{\"dtype\":4,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
                  "dtype is not a string");
}

TEST(SafetensorsFileTest, RejectsNegativeNonIntegerOrNonArrayShape) {
  expect_rejected("{" + entry("w", "F32", "[-1]", 0, 4) + "}", 4, "not a non-negative integer");
  expect_rejected("{" + entry("w", "F32", "[1.5]", 0, 4) + "}", 4, "not a non-negative integer");
  expect_rejected("{" + entry("w", "F32", "[\"2\"]", 0, 8) + "}", 8, "not a non-negative integer");
  expect_rejected("{" + entry("w", "F32", "4", 0, 16) + "}", 16, "shape is not an array");
}

TEST(SafetensorsFileTest, RejectsShapeOverflow) {
  // 2^32 * 2^32 elements overflow; 2^62 F32 elements overflow in bytes.
  expect_rejected("{" + entry("w", "U8", "[4294967296,4294967296]", 0, 4) + "}", 4,
                  "overflows 64 bits");
  expect_rejected("{" + entry("w", "F32", "[4611686018427387904]", 0, 4) + "}", 4,
                  "overflows 64 bits in bytes");
  // An integer beyond uint64 is parsed as a float by JSON: not an integer.
  expect_rejected("{" + entry("w", "U8", "[18446744073709551616]", 0, 4) + "}", 4,
                  "not a non-negative integer");
}

TEST(SafetensorsFileTest, RejectsSizeMismatch) {
  expect_rejected("{" + entry("w", "F32", "[2]", 0, 4) + "}", 4, "needs 8 bytes");
  expect_rejected("{" + entry("w", "BF16", "[2,2]", 0, 16) + "}", 16, "needs 8 bytes");
}

TEST(SafetensorsFileTest, RejectsBadOffsets) {
  expect_rejected("{" + entry("w", "U8", "[4]", 0, 4) + "}", 3, "end past the data section");
  expect_rejected("{" + entry("w", "U8", "[0]", 4, 2) + "}", 4, "end < begin");
  expect_rejected("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0]}}", 1,
                  "not two non-negative integers");
  expect_rejected("{\"w\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[-1,0]}}", 1,
                  "not two non-negative integers");
}

TEST(SafetensorsFileTest, RejectsOverlap) {
  expect_rejected(
      "{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 4, 12) + "}", 12,
      "tensor 'b' (bytes 4..12) overlaps tensor 'a'");
  // The same range twice is an overlap too.
  expect_rejected("{" + entry("a", "U8", "[2]", 0, 2) + "," + entry("b", "U8", "[2]", 0, 2) + "}",
                  2, "overlaps");
}

TEST(SafetensorsFileTest, RejectsGap) {
  expect_rejected(
      "{" + entry("a", "F32", "[2]", 0, 8) + "," + entry("b", "F32", "[2]", 12, 20) + "}", 20,
      "gap of 4 bytes in the data section before tensor 'b'");
  expect_rejected("{" + entry("a", "F32", "[1]", 4, 8) + "}", 8, "gap of 4 bytes");
}

TEST(SafetensorsFileTest, RejectsTrailingBytes) {
  expect_rejected("{" + entry("a", "F32", "[2]", 0, 8) + "}", 12, "trailing bytes");
  expect_rejected("{}", 1, "trailing bytes");
}

TEST(SafetensorsFileTest, RejectsMissingFieldsAndNonObjectEntries) {
  expect_rejected("{\"w\":{\"shape\":[1],\"data_offsets\":[0,1]}}", 1,
                  "tensor 'w': missing field 'dtype'");
  expect_rejected("{\"w\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, "missing field 'shape'");
  expect_rejected("{\"w\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, "missing field 'data_offsets'");
  expect_rejected("{\"w\":[1,2,3]}", 0, "tensor 'w': entry is not a JSON object");
}

TEST(SafetensorsFileTest, RejectsMalformedMetadata) {
  expect_rejected("{\"__metadata__\":{\"format\":1}}", 0, "__metadata__ value of 'format'");
  expect_rejected("{\"__metadata__\":[\"x\"]}", 0, "__metadata__ is not a JSON object");
}

TEST(SafetensorsFileTest, DtypeTableRoundTrips) {
  for (const char* name : {"BOOL", "U8", "I8", "F8_E4M3", "F8_E5M2", "I16", "U16", "F16", "BF16",
                           "I32", "U32", "F32", "I64", "U64", "F64"}) {
    const auto d = safetensors_dtype_from_name(name);
    ASSERT_TRUE(d.has_value()) << name;
    EXPECT_EQ(safetensors_dtype_name(*d), name);
  }
  EXPECT_EQ(safetensors_dtype_size(SafetensorsDtype::kBF16), 2u);
  EXPECT_EQ(safetensors_dtype_size(SafetensorsDtype::kF64), 8u);
  EXPECT_FALSE(safetensors_dtype_from_name("f32").has_value());  // case matters
}

}  // namespace
}  // namespace novaserve
