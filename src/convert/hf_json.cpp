#include "convert/hf_json.h"

#include <cerrno>
#include <climits>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace novaserve {
namespace {

using Json = nlohmann::json;

// The value under `key`, or nullptr when absent or null (HF writes null for "use the default").
const Json* lookup(const Json& obj, const char* key) {
  if (!obj.is_object()) return nullptr;
  auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return nullptr;
  return &*it;
}

Error missing(const std::string& name, const char* key) {
  return Err(ErrorCode::kNotFound, name + ": missing key '" + key + "'");
}

}  // namespace

Result<std::string> read_text_file(const std::string& path) {
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) {
    return Err(ErrorCode::kNotFound, path + ": no such file");
  }
  if (std::filesystem::is_directory(path, ec)) {
    return Err(ErrorCode::kIo, path + ": is a directory");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return Err(ErrorCode::kIo, path + ": cannot open: " + std::strerror(errno));
  std::ostringstream s;
  s << in.rdbuf();
  if (in.bad()) return Err(ErrorCode::kIo, path + ": read error");
  return s.str();
}

Result<Json> parse_json_text(std::string_view text, const std::string& name) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const Json::exception& e) {
    return Err(ErrorCode::kInvalidInput, name + ": not valid JSON: " + e.what());
  }
}

Result<Json> read_json_file(const std::string& path) {
  auto text = read_text_file(path);
  if (!text.ok()) return text.error();
  return parse_json_text(*text, path);
}

Result<int64_t> json_int(const Json& obj, const char* key, const std::string& name, int64_t min,
                         int64_t max, std::optional<int64_t> fallback) {
  const Json* v = lookup(obj, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return missing(name, key);
  }
  if (!v->is_number_integer()) {
    return Err(ErrorCode::kInvalidInput,
               name + ": '" + key + "' is " + v->dump() + ", expected an integer");
  }
  // An unsigned value above int64's range reads back negative: reject it via the range check.
  const int64_t x = v->is_number_unsigned() && v->get<uint64_t>() > uint64_t{INT64_MAX}
                        ? INT64_MIN
                        : v->get<int64_t>();
  if (x < min || x > max) {
    return Err(ErrorCode::kInvalidInput, name + ": '" + key + "' = " + v->dump() +
                                             " is out of range [" + std::to_string(min) + ", " +
                                             std::to_string(max) + "]");
  }
  return x;
}

Result<double> json_positive(const Json& obj, const char* key, const std::string& name,
                             std::optional<double> fallback) {
  const Json* v = lookup(obj, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return missing(name, key);
  }
  if (!v->is_number() || !std::isfinite(v->get<double>()) || v->get<double>() <= 0.0) {
    return Err(ErrorCode::kInvalidInput,
               name + ": '" + key + "' is " + v->dump() + ", expected a finite number > 0");
  }
  return v->get<double>();
}

Result<bool> json_bool(const Json& obj, const char* key, const std::string& name,
                       std::optional<bool> fallback) {
  const Json* v = lookup(obj, key);
  if (v == nullptr) {
    if (fallback) return *fallback;
    return missing(name, key);
  }
  if (!v->is_boolean()) {
    return Err(ErrorCode::kInvalidInput,
               name + ": '" + key + "' is " + v->dump() + ", expected true or false");
  }
  return v->get<bool>();
}

std::string json_string_or(const Json& obj, const char* key, std::string fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

bool json_bool_or(const Json& obj, const char* key, bool fallback) {
  if (!obj.is_object()) return fallback;
  auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace novaserve
