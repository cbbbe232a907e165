#include "convert/gguf_stream_writer.h"

#include <cerrno>
#include <cstring>

#include "common/check.h"

namespace novaserve {
namespace {

constexpr uint64_t kDefaultAlignment = 32;
constexpr size_t kMaxTensorNameBytes = 64;  // GGUF spec: tensor names are at most 64 bytes

uint64_t align_up(uint64_t x, uint64_t a) {
  return (x + a - 1) / a * a;
}

// Little-endian encoding of the header. The on-disk format is the GGUF spec's; this duplicates
// GgufWriter's private encoder because that one only emits headers for tensors it holds in
// memory.
class HeaderBuffer {
 public:
  template <typename T>
  void put(T x) {
    const auto* p = reinterpret_cast<const uint8_t*>(&x);
    bytes_.insert(bytes_.end(), p, p + sizeof(T));
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    bytes_.insert(bytes_.end(), s.begin(), s.end());
  }
  void put_value(GgufValueType type, const GgufValue& v);
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

void HeaderBuffer::put_value(GgufValueType type, const GgufValue& v) {
  NOVASERVE_CHECK(v.type == type) << "value of type " << gguf_value_type_name(v.type) << " where "
                                  << gguf_value_type_name(type) << " is declared";
  switch (type) {
    case GgufValueType::kUint8:
      return put<uint8_t>(static_cast<uint8_t>(std::get<uint64_t>(v.v)));
    case GgufValueType::kUint16:
      return put<uint16_t>(static_cast<uint16_t>(std::get<uint64_t>(v.v)));
    case GgufValueType::kUint32:
      return put<uint32_t>(static_cast<uint32_t>(std::get<uint64_t>(v.v)));
    case GgufValueType::kUint64:
      return put<uint64_t>(std::get<uint64_t>(v.v));
    case GgufValueType::kInt8:
      return put<int8_t>(static_cast<int8_t>(std::get<int64_t>(v.v)));
    case GgufValueType::kInt16:
      return put<int16_t>(static_cast<int16_t>(std::get<int64_t>(v.v)));
    case GgufValueType::kInt32:
      return put<int32_t>(static_cast<int32_t>(std::get<int64_t>(v.v)));
    case GgufValueType::kInt64:
      return put<int64_t>(std::get<int64_t>(v.v));
    case GgufValueType::kFloat32:
      return put<float>(static_cast<float>(std::get<double>(v.v)));
    case GgufValueType::kFloat64:
      return put<double>(std::get<double>(v.v));
    case GgufValueType::kBool:
      return put<uint8_t>(std::get<bool>(v.v) ? 1 : 0);
    case GgufValueType::kString:
      return put_string(std::get<std::string>(v.v));
    case GgufValueType::kArray: {
      const auto& a = std::get<GgufArray>(v.v);
      put<uint32_t>(static_cast<uint32_t>(a.elem_type));
      put<uint64_t>(a.items.size());
      for (const auto& item : a.items) put_value(a.elem_type, item);
      return;
    }
  }
  NOVASERVE_CHECK(false) << "unknown value type " << static_cast<uint32_t>(type);
}

uint64_t alignment_of(const std::vector<GgufKv>& kvs) {
  for (const auto& kv : kvs) {
    if (kv.key != "general.alignment" || kv.value.type != GgufValueType::kUint32) continue;
    const auto a = static_cast<uint64_t>(kv.value.as_int());
    if (a != 0 && (a & (a - 1)) == 0) return a;
  }
  return kDefaultAlignment;
}

}  // namespace

Result<uint64_t> gguf_tensor_nbytes(const GgufTensorDecl& t) {
  const std::string where = "tensor '" + t.name + "'";
  if (t.dims.empty() || t.dims.size() > 4) {
    return Err(ErrorCode::kInvalidInput,
               where + ": has " + std::to_string(t.dims.size()) + " dims, expected 1..4");
  }
  uint64_t rows = 1;
  for (size_t i = 0; i < t.dims.size(); ++i) {
    if (t.dims[i] == 0) {
      return Err(ErrorCode::kInvalidInput, where + ": dim " + std::to_string(i) + " is 0");
    }
    if (i > 0 && __builtin_mul_overflow(rows, t.dims[i], &rows)) {
      return Err(ErrorCode::kInvalidInput, where + ": element count overflows");
    }
  }
  const auto row = ggml_row_bytes(t.type, t.dims[0]);
  if (!row) {
    return Err(ErrorCode::kInvalidInput,
               where + ": dims[0]=" + std::to_string(t.dims[0]) + " is not a multiple of the " +
                   std::string(ggml_type_traits(t.type).name) + " block size");
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(*row, rows, &nbytes)) {
    return Err(ErrorCode::kInvalidInput, where + ": byte size overflows");
  }
  return nbytes;
}

Result<std::unique_ptr<GgufStreamWriter>> GgufStreamWriter::create(
    const std::string& path, const std::vector<GgufKv>& kvs, std::vector<GgufTensorDecl> tensors,
    uint32_t version) {
  std::unique_ptr<GgufStreamWriter> w(new GgufStreamWriter());
  w->alignment_ = alignment_of(kvs);
  for (const auto& t : tensors) {
    if (t.name.empty() || t.name.size() > kMaxTensorNameBytes) {
      return Err(ErrorCode::kInvalidInput, "tensor name '" + t.name + "' must have 1.." +
                                               std::to_string(kMaxTensorNameBytes) + " bytes");
    }
    auto n = gguf_tensor_nbytes(t);
    if (!n.ok()) return n.error();
    w->nbytes_.push_back(*n);
  }

  HeaderBuffer h;
  h.bytes().reserve(1 << 16);
  for (char c : {'G', 'G', 'U', 'F'}) h.put<char>(c);
  h.put<uint32_t>(version);
  h.put<uint64_t>(tensors.size());
  h.put<uint64_t>(kvs.size());
  for (const auto& kv : kvs) {
    h.put_string(kv.key);
    h.put<uint32_t>(static_cast<uint32_t>(kv.value.type));
    h.put_value(kv.value.type, kv.value);
  }
  uint64_t offset = 0;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const auto& t = tensors[i];
    h.put_string(t.name);
    h.put<uint32_t>(static_cast<uint32_t>(t.dims.size()));
    for (auto d : t.dims) h.put<uint64_t>(d);
    h.put<uint32_t>(static_cast<uint32_t>(t.type));
    h.put<uint64_t>(offset);
    offset = align_up(offset + w->nbytes_[i], w->alignment_);
  }
  h.bytes().resize(align_up(h.bytes().size(), w->alignment_), 0);
  // The last tensor's padding is written too, as GgufWriter does.
  w->file_size_ = h.bytes().size() + offset;
  w->tensors_ = std::move(tensors);

  w->file_ = std::fopen(path.c_str(), "wb");
  if (w->file_ == nullptr) {
    return Err(ErrorCode::kIo, path + ": cannot open for writing: " + std::strerror(errno));
  }
  // Only now: the destructor removes path_, which must never be a file this writer did not open.
  w->path_ = path;
  NOVASERVE_RETURN_IF_ERROR(w->put(h.bytes().data(), h.bytes().size()));
  return w;
}

GgufStreamWriter::~GgufStreamWriter() {
  if (file_ != nullptr) std::fclose(file_);
  if (!finished_ && !path_.empty()) std::remove(path_.c_str());
}

Status GgufStreamWriter::put(const void* data, uint64_t n) {
  if (n > 0 && std::fwrite(data, 1, n, file_) != n) {
    return Err(ErrorCode::kIo, path_ + ": write failed: " + std::strerror(errno));
  }
  return {};
}

Status GgufStreamWriter::write(const void* data, uint64_t n) {
  if (current_ >= tensors_.size()) {
    if (n == 0) return {};
    return Err(ErrorCode::kInvalidInput,
               path_ + ": " + std::to_string(n) + " bytes written after the last tensor");
  }
  const uint64_t left = nbytes_[current_] - written_in_current_;
  if (n > left) {
    return Err(ErrorCode::kInvalidInput, "tensor '" + tensors_[current_].name + "': write of " +
                                             std::to_string(n) + " bytes where " +
                                             std::to_string(left) + " remain");
  }
  NOVASERVE_RETURN_IF_ERROR(put(data, n));
  written_in_current_ += n;
  if (written_in_current_ == nbytes_[current_]) {
    static const uint8_t kZeros[256] = {};
    uint64_t pad = align_up(nbytes_[current_], alignment_) - nbytes_[current_];
    while (pad > 0) {
      const uint64_t k = pad < sizeof(kZeros) ? pad : sizeof(kZeros);
      NOVASERVE_RETURN_IF_ERROR(put(kZeros, k));
      pad -= k;
    }
    ++current_;
    written_in_current_ = 0;
  }
  return {};
}

Status GgufStreamWriter::finish() {
  if (current_ < tensors_.size()) {
    return Err(ErrorCode::kInvalidInput, "tensor '" + tensors_[current_].name + "' has " +
                                             std::to_string(written_in_current_) + " of " +
                                             std::to_string(nbytes_[current_]) + " bytes");
  }
  const bool flushed = std::fflush(file_) == 0;
  const int flush_errno = errno;
  const bool closed = std::fclose(file_) == 0;
  file_ = nullptr;
  if (!flushed || !closed) {
    return Err(ErrorCode::kIo,
               path_ + ": flush/close failed: " + std::strerror(flushed ? errno : flush_errno));
  }
  finished_ = true;
  return {};
}

}  // namespace novaserve
