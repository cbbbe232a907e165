// NOVASERVE_CHECK: internal-invariant check. Logs file:line and a streamed message, then aborts
// (or, on a thread under ScopedCheckThrows, throws CheckFailedError).
// Only for invariants of our own code, never for input validation (use Result for that).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <sstream>
#include <stdexcept>

namespace novaserve {

/// Thrown by a failed NOVASERVE_CHECK on a thread that has a ScopedCheckThrows: the engine
/// thread of a replica, so that the check fails that replica and not the process.
class CheckFailedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

namespace detail {
/// Whether failed checks on this thread throw CheckFailedError (else they abort).
inline thread_local bool check_throws = false;
}  // namespace detail

/// While alive, failed checks on the constructing thread throw CheckFailedError instead of
/// aborting. For threads whose state belongs to one replica (the engine thread); state shared by
/// every replica keeps aborting.
class ScopedCheckThrows {
 public:
  ScopedCheckThrows() : previous_(detail::check_throws) { detail::check_throws = true; }
  ~ScopedCheckThrows() { detail::check_throws = previous_; }
  ScopedCheckThrows(const ScopedCheckThrows&) = delete;
  ScopedCheckThrows& operator=(const ScopedCheckThrows&) = delete;

 private:
  bool previous_;
};

}  // namespace novaserve

namespace novaserve::detail {

/// Collects the streamed message of a failed check; when destroyed, logs it and throws
/// CheckFailedError (under ScopedCheckThrows) or aborts.
class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const char* cond) {
    os_ << file << ":" << line << ": check failed: " << cond << " ";
  }
  ~CheckFailure() noexcept(false) {
    std::fprintf(stderr, "%s\n", os_.str().c_str());
    if (check_throws && std::uncaught_exceptions() == 0) throw CheckFailedError(os_.str());
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
