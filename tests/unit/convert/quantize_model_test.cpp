// quantize_model on a small synthetic GGUF: chosen types, values within the formats' bounds,
// copied metadata and tensors, and the error cases (no partial output is ever left behind).
#include "convert/quantize_model.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "convert/gguf_writer.h"
#include "gguf/gguf_file.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/half.h"
#include "quant/quantize.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;

class QuantizeModelTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("quantize_model_test_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    in_ = (dir_ / "in.gguf").string();
  }
  void TearDown() override { fs::remove_all(dir_); }

  // f32 source values of a [rows x cols] matrix.
  std::vector<float> values(uint64_t cols, uint64_t rows, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> d(0.0f, 0.5f);
    std::vector<float> v(cols * rows);
    for (auto& x : v) x = d(rng);
    return v;
  }
  void add(GgufWriter& w, const std::string& name, GgmlType type, std::vector<uint64_t> dims,
           const std::vector<float>& v) {
    const uint64_t rows = v.size() / dims[0];
    const uint64_t row_bytes = *ggml_row_bytes(type, dims[0]);
    std::vector<uint8_t> bytes(row_bytes * rows);
    for (uint64_t r = 0; r < rows; ++r) {
      ASSERT_TRUE(quantize_row(type, v.data() + r * dims[0], bytes.data() + r * row_bytes,
                               static_cast<int64_t>(dims[0]))
                      .ok());
    }
    ASSERT_TRUE(w.add_tensor(name, type, std::move(dims), std::move(bytes)).ok()) << name;
  }

  // A tied two-layer-ish model: an f32 embedding, matrices of several input types, a norm, and
  // a matrix with 48-wide rows that no 32-block format fits.
  void write_model(float poison = 0.0f) {
    GgufWriter w;
    w.add("general.architecture", gguf_string("llama"));
    w.add("general.file_type", gguf_u32(0));
    w.add("custom.note", gguf_string("kept"));
    add(w, "token_embd.weight", GgmlType::kF32, {64, 10}, values(64, 10, 1));
    auto q = values(64, 8, 2);
    q[5] += poison;
    add(w, "blk.0.attn_q.weight", GgmlType::kF32, {64, 8}, q);
    add(w, "blk.0.attn_k.weight", GgmlType::kF32, {48, 4}, values(48, 4, 3));
    add(w, "blk.0.ffn_up.weight", GgmlType::kF16, {64, 16}, values(64, 16, 4));
    add(w, "blk.0.ffn_down.weight", GgmlType::kQ8_0, {64, 4}, values(64, 4, 5));
    add(w, "blk.0.attn_norm.weight", GgmlType::kF32, {64}, values(64, 1, 6));
    ASSERT_TRUE(w.write_file(in_).ok());
  }

  QuantizePolicy policy(GgmlType base, std::vector<std::string> rules = {}) {
    QuantizePolicyOptions o;
    o.base_type = base;
    o.tensor_types = std::move(rules);
    auto p = QuantizePolicy::create(o);
    EXPECT_TRUE(p.ok());
    return std::move(p.value());
  }

  // Files in the test directory other than the input.
  std::vector<std::string> other_files() {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_)) {
      if (e.path().filename() != "in.gguf") names.push_back(e.path().filename().string());
    }
    return names;
  }

  fs::path dir_;
  std::string in_;
};

std::vector<float> dequantized(const GgufFile& f, const GgufTensorInfo& t) {
  std::vector<float> v(t.n_elements());
  EXPECT_TRUE(
      dequantize_row(t.type, f.tensor_data(t), v.data(), static_cast<int64_t>(v.size())).ok());
  return v;
}

// Largest |x - x'| allowed in a block of `type` by quantize_row's documented bounds, from the
// block's decoded scale (plus a little for f32 rounding).
double block_bound(GgmlType type, const uint8_t* block) {
  switch (type) {
    case GgmlType::kQ8_0:
      return 0.5 * fp16_to_f32(reinterpret_cast<const BlockQ8_0*>(block)->d) + 1e-6;
    case GgmlType::kQ4_0:
      return std::fabs(fp16_to_f32(reinterpret_cast<const BlockQ4_0*>(block)->d)) + 1e-6;
    default:
      ADD_FAILURE() << "no bound for this type";
      return 0.0;
  }
}

TEST_F(QuantizeModelTest, ConvertsPerPolicyWithinFormatBounds) {
  write_model();
  const std::string out = (dir_ / "out.gguf").string();
  auto r = quantize_model(in_, out, policy(GgmlType::kQ4_0, {"ffn_up=q8_0"}), {});
  ASSERT_TRUE(r.ok()) << r.error().message;

  auto in_file = GgufFile::open(in_);
  auto out_file = GgufFile::open(out);
  ASSERT_TRUE(in_file.ok() && out_file.ok());
  const GgufFile& a = **in_file;
  const GgufFile& b = **out_file;
  EXPECT_EQ(r->out_file_bytes, b.file_size());
  EXPECT_EQ(r->in_file_bytes, a.file_size());

  struct Expect {
    const char* name;
    GgmlType type;
  };
  // token_embd is the tied output: q6_k by default, which falls back to q8_0 for 64-wide rows.
  const Expect expect[] = {
      {"token_embd.weight", GgmlType::kQ8_0},    {"blk.0.attn_q.weight", GgmlType::kQ4_0},
      {"blk.0.attn_k.weight", GgmlType::kF16},  // 48: no q4_0 block fits
      {"blk.0.ffn_up.weight", GgmlType::kQ8_0},  {"blk.0.ffn_down.weight", GgmlType::kQ4_0},
      {"blk.0.attn_norm.weight", GgmlType::kF32}};
  ASSERT_EQ(b.tensors().size(), 6u);
  for (size_t i = 0; i < 6; ++i) {
    const auto& t = b.tensors()[i];
    EXPECT_EQ(t.name, expect[i].name);
    EXPECT_EQ(t.type, expect[i].type) << t.name;
    EXPECT_EQ(t.dims, a.tensors()[i].dims) << t.name;
    EXPECT_EQ(r->tensors[i].out_type, t.type) << t.name;
  }
  EXPECT_FALSE(r->tensors[2].warning.empty());
  EXPECT_EQ(r->tensors[2].requested_type, GgmlType::kQ4_0);

  for (size_t i = 0; i < 6; ++i) {
    const auto& ti = a.tensors()[i];
    const auto& to = b.tensors()[i];
    const std::vector<float> src = dequantized(a, ti);
    const std::vector<float> got = dequantized(b, to);
    ASSERT_EQ(src.size(), got.size());
    if (to.type == ti.type) {
      EXPECT_EQ(std::memcmp(a.tensor_data(ti), b.tensor_data(to), ti.nbytes), 0) << to.name;
      continue;
    }
    // The output equals quantize_row applied to the dequantized input, row by row.
    const uint64_t row = to.dims[0];
    const uint64_t row_bytes = *ggml_row_bytes(to.type, row);
    std::vector<uint8_t> want(to.nbytes);
    for (uint64_t r0 = 0; r0 * row < src.size(); ++r0) {
      ASSERT_TRUE(quantize_row(to.type, src.data() + r0 * row, want.data() + r0 * row_bytes,
                               static_cast<int64_t>(row))
                      .ok());
    }
    EXPECT_EQ(std::memcmp(want.data(), b.tensor_data(to), to.nbytes), 0) << to.name;
    // And each value lies within its format's bound of the source value.
    const auto traits = ggml_type_traits(to.type);
    for (size_t j = 0; j < src.size(); ++j) {
      double bound;
      if (to.type == GgmlType::kF16) {
        bound = std::fabs(src[j]) * 0x1p-11 + 1e-7;
      } else {
        bound =
            block_bound(to.type, b.tensor_data(to) + (j / traits.block_elems) * traits.block_bytes);
      }
      ASSERT_LE(std::fabs(got[j] - src[j]), bound) << to.name << " value " << j;
    }
  }

  // Metadata: same keys in order, file type updated, quantization version added.
  ASSERT_EQ(b.metadata().size(), a.metadata().size() + 1);
  for (size_t i = 0; i < a.metadata().size(); ++i) {
    EXPECT_EQ(b.metadata()[i].key, a.metadata()[i].key);
  }
  EXPECT_EQ(b.get_string("custom.note").value(), "kept");
  EXPECT_EQ(b.get_int("general.file_type").value(), 2);  // LLAMA_FTYPE_MOSTLY_Q4_0
  EXPECT_EQ(b.get_int("general.quantization_version").value(), 2);
  EXPECT_TRUE(other_files() == std::vector<std::string>{"out.gguf"});
}

TEST_F(QuantizeModelTest, SummaryByClass) {
  write_model();
  auto r = quantize_model(in_, (dir_ / "out.gguf").string(), policy(GgmlType::kQ8_0), {});
  ASSERT_TRUE(r.ok()) << r.error().message;
  const auto classes = size_by_class(r->tensors);
  std::vector<std::string> names;
  for (const auto& c : classes) names.push_back(c.name);
  EXPECT_EQ(names, (std::vector<std::string>{"token_embd", "attn_q", "attn_k", "ffn_up", "ffn_down",
                                             "norm"}));
  uint64_t out_sum = 0;
  for (const auto& c : classes) out_sum += c.out_bytes;
  uint64_t want = 0;
  for (const auto& t : r->tensors) want += t.out_bytes;
  EXPECT_EQ(out_sum, want);
  // 64 x 10 f32 embedding -> q8_0: 10 rows of 2 blocks of 34 bytes.
  EXPECT_EQ(classes[0].in_bytes, 64u * 10 * 4);
  EXPECT_EQ(classes[0].out_bytes, 10u * 2 * 34);
  EXPECT_EQ(classes[0].in_types, "f32");
  EXPECT_EQ(classes[0].out_types, "q8_0");
  EXPECT_EQ(tensor_class("blk.7.attn_output.weight"), "attn_output");
  EXPECT_EQ(tensor_class("blk.7.attn_q.bias"), "other");
  EXPECT_EQ(tensor_class("blk.7.attn_qkv.weight"), "attn_qkv");  // phi3
  EXPECT_EQ(tensor_class("blk.7.attn_q_norm.weight"), "norm");   // qwen3
  EXPECT_EQ(tensor_class("rope_factors_long.weight"), "other");
  EXPECT_EQ(tensor_class("output_norm.weight"), "norm");
  EXPECT_EQ(tensor_class("output.weight"), "output");
}

TEST_F(QuantizeModelTest, RejectsOutputEqualToInput) {
  write_model();
  const auto before = fs::file_size(in_);
  auto r = quantize_model(in_, in_, policy(GgmlType::kQ8_0), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  // Another spelling of the same path is caught too.
  auto r2 = quantize_model(in_, (dir_ / "." / "in.gguf").string(), policy(GgmlType::kQ8_0), {});
  ASSERT_FALSE(r2.ok());
  EXPECT_EQ(fs::file_size(in_), before);
  EXPECT_TRUE(other_files().empty());
  ASSERT_TRUE(GgufFile::open(in_).ok());
}

TEST_F(QuantizeModelTest, ReportsUnwritableOutputAndMissingInput) {
  write_model();
  auto r = quantize_model(in_, (dir_ / "no_such_dir" / "out.gguf").string(),
                          policy(GgmlType::kQ8_0), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kIo);
  EXPECT_NE(r.error().message.find("no_such_dir"), std::string::npos) << r.error().message;
  auto dir = quantize_model(in_, dir_.string(), policy(GgmlType::kQ8_0), {});
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.error().code, ErrorCode::kInvalidInput);
  auto missing = quantize_model((dir_ / "nope.gguf").string(), (dir_ / "out.gguf").string(),
                                policy(GgmlType::kQ8_0), {});
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, ErrorCode::kNotFound);
  EXPECT_TRUE(other_files().empty());
}

TEST_F(QuantizeModelTest, FailedConversionLeavesNoOutput) {
  write_model(1e30f);  // a q4_0 scale beyond fp16
  const std::string out = (dir_ / "out.gguf").string();
  auto r = quantize_model(in_, out, policy(GgmlType::kQ4_0), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("blk.0.attn_q.weight"), std::string::npos) << r.error().message;
  EXPECT_TRUE(other_files().empty());
  // An existing OUT survives a failed run unchanged.
  {
    std::FILE* f = std::fopen(out.c_str(), "w");
    std::fputs("old", f);
    std::fclose(f);
  }
  ASSERT_FALSE(quantize_model(in_, out, policy(GgmlType::kQ4_0), {}).ok());
  EXPECT_EQ(fs::file_size(out), 3u);
  EXPECT_TRUE(other_files() == std::vector<std::string>{"out.gguf"});
}

TEST_F(QuantizeModelTest, ProgressReachesTotal) {
  write_model();
  uint64_t last_done = 0, last_total = 0;
  int calls = 0;
  QuantizeModelOptions o;
  o.threads = 2;
  o.progress = [&](uint64_t done, uint64_t total) {
    EXPECT_GE(done, last_done);
    last_done = done;
    last_total = total;
    ++calls;
  };
  ASSERT_TRUE(quantize_model(in_, (dir_ / "out.gguf").string(), policy(GgmlType::kQ8_0), o).ok());
  EXPECT_EQ(calls, 6);
  EXPECT_EQ(last_done, last_total);
  EXPECT_EQ(last_total, 640u + 512 + 192 + 1024 + 256 + 64);
}

}  // namespace
}  // namespace novaserve
