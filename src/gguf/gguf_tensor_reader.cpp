#include "gguf/gguf_tensor_reader.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>
#include <unordered_set>

namespace novaserve {
namespace {

std::string at(size_t offset) {
  return " at offset " + std::to_string(offset);
}

Error prefixed(const Error& e, const std::string& prefix) {
  return Err(e.code, prefix + ": " + e.message);
}

// Tensor names are not restricted by the spec, so they are escaped before going into a message
// (keeps messages on one line and free of control bytes).
std::string quoted(const std::string& name) {
  return gguf_value_to_string(GgufValue{GgufValueType::kString, name});
}

std::string dims_to_string(const std::vector<uint64_t>& dims) {
  std::string s = "[";
  for (size_t i = 0; i < dims.size(); ++i) s += (i ? ", " : "") + std::to_string(dims[i]);
  return s + "]";
}

// Reads dims, type and offset of one tensor whose name is already in `t`.
Status read_one(ByteCursor& c, GgufTensorInfo& t) {
  const size_t ndims_offset = c.offset();
  uint32_t n_dims = 0;
  NOVASERVE_RETURN_IF_ERROR(c.read(n_dims, "n_dims"));
  if (n_dims == 0 || n_dims > kGgufMaxDims) {
    return Err(ErrorCode::kInvalidInput, "n_dims " + std::to_string(n_dims) + at(ndims_offset) +
                                             " is outside 1.." + std::to_string(kGgufMaxDims));
  }
  t.dims.resize(n_dims);
  uint64_t n_elements = 1;
  for (uint32_t d = 0; d < n_dims; ++d) {
    const size_t dim_offset = c.offset();
    NOVASERVE_RETURN_IF_ERROR(c.read(t.dims[d], "dim"));
    if (t.dims[d] == 0) {
      return Err(ErrorCode::kInvalidInput, "dim " + std::to_string(d) + at(dim_offset) + " is 0");
    }
    // ggml stores element counts as int64, so the product must stay below 2^63.
    if (__builtin_mul_overflow(n_elements, t.dims[d], &n_elements) ||
        n_elements > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      return Err(ErrorCode::kInvalidInput,
                 "dims" + at(ndims_offset + 4) + " have an element count that overflows int64");
    }
  }
  const size_t type_offset = c.offset();
  uint32_t type_id = 0;
  NOVASERVE_RETURN_IF_ERROR(c.read(type_id, "type"));
  const auto traits = ggml_type_traits(type_id);
  if (!traits) {
    return Err(ErrorCode::kUnsupported,
               "unknown tensor type id " + std::to_string(type_id) + at(type_offset));
  }
  t.type = traits->type;
  // Row bytes computed here rather than with ggml_row_bytes() so the multiply is overflow-checked.
  if (t.dims[0] % traits->block_elems != 0) {
    return Err(ErrorCode::kInvalidInput, "row length dims[0]=" + std::to_string(t.dims[0]) +
                                             at(ndims_offset + 4) + " is not a multiple of the " +
                                             std::string(traits->name) + " block size " +
                                             std::to_string(traits->block_elems));
  }
  const uint64_t rows = n_elements / t.dims[0];
  uint64_t row_bytes = 0;
  if (__builtin_mul_overflow(t.dims[0] / traits->block_elems, uint64_t{traits->block_bytes},
                             &row_bytes) ||
      __builtin_mul_overflow(row_bytes, rows, &t.nbytes)) {
    return Err(ErrorCode::kInvalidInput, "byte size of dims " + dims_to_string(t.dims) + " " +
                                             std::string(traits->name) + " overflows uint64");
  }
  return c.read(t.offset, "offset");
}

}  // namespace

Status read_gguf_tensor_infos(ByteCursor& c, uint64_t count, std::vector<GgufTensorInfo>& out,
                              std::vector<size_t>& info_offsets) {
  if (count > c.remaining() / kGgufMinTensorInfoBytes) {
    return Err(ErrorCode::kInvalidInput,
               "tensor count " + std::to_string(count) + " cannot fit in the remaining " +
                   std::to_string(c.remaining()) + " bytes" + at(c.offset()) +
                   " (each tensor info needs at least " + std::to_string(kGgufMinTensorInfoBytes) +
                   "; truncated or corrupt file)");
  }
  std::unordered_set<std::string> seen;
  out.reserve(out.size() + static_cast<size_t>(count));
  info_offsets.reserve(info_offsets.size() + static_cast<size_t>(count));
  for (uint64_t i = 0; i < count; ++i) {
    const size_t info_offset = c.offset();
    const std::string where = "tensor info #" + std::to_string(i) + at(info_offset);
    GgufTensorInfo t;
    auto s = c.read_string(t.name, "tensor name");
    if (!s.ok()) return prefixed(s.error(), where);
    if (t.name.empty()) return Err(ErrorCode::kInvalidInput, where + ": tensor name is empty");
    if (t.name.size() > kGgufMaxTensorNameBytes) {
      return Err(ErrorCode::kInvalidInput,
                 where + ": tensor name is " + std::to_string(t.name.size()) +
                     " bytes, more than the spec's " + std::to_string(kGgufMaxTensorNameBytes));
    }
    const std::string name_where =
        "tensor " + quoted(t.name) + " (info #" + std::to_string(i) + at(info_offset) + ")";
    if (!seen.insert(t.name).second) {
      return Err(ErrorCode::kInvalidInput, name_where + ": duplicate tensor name");
    }
    s = read_one(c, t);
    if (!s.ok()) return prefixed(s.error(), name_where);
    out.push_back(std::move(t));
    info_offsets.push_back(info_offset);
  }
  return {};
}

Status validate_gguf_tensor_layout(const std::vector<GgufTensorInfo>& tensors,
                                   const std::vector<size_t>& info_offsets, uint64_t alignment,
                                   uint64_t data_offset, uint64_t file_size) {
  if (tensors.empty()) return {};
  if (data_offset > file_size) {
    return Err(ErrorCode::kInvalidInput,
               "truncated: data section starts at offset " + std::to_string(data_offset) +
                   " (after padding to alignment " + std::to_string(alignment) +
                   ") but the file has only " + std::to_string(file_size) + " bytes");
  }
  const uint64_t data_size = file_size - data_offset;
  auto where = [&](size_t i) {
    return "tensor " + quoted(tensors[i].name) + " (info #" + std::to_string(i) +
           at(info_offsets[i]) + ")";
  };
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    if (t.offset % alignment != 0) {
      return Err(ErrorCode::kInvalidInput, where(i) + ": data offset " + std::to_string(t.offset) +
                                               " is not a multiple of the alignment " +
                                               std::to_string(alignment));
    }
    if (t.offset >= data_size) {
      return Err(ErrorCode::kInvalidInput, where(i) + ": data offset " + std::to_string(t.offset) +
                                               " is outside the file (data section has " +
                                               std::to_string(data_size) + " bytes from offset " +
                                               std::to_string(data_offset) + ")");
    }
    if (t.nbytes > data_size - t.offset) {
      return Err(ErrorCode::kInvalidInput,
                 where(i) + ": data is shorter than declared: needs " + std::to_string(t.nbytes) +
                     " bytes at data offset " + std::to_string(t.offset) + " (file offset " +
                     std::to_string(data_offset + t.offset) + ") but only " +
                     std::to_string(data_size - t.offset) + " remain (truncated file?)");
    }
  }
  std::vector<size_t> order(tensors.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(),
            [&](size_t a, size_t b) { return tensors[a].offset < tensors[b].offset; });
  for (size_t k = 1; k < order.size(); ++k) {
    const auto& prev = tensors[order[k - 1]];
    const auto& cur = tensors[order[k]];
    // Offsets and sizes were bounded by data_size above, so the sum cannot overflow.
    if (prev.offset + prev.nbytes > cur.offset) {
      return Err(ErrorCode::kInvalidInput,
                 where(order[k]) + ": data [" + std::to_string(cur.offset) + ", " +
                     std::to_string(cur.offset + cur.nbytes) + ") overlaps tensor " +
                     quoted(prev.name) + " data [" + std::to_string(prev.offset) + ", " +
                     std::to_string(prev.offset + prev.nbytes) + ")");
    }
  }
  return {};
}

}  // namespace novaserve
