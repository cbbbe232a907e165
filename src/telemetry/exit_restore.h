// Restores device settings on the exits that skip destructors: the server's second signal
// (std::_Exit), std::exit and std::terminate (an uncaught exception, a failed check). The
// governor registers its restore here when it first changes a setting; a normal drain runs it
// from the governor's destructor and unregisters it. Fatal signals (SIGSEGV) are not covered:
// NVML is not async-signal-safe; docs/operations.md says to reset clocks by hand then.
#pragma once

#include <cstdint>
#include <functional>

namespace novaserve {

/// Registers `restore`, to run once from run_exit_restores(). Returns an id for
/// unregister_exit_restore. Thread-safe. The first call installs the std::atexit and
/// std::set_terminate hooks (the previous terminate handler still runs after).
uint64_t register_exit_restore(std::function<void()> restore);
void unregister_exit_restore(uint64_t id);

/// Runs and forgets every registered restore (thread-safe; later calls find none). Call it
/// before std::_Exit.
void run_exit_restores();

}  // namespace novaserve
