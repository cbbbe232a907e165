// Portable matmul kernels (no SIMD intrinsics; the compiler may vectorize the integer loops).
#include <algorithm>
#include <cstring>

#include "backend/cpu/matmul_kernels.h"
#include "quant/blocks.h"
#include "quant/dequantize.h"
#include "quant/half.h"

namespace novaserve::cpu_detail {
namespace {

constexpr int kRowTile = 4;  // activation rows sharing one decoded weight block

// ---- Exact mode: decode a chunk of the weight row (the dequantize_row arithmetic, so the
// weights are bit-identical to the reference), then f32 multiply-add into 8 lane accumulators
// per (row, column); lanes are combined in a fixed order at the end.
void exact_generic(const MatmulArgs& a, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  const GgmlTypeTraits t = ggml_type_traits(a.wtype);
  const DequantizeBlocksFn deq = dequantize_blocks_fn(a.wtype);
  const int chunk = std::max<int>(static_cast<int>(t.block_elems), 32);
  const int blocks_per_chunk = chunk / static_cast<int>(t.block_elems);
  const size_t chunk_bytes = static_cast<size_t>(blocks_per_chunk) * t.block_bytes;
  alignas(32) float buf[256];
  for (int64_t rg = r0; rg < r1; rg += kRowTile) {
    const int rows = static_cast<int>(std::min<int64_t>(kRowTile, r1 - rg));
    for (int64_t o = o0; o < o1; ++o) {
      const uint8_t* wrow = a.w + static_cast<size_t>(o) * a.w_row_bytes;
      float acc[kRowTile][8] = {};
      for (int64_t k = 0; k < a.in; k += chunk) {
        deq(wrow + static_cast<size_t>(k / chunk) * chunk_bytes, buf, blocks_per_chunk);
        for (int r = 0; r < rows; ++r) {
          const float* x = a.x + (rg + r) * a.in + k;
          for (int i = 0; i < chunk; ++i) acc[r][i % 8] = acc[r][i % 8] + buf[i] * x[i];
        }
      }
      for (int r = 0; r < rows; ++r) a.y[(rg + r) * a.out + o] = sum8_fixed(acc[r]);
    }
  }
}

// ---- Q8 mode: each weight block is decoded to integer codes w (int16) plus, per 32 values, a
// float scale and (for affine formats) an offset, such that weight = scale * w + offset.
// Per 32-block: acc += (scale * xd) * sum(w * xq) [+ offset * xs], in that order.

struct UnpackQ8_0 {
  static constexpr int kElems = 32, kBytes = 34;
  static constexpr bool kOffset = false;
  static void unpack(const uint8_t* p, int16_t* w, float* d, float* /*m*/) {
    const auto* b = reinterpret_cast<const BlockQ8_0*>(p);
    for (int i = 0; i < 32; ++i) w[i] = b->qs[i];
    d[0] = fp16_to_f32(b->d);
  }
};

template <bool kAffine, int kBits>
struct UnpackLegacy {  // Q4_0 (false, 4), Q4_1 (true, 4), Q5_0 (false, 5), Q5_1 (true, 5)
  static constexpr int kElems = 32;
  static constexpr int kBytes = kBits == 4 ? (kAffine ? 20 : 18) : (kAffine ? 24 : 22);
  static constexpr bool kOffset = kAffine;
  static void unpack(const uint8_t* p, int16_t* w, float* d, float* m) {
    uint16_t dh, mh = 0;
    std::memcpy(&dh, p, 2);
    if (kAffine) std::memcpy(&mh, p + 2, 2);
    const int header = kAffine ? 4 : 2;
    uint32_t qh = 0;
    if (kBits == 5) std::memcpy(&qh, p + header, 4);
    const uint8_t* qs = p + header + (kBits == 5 ? 4 : 0);
    const int bias = kAffine ? 0 : (1 << (kBits - 1));
    for (int j = 0; j < 16; ++j) {
      int lo = qs[j] & 0xf, hi = qs[j] >> 4;
      if (kBits == 5) {
        lo |= static_cast<int>((qh >> j) & 1u) << 4;
        hi |= static_cast<int>((qh >> (j + 16)) & 1u) << 4;
      }
      w[j] = static_cast<int16_t>(lo - bias);
      w[j + 16] = static_cast<int16_t>(hi - bias);
    }
    d[0] = fp16_to_f32(dh);
    if (kAffine) m[0] = fp16_to_f32(mh);
  }
};

template <int kBits>
struct UnpackK45 {  // Q4_K, Q5_K: weight = (d*sc) * q - dmin*m
  static constexpr int kElems = 256, kBytes = kBits == 4 ? 144 : 176;
  static constexpr bool kOffset = true;
  static void unpack(const uint8_t* p, int16_t* w, float* d, float* m) {
    uint16_t dh, mh;
    std::memcpy(&dh, p, 2);
    std::memcpy(&mh, p + 2, 2);
    const uint8_t* scales = p + 4;
    const uint8_t* qh = p + 16;
    const uint8_t* qs = p + 16 + (kBits == 5 ? 32 : 0);
    const float dd = fp16_to_f32(dh), dmin = fp16_to_f32(mh);
    for (int s = 0; s < 8; ++s) {
      int sc, mn;
      k_scale_min(scales, s, &sc, &mn);
      d[s] = dd * static_cast<float>(sc);
      m[s] = -(dmin * static_cast<float>(mn));
      const uint8_t* q = qs + 32 * (s / 2);
      for (int l = 0; l < 32; ++l) {
        int v = (q[l] >> (4 * (s % 2))) & 0xf;
        if (kBits == 5) v |= ((qh[l] >> s) & 1) << 4;
        w[32 * s + l] = static_cast<int16_t>(v);
      }
    }
  }
};

struct UnpackQ6K {  // weight = d * (sc * (q - 32)); the int8 sub-scale is folded into w
  static constexpr int kElems = 256, kBytes = 210;
  static constexpr bool kOffset = false;
  static void unpack(const uint8_t* p, int16_t* w, float* d, float* /*m*/) {
    const auto* b = reinterpret_cast<const BlockQ6K*>(p);
    for (int h = 0; h < 2; ++h) {
      const uint8_t* ql = b->ql + 64 * h;
      const uint8_t* qh = b->qh + 32 * h;
      int16_t* v = w + 128 * h;
      for (int l = 0; l < 32; ++l) {
        v[l] = static_cast<int16_t>(((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32);
        v[l + 32] = static_cast<int16_t>(((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32);
        v[l + 64] = static_cast<int16_t>(((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32);
        v[l + 96] = static_cast<int16_t>(((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32);
      }
    }
    for (int i = 0; i < 256; ++i) w[i] = static_cast<int16_t>(w[i] * b->scales[i / 16]);
    const float dd = fp16_to_f32(b->d);
    for (int s = 0; s < 8; ++s) d[s] = dd;
  }
};

template <class U>
void q8_tile(const MatmulArgs& a, int64_t o0, int64_t o1, int64_t r0, int64_t r1) {
  constexpr int kSubs = U::kElems / 32;
  const int64_t nblk = a.in / U::kElems;
  const int64_t nb32 = a.in / 32;
  int16_t w[U::kElems];
  float dsub[kSubs], msub[kSubs] = {};
  for (int64_t rg = r0; rg < r1; rg += kRowTile) {
    const int rows = static_cast<int>(std::min<int64_t>(kRowTile, r1 - rg));
    for (int64_t o = o0; o < o1; ++o) {
      const uint8_t* wrow = a.w + static_cast<size_t>(o) * a.w_row_bytes;
      float acc[kRowTile] = {};
      for (int64_t blk = 0; blk < nblk; ++blk) {
        U::unpack(wrow + blk * U::kBytes, w, dsub, msub);
        for (int sb = 0; sb < kSubs; ++sb) {
          const int64_t b32 = blk * kSubs + sb;
          for (int r = 0; r < rows; ++r) {
            const int8_t* xq = a.xq + (rg + r) * a.in + 32 * b32;
            int32_t isum = 0;
            for (int i = 0; i < 32; ++i) isum += static_cast<int32_t>(w[32 * sb + i]) * xq[i];
            const int64_t xi = (rg + r) * nb32 + b32;
            acc[r] = acc[r] + (dsub[sb] * a.xd[xi]) * static_cast<float>(isum);
            if (U::kOffset) acc[r] = acc[r] + msub[sb] * a.xs[xi];
          }
        }
      }
      for (int r = 0; r < rows; ++r) a.y[(rg + r) * a.out + o] = acc[r];
    }
  }
}

}  // namespace

Kernel scalar_kernel(GgmlType type, ActQuant mode) {
  if (mode == ActQuant::kQ8) {
    switch (type) {
      case GgmlType::kQ8_0:
        return {q8_tile<UnpackQ8_0>, true, false};
      case GgmlType::kQ4_0:
        return {q8_tile<UnpackLegacy<false, 4>>, true, false};
      case GgmlType::kQ4_1:
        return {q8_tile<UnpackLegacy<true, 4>>, true, false};
      case GgmlType::kQ5_0:
        return {q8_tile<UnpackLegacy<false, 5>>, true, false};
      case GgmlType::kQ5_1:
        return {q8_tile<UnpackLegacy<true, 5>>, true, false};
      case GgmlType::kQ4_K:
        return {q8_tile<UnpackK45<4>>, true, false};
      case GgmlType::kQ5_K:
        return {q8_tile<UnpackK45<5>>, true, false};
      case GgmlType::kQ6_K:
        return {q8_tile<UnpackQ6K>, true, false};
      default:
        break;  // no integer kernel: exact path
    }
  }
  if (dequantize_blocks_fn(type) == nullptr) return {};
  return {exact_generic, false, false};
}

}  // namespace novaserve::cpu_detail
