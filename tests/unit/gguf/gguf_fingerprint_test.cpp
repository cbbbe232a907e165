// gguf_fingerprint (gguf/gguf_fingerprint.h): equal for equal content, different for other
// weights of the same shapes or other hyper-parameters, blind to what the forward does not read.
#include "gguf/gguf_fingerprint.h"

#include <gtest/gtest.h>

#include "../model/tiny_model.h"

namespace novaserve {
namespace {

uint64_t fingerprint_of(const testing::TinySpec& spec, const std::string& name = "") {
  GgufWriter w;
  testing::add_tiny_metadata(w, spec);
  if (!name.empty()) w.add("general.name", gguf_string(name));
  testing::add_tiny_tensors(w, spec);
  const testing::TinyFile t = testing::parse_writer(w);
  EXPECT_NE(t.file, nullptr);
  return t.file ? gguf_fingerprint(*t.file) : 0;
}

TEST(GgufFingerprint, FollowsWeightsAndHyperParametersOnly) {
  testing::TinySpec spec;
  const uint64_t base = fingerprint_of(spec);
  EXPECT_EQ(fingerprint_of(spec), base);
  EXPECT_EQ(fingerprint_of(spec, "another name"), base);  // general.* is not read
  testing::TinySpec other_weights = spec;
  other_weights.seed = 2;
  EXPECT_NE(fingerprint_of(other_weights), base);
  testing::TinySpec other_rope = spec;
  other_rope.rope_base = 500000.0f;
  EXPECT_NE(fingerprint_of(other_rope), base);
}

TEST(GgufFingerprint, SeesAChangeInTheMiddleOfALargeTensor) {
  // One byte changed inside the first sampled window between the edges of a tensor larger than
  // the sample.
  GgufWriter a;
  GgufWriter b;
  const uint64_t n = 64 * 1024;
  std::vector<uint8_t> bytes(n, 7);
  for (GgufWriter* w : {&a, &b}) w->add("general.architecture", gguf_string("llama"));
  ASSERT_TRUE(a.add_tensor("t", GgmlType::kF32, {n / 4}, bytes).ok());
  const uint64_t middle = n - 2 * kFingerprintEdgeBytes;
  const uint64_t window =
      kFingerprintEdgeBytes + (middle - kFingerprintWindowBytes) / (kFingerprintWindows + 1);
  bytes[window + 10] = 8;
  ASSERT_TRUE(b.add_tensor("t", GgmlType::kF32, {n / 4}, bytes).ok());
  const testing::TinyFile fa = testing::parse_writer(a);
  const testing::TinyFile fb = testing::parse_writer(b);
  ASSERT_TRUE(fa.file && fb.file);
  EXPECT_NE(gguf_fingerprint(*fa.file), gguf_fingerprint(*fb.file));
}

}  // namespace
}  // namespace novaserve
