// OpenAI-style API errors: {"error": {"message", "type", "param", "code"}} with an HTTP status.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <variant>

namespace novaserve {

/// An error answered to an HTTP client. `type` follows OpenAI's values
/// ("invalid_request_error", "authentication_error", "not_found_error", "server_error", ...).
struct ApiError {
  int status = 400;  ///< HTTP status code (4xx for client faults)
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  ///< offending parameter, empty when none
  std::string code;   ///< machine-readable code, empty when none

  /// The OpenAI error object; `param`/`code` are JSON null when empty.
  nlohmann::json to_json() const;
};

/// 400 invalid_request_error naming `param` (may be empty).
ApiError invalid_request(std::string message, std::string param = {});

/// A value or an ApiError, for request parsing and handlers (Result<T> carries ErrorCode, which
/// does not say which HTTP status or OpenAI error type to answer).
template <typename T>
class [[nodiscard]] ApiResult {
 public:
  ApiResult(T value) : v_(std::move(value)) {}         // NOLINT(google-explicit-constructor)
  ApiResult(ApiError error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return v_.index() == 0; }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  const ApiError& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, ApiError> v_;
};

}  // namespace novaserve
