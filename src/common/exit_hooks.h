// Work that must run on the exits that skip destructors: the server's second signal
// (std::_Exit), std::exit and std::terminate (an uncaught exception, a failed check). The
// governor registers its clock restore here when it first changes a setting; rank 0 of a
// multi-process pipeline registers telling each other rank to shut down (remote_stage.h). A
// normal end runs them from the owners' destructors and unregisters them. Fatal signals
// (SIGSEGV) are not covered: NVML and sockets are not async-signal-safe; docs/operations.md says
// to reset clocks by hand then.
#pragma once

#include <cstdint>
#include <functional>

namespace novaserve {

/// Registers `hook`, to run once from run_exit_hooks(). Returns an id for unregister_exit_hook.
/// Thread-safe. The first call installs the std::atexit and std::set_terminate hooks (the
/// previous terminate handler still runs after). A hook may run on any thread, while its owner's
/// threads still run: it must be thread-safe and bounded in time.
uint64_t register_exit_hook(std::function<void()> hook);
void unregister_exit_hook(uint64_t id);

/// Runs and forgets every registered hook (thread-safe; later calls find none). Call it before
/// std::_Exit.
void run_exit_hooks();

}  // namespace novaserve
