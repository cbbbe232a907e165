// Typed reading of optional request fields with OpenAI-style errors that name the field.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "server/api_error.h"
#include "server/json_body.h"

namespace novaserve {

/// Reads fields of one JSON object. JSON null counts as absent: OpenAI's SDKs send null for
/// parameters left unset. Every getter leaves `out` empty when the field is absent and returns
/// a 400 naming the field ("'n' must be an integer, got string") when it has the wrong type.
class FieldReader {
 public:
  /// `obj` must be an object and outlive the reader. `prefix` is prepended to names in errors
  /// ("stream_options." gives param "stream_options.include_usage").
  explicit FieldReader(const Json& obj, std::string prefix = {})
      : obj_(obj), prefix_(std::move(prefix)) {}

  /// The field, or nullptr when absent or null.
  const Json* find(const char* name) const;

  /// Integers; a float with an integral value (2.0) is accepted, as pydantic does for OpenAI's
  /// and vLLM's request models. Values outside int64 are a type error.
  std::optional<ApiError> get_int(const char* name, std::optional<int64_t>& out) const;
  /// Any JSON number, as double (non-finite values cannot occur in JSON text).
  std::optional<ApiError> get_number(const char* name, std::optional<double>& out) const;
  /// A JSON number for a 32-bit float field (the engine's sampling parameters), rounded to float
  /// so that the caller's range checks see the value the engine will use (1e-50 becomes 0).
  /// A magnitude beyond FLT_MAX (1e308) is a 400 naming the field, not an infinity.
  std::optional<ApiError> get_float(const char* name, std::optional<float>& out) const;
  std::optional<ApiError> get_bool(const char* name, std::optional<bool>& out) const;
  std::optional<ApiError> get_string(const char* name, std::optional<std::string>& out) const;

  /// "stream_options.include_usage" for `name` "include_usage".
  std::string param(const char* name) const { return prefix_ + name; }

  /// 400 "'name' must be <expected>, got <type>".
  ApiError type_error(const char* name, const char* expected, const Json& got) const;

 private:
  const Json& obj_;
  std::string prefix_;
};

/// `v` as an integer when it is one (see FieldReader::get_int); nullopt otherwise.
std::optional<int64_t> json_integer(const Json& v);

/// 400 "<param> must be <range>, got <value>" with `param` set.
ApiError out_of_range(const std::string& param, const std::string& range, double value);
ApiError out_of_range(const std::string& param, const std::string& range, int64_t value);

}  // namespace novaserve
