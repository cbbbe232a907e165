// NOVASERVE_CHECK: internal-invariant check. Logs file:line and a streamed message, then aborts.
// Only for invariants of our own code, never for input validation (use Result for that).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <sstream>

namespace novaserve::detail {

/// Collects the streamed message of a failed check and aborts when destroyed.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    os_ << file << ":" << line << ": check failed: " << cond << " ";
  }
  [[noreturn]] ~CheckFailure() {
    std::fprintf(stderr, "%s\n", os_.str().c_str());
    std::abort();
  }
  std::ostream& stream() { return os_; }

 private:
  std::ostringstream os_;
};

}  // namespace novaserve::detail

#define NOVASERVE_CHECK(cond) \
  if (cond) {                 \
  } else                      \
    ::novaserve::detail::CheckFailure(__FILE__, __LINE__, #cond).stream()
