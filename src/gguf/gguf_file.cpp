#include "gguf/gguf_file.h"

#include <algorithm>
#include <limits>
#include <string>

#include "gguf/byte_cursor.h"
#include "gguf/gguf_metadata_reader.h"
#include "gguf/gguf_tensor_reader.h"

namespace novaserve {
namespace {

constexpr uint8_t kMagic[4] = {'G', 'G', 'U', 'F'};
constexpr uint64_t kDefaultAlignment = 32;  // GGUF spec: used when general.alignment is absent

std::string hex_bytes(const uint8_t* p, size_t n) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string s;
  for (size_t i = 0; i < n; ++i) {
    if (i) s += ' ';
    s += kHex[p[i] >> 4];
    s += kHex[p[i] & 15];
  }
  return s;
}

Status check_magic_and_version(ByteCursor& c, const uint8_t* data, uint32_t& version) {
  NOVASERVE_RETURN_IF_ERROR(c.require(4, "magic"));
  if (!std::equal(kMagic, kMagic + 4, data)) {
    return Err(ErrorCode::kInvalidInput,
               "bad magic at offset 0: expected \"GGUF\" (47 47 55 46), found " +
                   hex_bytes(data, 4) + " (not a GGUF file)");
  }
  uint32_t magic = 0;
  NOVASERVE_RETURN_IF_ERROR(c.read(magic, "magic"));
  NOVASERVE_RETURN_IF_ERROR(c.read(version, "version"));
  if (version == 2 || version == 3) return {};
  if (version == 1) {
    return Err(ErrorCode::kUnsupported,
               "version 1 at offset 4 is not supported (only GGUF v2 and v3; v1 used 32-bit "
               "counts)");
  }
  std::string hint;
  if (version == 0x02000000u || version == 0x03000000u) hint = " (a big-endian GGUF file?)";
  return Err(ErrorCode::kUnsupported, "unsupported version " + std::to_string(version) +
                                          " at offset 4 (only 2 and 3)" + hint);
}

// Reads general.alignment (GGUF spec: uint32, a power of two, default 32).
Status read_alignment(const std::vector<GgufKv>& kvs, const std::vector<size_t>& offsets,
                      uint64_t& alignment) {
  alignment = kDefaultAlignment;
  for (size_t i = 0; i < kvs.size(); ++i) {
    if (kvs[i].key != "general.alignment") continue;
    const std::string where =
        "metadata key 'general.alignment' at offset " + std::to_string(offsets[i]);
    const auto& v = kvs[i].value;
    if (v.type != GgufValueType::kUint32) {
      return Err(ErrorCode::kInvalidInput,
                 where + ": has type " + gguf_value_type_name(v.type) + ", expected uint32");
    }
    const auto a = static_cast<uint64_t>(v.as_int());
    if (a == 0 || (a & (a - 1)) != 0) {
      return Err(ErrorCode::kInvalidInput,
                 where + ": value " + std::to_string(a) + " is not a power of two");
    }
    alignment = a;
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path) {
  auto mapped = MmapFile::open(path);
  if (!mapped.ok()) return mapped.error();
  auto parsed = parse(mapped.value()->data(), mapped.value()->size());
  if (!parsed.ok()) return Err(parsed.error().code, path + ": " + parsed.error().message);
  parsed.value()->file_ = std::move(mapped.value());
  return parsed;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(const uint8_t* data, size_t size) {
  std::unique_ptr<GgufFile> f(new GgufFile());
  f->base_ = data;
  f->size_ = size;
  ByteCursor c(data, size);
  NOVASERVE_RETURN_IF_ERROR(check_magic_and_version(c, data, f->version_));

  uint64_t tensor_count = 0;
  uint64_t kv_count = 0;
  NOVASERVE_RETURN_IF_ERROR(c.read(tensor_count, "tensor count"));
  NOVASERVE_RETURN_IF_ERROR(c.read(kv_count, "metadata kv count"));
  // Checked here against everything left (the tight check follows the metadata) so that a huge
  // count fails before we spend time on the key/value section.
  if (tensor_count > c.remaining() / kGgufMinTensorInfoBytes) {
    return Err(ErrorCode::kInvalidInput,
               "tensor count " + std::to_string(tensor_count) +
                   " at offset 8 cannot fit in the remaining " + std::to_string(c.remaining()) +
                   " bytes (each tensor info needs at least " +
                   std::to_string(kGgufMinTensorInfoBytes) + "; truncated or corrupt file)");
  }

  std::vector<size_t> kv_offsets;
  NOVASERVE_RETURN_IF_ERROR(read_gguf_metadata(c, kv_count, f->kvs_, kv_offsets));
  NOVASERVE_RETURN_IF_ERROR(read_alignment(f->kvs_, kv_offsets, f->alignment_));

  std::vector<size_t> info_offsets;
  NOVASERVE_RETURN_IF_ERROR(read_gguf_tensor_infos(c, tensor_count, f->tensors_, info_offsets));

  // The data section starts at the next multiple of the alignment. A file without tensors may
  // end before that padding, so the bound is only enforced when there is tensor data.
  const uint64_t pos = c.offset();
  const uint64_t pad = (f->alignment_ - pos % f->alignment_) % f->alignment_;
  f->data_offset_ = pos + pad;
  NOVASERVE_RETURN_IF_ERROR(
      validate_gguf_tensor_layout(f->tensors_, info_offsets, f->alignment_, f->data_offset_, size));
  return f;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  for (const auto& kv : kvs_) {
    if (kv.key == key) return &kv.value;
  }
  return nullptr;
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  for (const auto& t : tensors_) {
    if (t.name == name) return &t;
  }
  return nullptr;
}

namespace {

Error missing(std::string_view key) {
  return Err(ErrorCode::kNotFound, "metadata key '" + std::string(key) + "' is missing");
}

Error wrong_type(std::string_view key, const GgufValue& v, const char* expected) {
  return Err(ErrorCode::kInvalidInput, "metadata key '" + std::string(key) + "' has type " +
                                           gguf_value_type_name(v.type) + ", expected " + expected);
}

}  // namespace

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (v->type != GgufValueType::kString) return wrong_type(key, *v, "string");
  return v->as_string();
}

Result<int64_t> GgufFile::get_int(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (!v->is_integer()) return wrong_type(key, *v, "an integer");
  if (const auto* u = std::get_if<uint64_t>(&v->v);
      u && *u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    return Err(ErrorCode::kInvalidInput, "metadata key '" + std::string(key) + "' value " +
                                             std::to_string(*u) + " does not fit in int64");
  }
  return v->as_int();
}

Result<double> GgufFile::get_float(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (!v->is_float() && !v->is_integer()) return wrong_type(key, *v, "a number");
  return v->as_double();
}

Result<bool> GgufFile::get_bool(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (v->type != GgufValueType::kBool) return wrong_type(key, *v, "bool");
  return v->as_bool();
}

Result<const GgufArray*> GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (!v) return missing(key);
  if (v->type != GgufValueType::kArray) return wrong_type(key, *v, "array");
  return &v->as_array();
}

}  // namespace novaserve
