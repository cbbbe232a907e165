#include "server/json_fields.h"

#include <cmath>
#include <cstdio>
#include <limits>

namespace novaserve {
namespace {

// 'name' (built by appending: GCC 12 warns falsely on "'" + std::string temporaries).
std::string quoted(const std::string& name) {
  std::string q(1, '\'');
  q += name;
  q += '\'';
  return q;
}

}  // namespace

const Json* FieldReader::find(const char* name) const {
  const auto it = obj_.find(name);
  if (it == obj_.end() || it->is_null()) return nullptr;
  return &*it;
}

ApiError FieldReader::type_error(const char* name, const char* expected, const Json& got) const {
  return invalid_request(quoted(param(name)) + " must be " + expected + ", got " + got.type_name(),
                         param(name));
}

std::optional<int64_t> json_integer(const Json& v) {
  if (v.is_number_integer() && !v.is_number_unsigned()) return v.get<int64_t>();
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  if (v.is_number_float()) {
    const double d = v.get<double>();
    // 2^53: beyond it doubles are not exact integers any more.
    constexpr double kExact = 9007199254740992.0;
    if (std::isfinite(d) && std::floor(d) == d && std::fabs(d) <= kExact) {
      return static_cast<int64_t>(d);
    }
  }
  return std::nullopt;
}

std::optional<ApiError> FieldReader::get_int(const char* name, std::optional<int64_t>& out) const {
  out.reset();
  const Json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return type_error(name, "an integer", *v);
  out = json_integer(*v);
  if (!out) {
    return invalid_request(quoted(param(name)) + " must be an integer, got " + v->dump(),
                           param(name));
  }
  return std::nullopt;
}

std::optional<ApiError> FieldReader::get_number(const char* name,
                                                std::optional<double>& out) const {
  out.reset();
  const Json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_number()) return type_error(name, "a number", *v);
  out = v->get<double>();
  if (!std::isfinite(*out)) {
    return invalid_request(quoted(param(name)) + " must be a finite number", param(name));
  }
  return std::nullopt;
}

std::optional<ApiError> FieldReader::get_float(const char* name, std::optional<float>& out) const {
  out.reset();
  std::optional<double> d;
  if (auto e = get_number(name, d)) return e;
  if (!d) return std::nullopt;
  if (std::fabs(*d) > std::numeric_limits<float>::max()) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", *d);
    return invalid_request(quoted(param(name)) +
                               " must be within the 32-bit float range (magnitude at most "
                               "3.40282347e+38), got " +
                               buf,
                           param(name));
  }
  out = static_cast<float>(*d);
  return std::nullopt;
}

std::optional<ApiError> FieldReader::get_bool(const char* name, std::optional<bool>& out) const {
  out.reset();
  const Json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_boolean()) return type_error(name, "a boolean", *v);
  out = v->get<bool>();
  return std::nullopt;
}

std::optional<ApiError> FieldReader::get_string(const char* name,
                                                std::optional<std::string>& out) const {
  out.reset();
  const Json* v = find(name);
  if (v == nullptr) return std::nullopt;
  if (!v->is_string()) return type_error(name, "a string", *v);
  out = v->get<std::string>();
  return std::nullopt;
}

ApiError out_of_range(const std::string& param, const std::string& range, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", value);
  return invalid_request(param + " must be " + range + ", got " + buf, param);
}

ApiError out_of_range(const std::string& param, const std::string& range, int64_t value) {
  return invalid_request(param + " must be " + range + ", got " + std::to_string(value), param);
}

}  // namespace novaserve
