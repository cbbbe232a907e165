// Entry points of a library opened with dlopen (NVML, ROCm SMI and NCCL are loaded at run time,
// so that nothing links them).
#pragma once

#include <dlfcn.h>

namespace novaserve {

/// Sets `fn` to `symbol` of `lib` (a dlopen handle), cast to the function pointer type F.
/// Returns false, leaving `fn` null, when the library lacks it.
template <typename F>
bool resolve_symbol(void* lib, const char* symbol, F& fn) {
  fn = reinterpret_cast<F>(dlsym(lib, symbol));
  return fn != nullptr;
}

}  // namespace novaserve
