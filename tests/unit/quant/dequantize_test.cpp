// Dequantization of hand-built blocks. Expected values are worked out by hand from the format
// definitions (GGUF spec type table / ggml block layouts), written as literals.
#include "quant/dequantize.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "quant/blocks.h"

namespace novaserve {
namespace {

std::vector<float> deq(GgmlType t, const void* p, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n), -999.0f);
  const Status st = dequantize_row(t, p, out.data(), n);
  EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
  return out;
}

TEST(Dequantize, Q4_0) {
  BlockQ4_0 b{};
  b.d = 0x3800;                          // 0.5
  std::memset(b.qs, 0x88, sizeof b.qs);  // code 8 -> 0
  b.qs[0] = 0x1f;                        // elem 0 = 15, elem 16 = 1
  b.qs[15] = 0x0a;                       // elem 15 = 10, elem 31 = 0
  const auto y = deq(GgmlType::kQ4_0, &b, 32);
  EXPECT_EQ(y[0], 3.5f);    // (15 - 8) * 0.5
  EXPECT_EQ(y[16], -3.5f);  // (1 - 8) * 0.5
  EXPECT_EQ(y[15], 1.0f);   // (10 - 8) * 0.5
  EXPECT_EQ(y[31], -4.0f);  // (0 - 8) * 0.5
  EXPECT_EQ(y[5], 0.0f);
}

TEST(Dequantize, Q4_1) {
  BlockQ4_1 b{};
  b.d = 0x3c00;  // 1.0
  b.m = 0xbc00;  // -1.0
  b.qs[3] = 0xa5;
  const auto y = deq(GgmlType::kQ4_1, &b, 32);
  EXPECT_EQ(y[3], 4.0f);   // 5 * 1 - 1
  EXPECT_EQ(y[19], 9.0f);  // 10 * 1 - 1
  EXPECT_EQ(y[0], -1.0f);  // 0 * 1 - 1
  EXPECT_EQ(y[31], -1.0f);
}

TEST(Dequantize, Q5_0) {
  BlockQ5_0 b{};
  b.d = 0x4000;                                    // 2.0
  const uint8_t qh[4] = {0x01, 0x00, 0x02, 0x00};  // bits 0 and 17
  std::memcpy(b.qh, qh, 4);
  b.qs[1] = 0xf3;
  const auto y = deq(GgmlType::kQ5_0, &b, 32);
  EXPECT_EQ(y[0], 0.0f);     // (0 | 16) - 16 = 0
  EXPECT_EQ(y[16], -32.0f);  // (0 - 16) * 2
  EXPECT_EQ(y[1], -26.0f);   // (3 - 16) * 2
  EXPECT_EQ(y[17], 30.0f);   // ((15 | 16) - 16) * 2
}

TEST(Dequantize, Q5_1) {
  BlockQ5_1 b{};
  b.d = 0x3800;                                    // 0.5
  b.m = 0x4200;                                    // 3.0
  const uint8_t qh[4] = {0x00, 0x00, 0x00, 0x80};  // bit 31
  std::memcpy(b.qh, qh, 4);
  b.qs[15] = 0x70;
  const auto y = deq(GgmlType::kQ5_1, &b, 32);
  EXPECT_EQ(y[15], 3.0f);   // 0 * 0.5 + 3
  EXPECT_EQ(y[31], 14.5f);  // (7 | 16) * 0.5 + 3
  EXPECT_EQ(y[30], 3.0f);
}

TEST(Dequantize, Q8_0) {
  BlockQ8_0 b{};
  b.d = 0x3400;  // 0.25
  b.qs[0] = -128;
  b.qs[1] = 127;
  b.qs[31] = 1;
  const auto y = deq(GgmlType::kQ8_0, &b, 32);
  EXPECT_EQ(y[0], -32.0f);
  EXPECT_EQ(y[1], 31.75f);
  EXPECT_EQ(y[31], 0.25f);
  EXPECT_EQ(y[2], 0.0f);
}

TEST(Dequantize, Q2_K) {
  BlockQ2K b{};
  b.d = 0x3c00;        // 1.0
  b.dmin = 0x3400;     // 0.25
  b.scales[0] = 0x23;  // sub 0: scale 3, min 2
  b.scales[3] = 0x1f;  // sub 3: scale 15, min 1
  b.qs[0] = 0xe4;      // 2-bit fields 0,1,2,3 for positions 0, 32, 64, 96
  b.qs[16] = 0x0c;     // bits 2-3 = 3: position 48 (sub-block 3)
  const auto y = deq(GgmlType::kQ2_K, &b, 256);
  EXPECT_EQ(y[0], -0.5f);  // 3 * 0 - 0.25 * 2
  EXPECT_EQ(y[1], -0.5f);
  EXPECT_EQ(y[32], 0.0f);    // sub 2 has scale 0, min 0
  EXPECT_EQ(y[48], 44.75f);  // 15 * 3 - 0.25 * 1
  EXPECT_EQ(y[49], -0.25f);  // 15 * 0 - 0.25
  EXPECT_EQ(y[255], 0.0f);
}

TEST(Dequantize, Q3_K) {
  BlockQ3K b{};
  std::memset(b.hmask, 0xff, sizeof b.hmask);
  b.hmask[0] = 0xfe;  // position 0: high bit clear -> subtract 4
  b.d = 0x4000;       // 2.0
  // sub 0: 6-bit value 40 (scale 8): low nibble of byte 0, top 2 bits in bits 0-1 of byte 8.
  b.scales[0] = 0x08;
  b.scales[8] = 0x02;
  // sub 13: value 20 (scale -12): high nibble of byte 5, top bits in bits 6-7 of byte 9.
  b.scales[5] = 0x40;
  b.scales[9] = 0x40;
  b.qs[0] = 0x03;
  b.qs[48] = 0x20;  // half 1, l = 16, bits 4-5 -> position 128 + 64 + 16 = 208
  const auto y = deq(GgmlType::kQ3_K, &b, 256);
  EXPECT_EQ(y[0], -16.0f);    // 2 * 8 * (3 - 4)
  EXPECT_EQ(y[1], 0.0f);      // 2 * 8 * 0
  EXPECT_EQ(y[208], -48.0f);  // 2 * -12 * 2
  EXPECT_EQ(y[209], -0.0f);   // 2 * -12 * 0
  EXPECT_EQ(y[20], -0.0f);    // sub 1 value 0 -> scale -32, q 0
}

TEST(Dequantize, Q4_KAndQ5_K) {
  BlockQ4K b{};
  b.d = 0x3c00;     // 1.0
  b.dmin = 0x3800;  // 0.5
  b.scales[0] = 2;  // sub 0 scale
  b.scales[4] = 4;  // sub 0 min
  // sub 5: scale 37 = 0b10'0101, min 50 = 0b11'0010.
  b.scales[9] = 0x25;  // low nibbles: scale 5, min 2
  b.scales[1] = 0x80;  // scale top bits 2 (sub 1 scale itself 0)
  b.scales[5] = 0xc0;  // min top bits 3 (sub 1 min 0)
  b.qs[0] = 0x07;      // position 0 (sub 0, low nibble) = 7
  b.qs[64] = 0x30;     // position 160 (sub 5 = high nibbles of qs[64..95]) = 3
  const auto y = deq(GgmlType::kQ4_K, &b, 256);
  EXPECT_EQ(y[0], 12.0f);    // 1 * 2 * 7 - 0.5 * 4
  EXPECT_EQ(y[1], -2.0f);    // 0 - 2
  EXPECT_EQ(y[160], 86.0f);  // 37 * 3 - 0.5 * 50
  EXPECT_EQ(y[161], -25.0f);
  EXPECT_EQ(y[128], 0.0f);  // sub 4 scale/min 0
  EXPECT_EQ(y[40], 0.0f);   // sub 1 scale/min 0

  BlockQ5K c{};
  c.d = b.d;
  c.dmin = b.dmin;
  std::memcpy(c.scales, b.scales, 12);
  std::memcpy(c.qs, b.qs, 128);
  c.qh[0] = 0x21;  // bit 0: position 0 (sub 0); bit 5: position 160 (sub 5)
  const auto z = deq(GgmlType::kQ5_K, &c, 256);
  EXPECT_EQ(z[0], 44.0f);     // 2 * (7 + 16) - 2
  EXPECT_EQ(z[160], 678.0f);  // 37 * (3 + 16) - 25
  EXPECT_EQ(z[161], -25.0f);
}

TEST(Dequantize, Q6_K) {
  BlockQ6K b{};
  b.d = 0x3800;  // 0.5
  b.scales[0] = 3;
  b.scales[4] = 4;
  b.scales[5] = -2;
  b.scales[15] = 1;
  b.ql[0] = 0x21;   // position 0 low nibble 1, position 64 high nibble 2
  b.qh[0] = 0x02;   // position 0 top bits 2; position 64 top bits 0
  b.ql[16] = 0xf0;  // position 80 high nibble 15
  b.qh[16] = 0x30;  // position 80 top bits 3
  b.qh[63] = 0x40;  // position 255 (half 1, l = 31, bits 6-7) top bits 1
  const auto y = deq(GgmlType::kQ6_K, &b, 256);
  EXPECT_EQ(y[0], 1.5f);      // 0.5 * 3 * (33 - 32)
  EXPECT_EQ(y[1], -48.0f);    // 0.5 * 3 * (0 - 32)
  EXPECT_EQ(y[64], -60.0f);   // 0.5 * 4 * (2 - 32)
  EXPECT_EQ(y[80], -31.0f);   // 0.5 * -2 * (63 - 32)
  EXPECT_EQ(y[255], -8.0f);   // 0.5 * 1 * (16 - 32)
  EXPECT_EQ(y[254], -16.0f);  // 0.5 * 1 * (0 - 32)
  EXPECT_EQ(y[20], -0.0f);    // sub 1 scale 0
}

TEST(Dequantize, FloatTypes) {
  const uint16_t h[3] = {0x3c00, 0xc500, 0x0001};  // 1, -5, 2^-24
  auto y = deq(GgmlType::kF16, h, 3);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], -5.0f);
  EXPECT_EQ(y[2], 5.9604644775390625e-08f);
  const uint16_t bf[2] = {0x3f80, 0x4049};  // 1, 3.140625
  y = deq(GgmlType::kBF16, bf, 2);
  EXPECT_EQ(y[0], 1.0f);
  EXPECT_EQ(y[1], 3.140625f);
  const float f[2] = {1.5f, -0.0f};
  y = deq(GgmlType::kF32, f, 2);
  EXPECT_EQ(y[0], 1.5f);
  EXPECT_TRUE(std::signbit(y[1]));
}

TEST(Dequantize, RejectsBadLengthAndType) {
  BlockQ4_0 blocks[2]{};
  float out[64];
  Status st = dequantize_row(GgmlType::kQ4_0, blocks, out, 33);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  st = dequantize_row(GgmlType::kQ4_K, blocks, out, 32);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  st = dequantize_row(GgmlType::kQ4_0, blocks, out, -32);
  EXPECT_FALSE(st.ok());
  st = dequantize_row(GgmlType::kI32, blocks, out, 4);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  st = dequantize_row(static_cast<GgmlType>(99), blocks, out, 4);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kUnsupported);
  EXPECT_TRUE(dequantize_row(GgmlType::kQ4_0, blocks, out, 0).ok());
}

}  // namespace
}  // namespace novaserve
