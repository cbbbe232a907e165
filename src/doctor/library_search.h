// Where the dynamic loader looks for shared libraries, read through the root: LD_LIBRARY_PATH,
// /etc/ld.so.conf (with its include lines), then the default directories. Source: ld.so(8),
// "Rpath token expansion" and the search order in its DESCRIPTION; ldconfig(8) for ld.so.conf.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor_inputs.h"
#include "doctor/root_fs.h"

namespace novaserve::doctor {

/// Where a directory came from, for evidence.
enum class LibDirSource { kLdLibraryPath, kLdSoConf, kDefault };

struct LibDir {
  std::string dir;
  LibDirSource source = LibDirSource::kDefault;
  std::string origin;  ///< "LD_LIBRARY_PATH", the .conf file that listed it, or "default"
};

/// The loader's search path in order, without duplicates. ld.so.conf include globs are matched
/// as "<dir>/*<suffix>" (the form every distribution uses: include /etc/ld.so.conf.d/*.conf);
/// nesting stops at depth 4 so a self-including file cannot loop.
std::vector<LibDir> library_search_path(const RootFs& fs, const Environment& env);

/// The first file named `prefix` or `prefix.*` (libcuda.so, libcuda.so.1, libcuda.so.580.65.06)
/// in `dir`, as a full path; empty when there is none.
std::optional<std::string> find_library_in(const RootFs& fs, const std::string& dir,
                                           const std::string& prefix);

/// find_library_in over `dirs`, in order; stub directories (CUDA's lib64/stubs, which hold a
/// libcuda.so that only satisfies the linker) are skipped.
std::optional<std::string> find_library(const RootFs& fs, const std::vector<LibDir>& dirs,
                                        const std::string& prefix);

/// The directories matching "/opt/rocm*/lib" (ROCm's install prefix; /opt/rocm is usually a link
/// to /opt/rocm-<version>).
std::vector<std::string> rocm_lib_dirs(const RootFs& fs);

}  // namespace novaserve::doctor
