// Result<T>: a value or an error (code + message). std::expected is C++23, which nvcc and
// clang-14 here do not accept, so we keep a minimal one of our own.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace novaserve {

/// Error categories. The CLI maps kInvalidInput/kNotFound/kUnsupported to exit code 2; the server
/// maps them to HTTP 4xx.
enum class ErrorCode {
  kInvalidInput,  ///< malformed file, request or flag value
  kNotFound,      ///< missing file, key or tensor
  kUnsupported,   ///< valid input we do not handle (architecture, tensor type)
  kIo,            ///< read/mmap failure; a network link that failed or timed out
  kInternal,      ///< broken invariant; a device call that failed
};

/// Whether `code` blames the input (a malformed, missing or unsupported file, flag or request),
/// rather than a failure while running (kIo, kInternal). The CLI exits 2 for the former and 1
/// for the latter when a model fails to start or run.
inline bool is_input_error(ErrorCode code) {
  return code == ErrorCode::kInvalidInput || code == ErrorCode::kNotFound ||
         code == ErrorCode::kUnsupported;
}

/// An error: a code plus a message naming the field, byte offset or parameter at fault.
struct Error {
  ErrorCode code = ErrorCode::kInternal;
  std::string message;
};

/// Shorthand constructor: `return Err(ErrorCode::kInvalidInput, "bad magic at offset 0");`
inline Error Err(ErrorCode code, std::string message) {
  return Error{code, std::move(message)};
}

/// A value of type T or an Error. Access the value only after checking ok().
template <typename T>
class [[nodiscard]] Result {
 public:
  Result(T value) : v_(std::move(value)) {}      // NOLINT(google-explicit-constructor)
  Result(Error error) : v_(std::move(error)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return v_.index() == 0; }
  explicit operator bool() const { return ok(); }
  T& value() & { return std::get<0>(v_); }
  const T& value() const& { return std::get<0>(v_); }
  T&& value() && { return std::get<0>(std::move(v_)); }
  T* operator->() { return &std::get<0>(v_); }
  const T* operator->() const { return &std::get<0>(v_); }
  T& operator*() & { return std::get<0>(v_); }
  const Error& error() const { return std::get<1>(v_); }

 private:
  std::variant<T, Error> v_;
};

/// Result for functions that return nothing on success.
template <>
class [[nodiscard]] Result<void> {
 public:
  Result() = default;
  Result(Error error) : e_(std::move(error)) {}  // NOLINT(google-explicit-constructor)
  bool ok() const { return !e_.has_value(); }
  explicit operator bool() const { return ok(); }
  const Error& error() const { return *e_; }

 private:
  std::optional<Error> e_;
};

using Status = Result<void>;

}  // namespace novaserve

/// Propagates an error from an expression returning Result<...>/Status.
#define NOVASERVE_RETURN_IF_ERROR(expr)                            \
  do {                                                             \
    auto novaserve_status_ = (expr);                               \
    if (!novaserve_status_.ok()) return novaserve_status_.error(); \
  } while (0)
