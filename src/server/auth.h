// API keys: `Authorization: Bearer <key>` checked against --api-key / --api-key-file in time that
// does not depend on where a guess first differs from a key.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// Equality whose running time depends only on the lengths, never on the content, of a and b
/// (so a timing side channel cannot reveal a key prefix by prefix).
bool constant_time_equal(std::string_view a, std::string_view b);

class ApiKeyAuth {
 public:
  ApiKeyAuth() = default;

  /// Keys from `keys` plus `key_file` (when non-empty: one key per line; surrounding whitespace,
  /// blank lines and lines starting with '#' are skipped). Errors: kNotFound/kIo for an
  /// unreadable file, kInvalidInput for a file without keys or an empty --api-key.
  static Result<ApiKeyAuth> create(const std::vector<std::string>& keys,
                                   const std::string& key_file);

  /// False when no key is configured (every request is allowed).
  bool enabled() const { return !keys_.empty(); }

  /// True when `authorization` (the header's value; null when absent) is "Bearer <key>" (scheme
  /// case-insensitive, RFC 7235) for a configured key. Every key is compared, match or not.
  bool allows(const std::string* authorization) const;

 private:
  std::vector<std::string> keys_;
};

}  // namespace novaserve
