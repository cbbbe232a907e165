#include "convert/hf_tensor_convert.h"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "quant/half.h"

namespace novaserve {
namespace {

constexpr uint64_t kChunkBytes = uint64_t{1} << 20;

// The safetensors dtype whose bytes are already those of `t`, so rows can be copied verbatim.
bool same_encoding(SafetensorsDtype d, GgmlType t) {
  return (d == SafetensorsDtype::kF32 && t == GgmlType::kF32) ||
         (d == SafetensorsDtype::kF16 && t == GgmlType::kF16) ||
         (d == SafetensorsDtype::kBF16 && t == GgmlType::kBF16);
}

void f32_to_out(GgmlType t, const float* src, uint8_t* dst, int64_t n) {
  if (t == GgmlType::kF32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint16_t h = t == GgmlType::kF16 ? f32_to_fp16(src[i]) : f32_to_bf16(src[i]);
    std::memcpy(dst + 2 * i, &h, 2);
  }
}

}  // namespace

int64_t qk_source_row(int64_t row, int64_t head_dim) {
  const int64_t head = row / head_dim;
  const int64_t j = row % head_dim;
  return head * head_dim + (j % 2) * (head_dim / 2) + j / 2;
}

Status safetensors_to_f32(SafetensorsDtype dtype, const uint8_t* src, float* dst, int64_t n) {
  switch (dtype) {
    case SafetensorsDtype::kF32:
      std::memcpy(dst, src, static_cast<size_t>(n) * sizeof(float));
      return {};
    case SafetensorsDtype::kF16:
    case SafetensorsDtype::kBF16:
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, src + 2 * i, 2);
        dst[i] = dtype == SafetensorsDtype::kF16 ? fp16_to_f32(h) : bf16_to_f32(h);
      }
      return {};
    default:
      return Err(ErrorCode::kUnsupported,
                 "unsupported dtype for conversion: " + std::string(safetensors_dtype_name(dtype)) +
                     " (F32, F16 and BF16 are supported)");
  }
}

Status convert_tensor_rows(const uint8_t* src, SafetensorsDtype dtype, int64_t n_rows,
                           int64_t row_len, GgmlType out_type, int64_t permute_head_dim,
                           const ByteSink& sink) {
  if (out_type != GgmlType::kF32 && out_type != GgmlType::kF16 && out_type != GgmlType::kBF16) {
    return Err(
        ErrorCode::kUnsupported,
        "output type " + std::string(ggml_type_traits(out_type).name) + " is not f32, f16 or bf16");
  }
  if (permute_head_dim > 0 && n_rows % permute_head_dim != 0) {
    return Err(ErrorCode::kInvalidInput, std::to_string(n_rows) +
                                             " rows do not split into heads of " +
                                             std::to_string(permute_head_dim));
  }
  const uint64_t in_row = static_cast<uint64_t>(row_len) * safetensors_dtype_size(dtype);
  const uint64_t out_row = static_cast<uint64_t>(row_len) * ggml_type_traits(out_type).block_bytes;
  const bool copy = same_encoding(dtype, out_type);
  const int64_t rows_per_chunk =
      static_cast<int64_t>(std::max<uint64_t>(1, kChunkBytes / std::max<uint64_t>(out_row, 1)));
  std::vector<uint8_t> chunk(static_cast<size_t>(std::min(rows_per_chunk, n_rows) * out_row));
  std::vector<float> f32(copy ? 0 : static_cast<size_t>(row_len));
  for (int64_t r0 = 0; r0 < n_rows; r0 += rows_per_chunk) {
    const int64_t rows = std::min(rows_per_chunk, n_rows - r0);
    for (int64_t r = 0; r < rows; ++r) {
      const int64_t out_r = r0 + r;
      const int64_t in_r = permute_head_dim > 0 ? qk_source_row(out_r, permute_head_dim) : out_r;
      const uint8_t* in = src + static_cast<uint64_t>(in_r) * in_row;
      uint8_t* out = chunk.data() + static_cast<uint64_t>(r) * out_row;
      if (copy) {
        std::memcpy(out, in, out_row);
      } else {
        NOVASERVE_RETURN_IF_ERROR(safetensors_to_f32(dtype, in, f32.data(), row_len));
        f32_to_out(out_type, f32.data(), out, row_len);
      }
    }
    NOVASERVE_RETURN_IF_ERROR(sink(chunk.data(), static_cast<uint64_t>(rows) * out_row));
  }
  return {};
}

}  // namespace novaserve
