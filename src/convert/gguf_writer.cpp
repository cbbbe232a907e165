#include "convert/gguf_writer.h"

#include <cstring>
#include <fstream>

#include "common/check.h"

namespace novaserve {
namespace {

constexpr uint64_t kDefaultAlignment = 32;

uint64_t align_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

template <typename T>
void put(std::vector<uint8_t>& out, T x) {
  const auto* p = reinterpret_cast<const uint8_t*>(&x);
  out.insert(out.end(), p, p + sizeof(T));
}

void put_string(std::vector<uint8_t>& out, const std::string& s) {
  put<uint64_t>(out, s.size());
  out.insert(out.end(), s.begin(), s.end());
}

GgufValue unsigned_value(GgufValueType t, uint64_t x) {
  return GgufValue{t, x};
}
GgufValue signed_value(GgufValueType t, int64_t x) {
  return GgufValue{t, x};
}

// Encodes the payload of `v` (no type id). `type` is the type the container promises.
void put_value(std::vector<uint8_t>& out, GgufValueType type, const GgufValue& v) {
  NOVASERVE_CHECK(v.type == type) << "array item of type " << gguf_value_type_name(v.type)
                                  << " in array of " << gguf_value_type_name(type);
  switch (type) {
    case GgufValueType::kUint8:
      return put<uint8_t>(out, static_cast<uint8_t>(std::get<uint64_t>(v.v)));
    case GgufValueType::kUint16:
      return put<uint16_t>(out, static_cast<uint16_t>(std::get<uint64_t>(v.v)));
    case GgufValueType::kUint32:
      return put<uint32_t>(out, static_cast<uint32_t>(std::get<uint64_t>(v.v)));
    case GgufValueType::kUint64:
      return put<uint64_t>(out, std::get<uint64_t>(v.v));
    case GgufValueType::kInt8:
      return put<int8_t>(out, static_cast<int8_t>(std::get<int64_t>(v.v)));
    case GgufValueType::kInt16:
      return put<int16_t>(out, static_cast<int16_t>(std::get<int64_t>(v.v)));
    case GgufValueType::kInt32:
      return put<int32_t>(out, static_cast<int32_t>(std::get<int64_t>(v.v)));
    case GgufValueType::kInt64:
      return put<int64_t>(out, std::get<int64_t>(v.v));
    case GgufValueType::kFloat32:
      return put<float>(out, static_cast<float>(std::get<double>(v.v)));
    case GgufValueType::kFloat64:
      return put<double>(out, std::get<double>(v.v));
    case GgufValueType::kBool:
      return put<uint8_t>(out, std::get<bool>(v.v) ? 1 : 0);
    case GgufValueType::kString:
      return put_string(out, std::get<std::string>(v.v));
    case GgufValueType::kArray: {
      const auto& a = std::get<GgufArray>(v.v);
      put<uint32_t>(out, static_cast<uint32_t>(a.elem_type));
      put<uint64_t>(out, a.items.size());
      for (const auto& item : a.items) put_value(out, a.elem_type, item);
      return;
    }
  }
  NOVASERVE_CHECK(false) << "unknown value type " << static_cast<uint32_t>(type);
}

}  // namespace

GgufValue gguf_u8(uint8_t x) {
  return unsigned_value(GgufValueType::kUint8, x);
}
GgufValue gguf_u16(uint16_t x) {
  return unsigned_value(GgufValueType::kUint16, x);
}
GgufValue gguf_u32(uint32_t x) {
  return unsigned_value(GgufValueType::kUint32, x);
}
GgufValue gguf_u64(uint64_t x) {
  return unsigned_value(GgufValueType::kUint64, x);
}
GgufValue gguf_i8(int8_t x) {
  return signed_value(GgufValueType::kInt8, x);
}
GgufValue gguf_i16(int16_t x) {
  return signed_value(GgufValueType::kInt16, x);
}
GgufValue gguf_i32(int32_t x) {
  return signed_value(GgufValueType::kInt32, x);
}
GgufValue gguf_i64(int64_t x) {
  return signed_value(GgufValueType::kInt64, x);
}
GgufValue gguf_f32(float x) {
  return GgufValue{GgufValueType::kFloat32, static_cast<double>(x)};
}
GgufValue gguf_f64(double x) {
  return GgufValue{GgufValueType::kFloat64, x};
}
GgufValue gguf_bool(bool x) {
  return GgufValue{GgufValueType::kBool, x};
}
GgufValue gguf_string(std::string s) {
  return GgufValue{GgufValueType::kString, std::move(s)};
}

GgufValue gguf_array(GgufValueType elem_type, std::vector<GgufValue> items) {
  return GgufValue{GgufValueType::kArray, GgufArray{elem_type, std::move(items)}};
}

GgufValue gguf_string_array(const std::vector<std::string>& items) {
  std::vector<GgufValue> values;
  values.reserve(items.size());
  for (const auto& s : items) values.push_back(gguf_string(s));
  return gguf_array(GgufValueType::kString, std::move(values));
}

void GgufWriter::add(std::string key, GgufValue value) {
  kvs_.push_back(GgufKv{std::move(key), std::move(value)});
}

void GgufWriter::set_alignment(uint32_t alignment) {
  NOVASERVE_CHECK(alignment != 0 && (alignment & (alignment - 1)) == 0)
      << "alignment " << alignment << " is not a power of two";
  for (auto& kv : kvs_) {
    if (kv.key == "general.alignment") {
      kv.value = gguf_u32(alignment);
      return;
    }
  }
  add("general.alignment", gguf_u32(alignment));
}

uint64_t GgufWriter::alignment() const {
  // Mirrors the reader: only a uint32 power of two counts; anything else (written on purpose by
  // tests) leaves the default layout.
  for (const auto& kv : kvs_) {
    if (kv.key != "general.alignment" || kv.value.type != GgufValueType::kUint32) continue;
    const auto a = static_cast<uint64_t>(kv.value.as_int());
    if (a != 0 && (a & (a - 1)) == 0) return a;
  }
  return kDefaultAlignment;
}

Result<uint64_t> GgufWriter::check_tensor(const std::string& name, GgmlType type,
                                          const std::vector<uint64_t>& dims) const {
  const std::string where = "tensor '" + name + "'";
  if (dims.empty() || dims.size() > 4) {
    return Err(ErrorCode::kInvalidInput,
               where + ": has " + std::to_string(dims.size()) + " dims, expected 1..4");
  }
  uint64_t rows = 1;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i] == 0) {
      return Err(ErrorCode::kInvalidInput, where + ": dim " + std::to_string(i) + " is 0");
    }
    if (i > 0 && __builtin_mul_overflow(rows, dims[i], &rows)) {
      return Err(ErrorCode::kInvalidInput, where + ": element count overflows");
    }
  }
  const auto row = ggml_row_bytes(type, dims[0]);
  if (!row) {
    return Err(ErrorCode::kInvalidInput,
               where + ": dims[0]=" + std::to_string(dims[0]) + " is not a multiple of the " +
                   std::string(ggml_type_traits(type).name) + " block size");
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(*row, rows, &nbytes)) {
    return Err(ErrorCode::kInvalidInput, where + ": byte size overflows");
  }
  return nbytes;
}

Status GgufWriter::add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                              std::vector<uint8_t> data) {
  auto nbytes = check_tensor(name, type, dims);
  if (!nbytes.ok()) return nbytes.error();
  if (data.size() != *nbytes) {
    return Err(ErrorCode::kInvalidInput,
               "tensor '" + name + "': data has " + std::to_string(data.size()) +
                   " bytes, dims and type need " + std::to_string(*nbytes));
  }
  Tensor t{std::move(name), type, std::move(dims), *nbytes, std::move(data), nullptr};
  tensors_.push_back(std::move(t));
  tensors_.back().data = tensors_.back().owned.data();
  return {};
}

Status GgufWriter::add_tensor_ref(std::string name, GgmlType type, std::vector<uint64_t> dims,
                                  const uint8_t* data) {
  auto nbytes = check_tensor(name, type, dims);
  if (!nbytes.ok()) return nbytes.error();
  tensors_.push_back(Tensor{std::move(name), type, std::move(dims), *nbytes, {}, data});
  return {};
}

std::vector<uint8_t> GgufWriter::header() const {
  std::vector<uint8_t> out;
  out.insert(out.end(), {'G', 'G', 'U', 'F'});
  put<uint32_t>(out, version_);
  put<uint64_t>(out, tensors_.size());
  put<uint64_t>(out, kvs_.size());
  for (const auto& kv : kvs_) {
    put_string(out, kv.key);
    put<uint32_t>(out, static_cast<uint32_t>(kv.value.type));
    put_value(out, kv.value.type, kv.value);
  }
  const uint64_t align = alignment();
  uint64_t offset = 0;
  for (const auto& t : tensors_) {
    put_string(out, t.name);
    put<uint32_t>(out, static_cast<uint32_t>(t.dims.size()));
    for (auto d : t.dims) put<uint64_t>(out, d);
    put<uint32_t>(out, static_cast<uint32_t>(t.type));
    put<uint64_t>(out, offset);
    offset = align_up(offset + t.nbytes, align);
  }
  out.resize(align_up(out.size(), align), 0);
  return out;
}

std::vector<uint8_t> GgufWriter::serialize() const {
  std::vector<uint8_t> out = header();
  const uint64_t align = alignment();
  for (const auto& t : tensors_) {
    out.insert(out.end(), t.data, t.data + t.nbytes);
    out.resize(align_up(out.size(), align), 0);
  }
  return out;
}

Status GgufWriter::write_file(const std::string& path) const {
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) return Err(ErrorCode::kIo, path + ": cannot open for writing");
  const std::vector<uint8_t> head = header();
  f.write(reinterpret_cast<const char*>(head.data()), static_cast<std::streamsize>(head.size()));
  const uint64_t align = alignment();
  static const char kZeros[64] = {};
  for (const auto& t : tensors_) {
    f.write(reinterpret_cast<const char*>(t.data), static_cast<std::streamsize>(t.nbytes));
    // Alignment may exceed the zero buffer; pad in chunks.
    uint64_t pad = align_up(t.nbytes, align) - t.nbytes;
    while (pad > 0) {
      const uint64_t n = pad < sizeof(kZeros) ? pad : sizeof(kZeros);
      f.write(kZeros, static_cast<std::streamsize>(n));
      pad -= n;
    }
  }
  f.flush();
  if (!f) return Err(ErrorCode::kIo, path + ": write failed");
  return {};
}

}  // namespace novaserve
