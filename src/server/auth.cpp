#include "server/auth.h"

#include <fstream>

#include "server/http_message.h"

namespace novaserve {
namespace {

std::string_view trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return {};
  const size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

}  // namespace

bool constant_time_equal(std::string_view a, std::string_view b) {
  const size_t n = std::max(a.size(), b.size());
  unsigned diff = a.size() != b.size() ? 1u : 0u;
  for (size_t i = 0; i < n; ++i) {
    const unsigned x = i < a.size() ? static_cast<uint8_t>(a[i]) : 0u;
    const unsigned y = i < b.size() ? static_cast<uint8_t>(b[i]) : 0u;
    diff |= x ^ y;
  }
  return diff == 0;
}

Result<ApiKeyAuth> ApiKeyAuth::create(const std::vector<std::string>& keys,
                                      const std::string& key_file) {
  ApiKeyAuth auth;
  for (const std::string& k : keys) {
    const std::string_view t = trim(k);
    if (t.empty()) return Err(ErrorCode::kInvalidInput, "--api-key must not be empty");
    auth.keys_.emplace_back(t);
  }
  if (!key_file.empty()) {
    std::ifstream in(key_file);
    if (!in) return Err(ErrorCode::kNotFound, "cannot read --api-key-file " + key_file);
    size_t from_file = 0;
    for (std::string line; std::getline(in, line);) {
      const std::string_view t = trim(line);
      if (t.empty() || t.front() == '#') continue;
      auth.keys_.emplace_back(t);
      ++from_file;
    }
    if (in.bad()) return Err(ErrorCode::kIo, "error reading --api-key-file " + key_file);
    if (from_file == 0) {
      return Err(ErrorCode::kInvalidInput, "--api-key-file " + key_file + " holds no keys");
    }
  }
  return auth;
}

bool ApiKeyAuth::allows(const std::string* authorization) const {
  if (keys_.empty()) return true;
  if (authorization == nullptr) return false;
  const std::string_view h = trim(*authorization);
  constexpr std::string_view kScheme = "bearer ";
  if (h.size() <= kScheme.size() || !iequals(h.substr(0, kScheme.size()), kScheme)) return false;
  const std::string_view token = trim(h.substr(kScheme.size()));
  bool ok = false;
  for (const std::string& k : keys_) ok |= constant_time_equal(token, k);
  return ok;
}

}  // namespace novaserve
