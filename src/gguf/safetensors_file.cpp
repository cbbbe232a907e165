#include "gguf/safetensors_file.h"

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>
#include <unordered_set>

#include "common/utf8.h"

namespace novaserve {
namespace {

using Json = nlohmann::json;

// The header length field and the header itself, both at the start of the file.
constexpr uint64_t kLengthBytes = 8;

Error invalid(const std::string& file, const std::string& what) {
  return Err(ErrorCode::kInvalidInput, file + ": " + what);
}

// JSON parse that also rejects a key repeated within one object: nlohmann keeps one of them
// silently, and a tensor listed twice could point at two different byte ranges.
Result<Json> parse_json(std::string_view text, const std::string& file) {
  std::vector<std::unordered_set<std::string>> open_objects;
  std::string duplicate;
  auto callback = [&](int /*depth*/, Json::parse_event_t event, Json& parsed) {
    if (event == Json::parse_event_t::object_start) {
      open_objects.emplace_back();
    } else if (event == Json::parse_event_t::object_end) {
      if (!open_objects.empty()) open_objects.pop_back();
    } else if (event == Json::parse_event_t::key && !open_objects.empty()) {
      const auto& key = parsed.get_ref<const std::string&>();
      if (!open_objects.back().insert(key).second && duplicate.empty()) duplicate = key;
    }
    return true;
  };
  Json j;
  try {
    j = Json::parse(text.begin(), text.end(), callback);
  } catch (const Json::exception& e) {
    return invalid(file, std::string("header (starting at byte 8) is not valid JSON: ") + e.what());
  }
  if (!duplicate.empty()) return invalid(file, "header has the key '" + duplicate + "' twice");
  return j;
}

// A JSON value that must be a non-negative integer.
bool as_u64(const Json& v, uint64_t* out) {
  if (!v.is_number_unsigned()) return false;
  *out = v.get<uint64_t>();
  return true;
}

Result<SafetensorsTensorInfo> parse_entry(const std::string& file, const std::string& name,
                                          const Json& entry, uint64_t data_size) {
  const std::string where = "tensor '" + name + "': ";
  if (!entry.is_object()) return invalid(file, where + "entry is not a JSON object");
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!entry.contains(field)) return invalid(file, where + "missing field '" + field + "'");
  }
  SafetensorsTensorInfo t;
  t.name = name;
  const Json& dtype = entry["dtype"];
  if (!dtype.is_string()) return invalid(file, where + "dtype is not a string");
  const auto parsed = safetensors_dtype_from_name(dtype.get_ref<const std::string&>());
  if (!parsed) {
    return invalid(file, where + "unknown dtype '" + dtype.get<std::string>() + "'");
  }
  t.dtype = *parsed;

  const Json& shape = entry["shape"];
  if (!shape.is_array()) return invalid(file, where + "shape is not an array");
  uint64_t n_elements = 1;
  for (const Json& d : shape) {
    uint64_t dim = 0;
    if (!as_u64(d, &dim)) {
      return invalid(file, where + "shape " + shape.dump() +
                               " has an entry that is not a "
                               "non-negative integer");
    }
    if (__builtin_mul_overflow(n_elements, dim, &n_elements)) {
      return invalid(file, where + "shape " + shape.dump() + " overflows 64 bits");
    }
    t.shape.push_back(dim);
  }
  uint64_t nbytes = 0;
  if (__builtin_mul_overflow(n_elements, uint64_t{safetensors_dtype_size(t.dtype)}, &nbytes)) {
    return invalid(file, where + "shape " + shape.dump() + " of " + dtype.get<std::string>() +
                             " overflows 64 bits in bytes");
  }

  const Json& offsets = entry["data_offsets"];
  uint64_t begin = 0, end = 0;
  if (!offsets.is_array() || offsets.size() != 2 || !as_u64(offsets[0], &begin) ||
      !as_u64(offsets[1], &end)) {
    return invalid(file, where + "data_offsets " + offsets.dump() +
                             " is not two non-negative integers [begin, end]");
  }
  if (end < begin) return invalid(file, where + "data_offsets " + offsets.dump() + " end < begin");
  if (end > data_size) {
    return invalid(file, where + "data_offsets " + offsets.dump() + " end past the data section (" +
                             std::to_string(data_size) + " bytes)");
  }
  if (end - begin != nbytes) {
    return invalid(file, where + "shape " + shape.dump() + " of " + dtype.get<std::string>() +
                             " needs " + std::to_string(nbytes) + " bytes, data_offsets " +
                             offsets.dump() + " hold " + std::to_string(end - begin));
  }
  t.begin = begin;
  t.nbytes = nbytes;
  return t;
}

Status parse_metadata(const std::string& file, const Json& m,
                      std::vector<std::pair<std::string, std::string>>& out) {
  if (m.is_null()) return {};  // the reference's Option<HashMap<String, String>>
  if (!m.is_object()) return invalid(file, "__metadata__ is not a JSON object");
  for (const auto& [key, value] : m.items()) {
    if (!value.is_string()) {
      return invalid(file, "__metadata__ value of '" + key + "' is not a string");
    }
    out.emplace_back(key, value.get<std::string>());
  }
  std::sort(out.begin(), out.end());
  return {};
}

// Sorted by begin, the tensors must tile [0, data_size) exactly (as the reference requires).
Status check_layout(const std::string& file, const std::vector<SafetensorsTensorInfo>& tensors,
                    uint64_t data_size) {
  uint64_t expected = 0;
  const SafetensorsTensorInfo* previous = nullptr;
  for (const auto& t : tensors) {
    if (t.begin < expected) {
      return invalid(file, "tensor '" + t.name + "' (bytes " + std::to_string(t.begin) + ".." +
                               std::to_string(t.begin + t.nbytes) + ") overlaps tensor '" +
                               previous->name + "'");
    }
    if (t.begin > expected) {
      return invalid(file, "gap of " + std::to_string(t.begin - expected) +
                               " bytes in the data section before tensor '" + t.name + "'");
    }
    expected = t.begin + t.nbytes;
    previous = &t;
  }
  if (expected != data_size) {
    return invalid(file, "data section has " + std::to_string(data_size) +
                             " bytes but the tensors cover " + std::to_string(expected) +
                             " (trailing bytes)");
  }
  return {};
}

}  // namespace

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::open(const std::string& path) {
  auto mapped = MmapFile::open(path);
  if (!mapped.ok()) return mapped.error();
  auto parsed = parse((*mapped)->data(), (*mapped)->size(), path);
  if (!parsed.ok()) return parsed.error();
  (*parsed)->file_ = std::move(mapped.value());
  return parsed;
}

Result<std::unique_ptr<SafetensorsFile>> SafetensorsFile::parse(const uint8_t* data, size_t size,
                                                                std::string name) {
  if (size < kLengthBytes) {
    return invalid(
        name, "file has " + std::to_string(size) + " bytes, fewer than the 8-byte header length");
  }
  uint64_t header_len = 0;
  for (int i = 7; i >= 0; --i) header_len = (header_len << 8) | data[i];  // little-endian
  if (header_len > kMaxHeaderBytes) {
    return invalid(name, "header length " + std::to_string(header_len) + " exceeds the limit of " +
                             std::to_string(kMaxHeaderBytes) + " bytes");
  }
  if (header_len > size - kLengthBytes) {
    return invalid(name, "header length " + std::to_string(header_len) +
                             " runs past the end of the file (" + std::to_string(size) + " bytes)");
  }
  const std::string_view header(reinterpret_cast<const char*>(data + kLengthBytes), header_len);
  if (!utf8::is_valid(header)) return invalid(name, "header is not valid UTF-8");
  if (header.empty() || header[0] != '{') {
    return invalid(name, "header does not start with '{' (not a JSON object)");
  }
  auto json = parse_json(header, name);
  if (!json.ok()) return json.error();
  if (!json->is_object()) return invalid(name, "header is not a JSON object");

  std::unique_ptr<SafetensorsFile> f(new SafetensorsFile());
  f->base_ = data;
  f->size_ = size;
  f->data_offset_ = kLengthBytes + header_len;
  f->name_ = std::move(name);
  const uint64_t data_size = size - f->data_offset_;
  for (const auto& [key, value] : json->items()) {
    if (key == "__metadata__") {
      NOVASERVE_RETURN_IF_ERROR(parse_metadata(f->name_, value, f->metadata_));
      continue;
    }
    auto t = parse_entry(f->name_, key, value, data_size);
    if (!t.ok()) return t.error();
    f->tensors_.push_back(std::move(t.value()));
  }
  // Zero-byte tensors sort before a tensor starting at the same offset, so they never read as
  // an overlap.
  std::sort(f->tensors_.begin(), f->tensors_.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.nbytes < b.nbytes;
  });
  NOVASERVE_RETURN_IF_ERROR(check_layout(f->name_, f->tensors_, data_size));
  for (size_t i = 0; i < f->tensors_.size(); ++i) f->index_.emplace(f->tensors_[i].name, i);
  return f;
}

const SafetensorsTensorInfo* SafetensorsFile::find(std::string_view name) const {
  auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

}  // namespace novaserve
