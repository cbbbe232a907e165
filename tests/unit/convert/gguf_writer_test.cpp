// GgufWriter output read back through GgufFile: every value type, nested arrays, alignment,
// tensor data, and the typed getters.
#include "convert/gguf_writer.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "../gguf/gguf_test_util.h"

namespace novaserve {
namespace {

std::unique_ptr<GgufFile> parse_ok(const std::vector<uint8_t>& buf) {
  auto r = GgufFile::parse(buf.data(), buf.size());
  EXPECT_TRUE(r.ok()) << r.error().message;
  return r.ok() ? std::move(r.value()) : nullptr;
}

GgufWriter all_types_writer() {
  GgufWriter w;
  w.add("t.u8", gguf_u8(250));
  w.add("t.i8", gguf_i8(-100));
  w.add("t.u16", gguf_u16(65000));
  w.add("t.i16", gguf_i16(-32000));
  w.add("t.u32", gguf_u32(4000000000u));
  w.add("t.i32", gguf_i32(-2000000000));
  w.add("t.u64", gguf_u64(std::numeric_limits<uint64_t>::max()));
  w.add("t.i64", gguf_i64(std::numeric_limits<int64_t>::min()));
  w.add("t.f32", gguf_f32(0.15625f));
  w.add("t.f64", gguf_f64(-1e300));
  w.add("t.yes", gguf_bool(true));
  w.add("t.no", gguf_bool(false));
  w.add("t.str", gguf_string("h\xc3\xa9llo"));
  w.add("t.empty_str", gguf_string(""));
  w.add("t.ints", gguf_array(GgufValueType::kInt32, {gguf_i32(1), gguf_i32(-2), gguf_i32(3)}));
  w.add("t.empty_arr", gguf_array(GgufValueType::kFloat32, {}));
  w.add("t.nested", gguf_array(GgufValueType::kArray,
                               {gguf_string_array({"a"}), gguf_string_array({"b", "c"})}));
  return w;
}

TEST(GgufWriter, RoundTripsEveryValueType) {
  auto f = parse_ok(all_types_writer().serialize());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 3u);
  ASSERT_EQ(f->metadata().size(), 17u);
  EXPECT_EQ(f->metadata()[0].key, "t.u8");  // file order kept
  EXPECT_EQ(f->get_int("t.u8").value(), 250);
  EXPECT_EQ(f->find("t.u8")->type, GgufValueType::kUint8);
  EXPECT_EQ(f->get_int("t.i8").value(), -100);
  EXPECT_EQ(f->get_int("t.u16").value(), 65000);
  EXPECT_EQ(f->get_int("t.i16").value(), -32000);
  EXPECT_EQ(f->get_int("t.u32").value(), 4000000000);
  EXPECT_EQ(f->get_int("t.i32").value(), -2000000000);
  EXPECT_EQ(std::get<uint64_t>(f->find("t.u64")->v), std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(f->get_int("t.i64").value(), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(f->get_float("t.f32").value(), 0.15625);
  EXPECT_EQ(f->get_float("t.f64").value(), -1e300);
  EXPECT_TRUE(f->get_bool("t.yes").value());
  EXPECT_FALSE(f->get_bool("t.no").value());
  EXPECT_EQ(f->get_string("t.str").value(), "h\xc3\xa9llo");
  EXPECT_EQ(f->get_string("t.empty_str").value(), "");
  const auto* ints = f->get_array("t.ints").value();
  ASSERT_EQ(ints->items.size(), 3u);
  EXPECT_EQ(ints->items[1].as_int(), -2);
  EXPECT_TRUE(f->get_array("t.empty_arr").value()->items.empty());
  EXPECT_EQ(f->get_array("t.empty_arr").value()->elem_type, GgufValueType::kFloat32);
  const auto* nested = f->get_array("t.nested").value();
  ASSERT_EQ(nested->items.size(), 2u);
  ASSERT_EQ(nested->items[1].as_array().items.size(), 2u);
  EXPECT_EQ(nested->items[1].as_array().items[1].as_string(), "c");
  EXPECT_TRUE(f->tensors().empty());
}

TEST(GgufWriter, GettersReportMissingAndWrongTypes) {
  auto f = parse_ok(all_types_writer().serialize());
  ASSERT_NE(f, nullptr);
  auto missing = f->get_int("t.absent");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_NE(missing.error().message.find("t.absent"), std::string::npos);

  auto wrong = f->get_int("t.str");
  ASSERT_FALSE(wrong.ok());
  EXPECT_EQ(wrong.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(wrong.error().message.find("t.str"), std::string::npos);
  EXPECT_NE(wrong.error().message.find("string"), std::string::npos);
  EXPECT_NE(wrong.error().message.find("integer"), std::string::npos);

  EXPECT_FALSE(f->get_string("t.u32").ok());
  EXPECT_FALSE(f->get_bool("t.u8").ok());
  EXPECT_FALSE(f->get_int("t.f32").ok());
  EXPECT_FALSE(f->get_array("t.str").ok());
  EXPECT_EQ(f->get_float("t.i32").value(), -2000000000.0);  // integers widen to double
  auto too_big = f->get_int("t.u64");
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.error().message.find("int64"), std::string::npos);
}

TEST(GgufWriter, TensorsAndDefaultAlignment) {
  const auto buf = testing::small_writer().serialize();
  auto f = parse_ok(buf);
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->alignment(), 32u);
  EXPECT_EQ(f->data_offset() % 32, 0u);
  ASSERT_EQ(f->tensors().size(), 2u);
  const auto& b = f->tensors()[1];
  EXPECT_EQ(b.name, "tensor_b");
  EXPECT_EQ(b.type, GgmlType::kQ4_0);
  EXPECT_EQ(b.dims, (std::vector<uint64_t>{32, 2}));
  EXPECT_EQ(b.nbytes, 36u);
  EXPECT_EQ(b.offset, 32u);  // tensor_a's 32 bytes, already aligned
  const auto expect = testing::pattern_bytes(36, 9);
  EXPECT_EQ(std::vector<uint8_t>(f->tensor_data(b), f->tensor_data(b) + b.nbytes), expect);
}

TEST(GgufWriter, CustomAlignmentAndVersion2) {
  GgufWriter w(2);
  w.set_alignment(256);
  ASSERT_TRUE(w.add_tensor("x", GgmlType::kF16, {3}, testing::pattern_bytes(6, 0)).ok());
  ASSERT_TRUE(w.add_tensor("y", GgmlType::kI8, {5, 1, 1, 2}, testing::pattern_bytes(10, 3)).ok());
  auto f = parse_ok(w.serialize());
  ASSERT_NE(f, nullptr);
  EXPECT_EQ(f->version(), 2u);
  EXPECT_EQ(f->alignment(), 256u);
  EXPECT_EQ(f->data_offset() % 256, 0u);
  EXPECT_EQ(f->find_tensor("y")->offset, 256u);
  EXPECT_EQ(f->find_tensor("y")->n_elements(), 10u);
}

TEST(GgufWriter, RejectsTensorsThatDoNotMatchTheirData) {
  GgufWriter w;
  auto wrong_size = w.add_tensor("a", GgmlType::kF32, {4}, testing::pattern_bytes(15, 0));
  ASSERT_FALSE(wrong_size.ok());
  EXPECT_NE(wrong_size.error().message.find("'a'"), std::string::npos);
  EXPECT_FALSE(w.add_tensor("b", GgmlType::kQ4_1, {31}, testing::pattern_bytes(20, 0)).ok());
  EXPECT_FALSE(w.add_tensor("c", GgmlType::kF32, {}, {}).ok());
  EXPECT_FALSE(
      w.add_tensor("d", GgmlType::kF32, {1, 1, 1, 1, 1}, testing::pattern_bytes(4, 0)).ok());
  EXPECT_FALSE(w.add_tensor("e", GgmlType::kF32, {2, 0}, {}).ok());
}

TEST(GgufWriter, WriteFileMatchesSerialize) {
  const auto w = testing::small_writer();
  const auto path = std::filesystem::temp_directory_path() /
                    ("novaserve_gguf_writer_" + std::to_string(::getpid()) + ".gguf");
  ASSERT_TRUE(w.write_file(path.string()).ok());
  {
    auto f = GgufFile::open(path.string());
    ASSERT_TRUE(f.ok()) << f.error().message;
    EXPECT_EQ(f.value()->file_size(), w.serialize().size());
    EXPECT_EQ(f.value()->tensors().size(), 2u);
  }
  std::filesystem::remove(path);
  EXPECT_FALSE(w.write_file("/nonexistent/dir/x.gguf").ok());
}

TEST(GgufValue, ToStringAbbreviatesLongArrays) {
  std::vector<GgufValue> items;
  for (int i = 0; i < 100; ++i) items.push_back(gguf_u32(static_cast<uint32_t>(i)));
  const auto s = gguf_value_to_string(gguf_array(GgufValueType::kUint32, items), 3);
  EXPECT_EQ(s, "[0, 1, 2, ...] (100 items)");
  EXPECT_EQ(gguf_value_to_string(gguf_string("a\"b\n\x01")), "\"a\\\"b\\n\\x01\"");
  EXPECT_EQ(gguf_value_to_string(gguf_bool(true)), "true");
  EXPECT_EQ(gguf_value_to_string(gguf_i16(-5)), "-5");
}

}  // namespace
}  // namespace novaserve
