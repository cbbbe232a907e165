#include "runtime/pipeline/nccl_library.h"

#include <dlfcn.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "common/dl_symbol.h"

namespace novaserve {
namespace {

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

void set_nccl_env_defaults() {
  setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
}

Result<std::shared_ptr<const NcclLibrary>> NcclLibrary::load() {
  const char* env = std::getenv("NOVASERVE_NCCL_LIB");
  return load_from(env != nullptr && *env != '\0' ? env : kDefaultNcclLibrary);
}

Result<std::shared_ptr<const NcclLibrary>> NcclLibrary::load_from(const std::string& path) {
#if defined(NOVASERVE_WITH_NCCL)
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const NcclLibrary>> loaded;
  std::lock_guard<std::mutex> lock(mu);
  if (const auto it = loaded.find(path); it != loaded.end()) return it->second;
  set_nccl_env_defaults();
  // Never closed: NCCL keeps threads of its own while communicators live.
  void* lib = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    const char* why = dlerror();
    return Err(ErrorCode::kNotFound,
               "cannot load the NCCL library '" + path + "': " + (why ? why : "unknown error") +
                   " (set NOVASERVE_NCCL_LIB to its path, or add its folder to LD_LIBRARY_PATH)");
  }
  NcclApi a;
  const char* missing = nullptr;
  const auto need = [&](const char* name, auto& fn) {
    if (missing == nullptr && !resolve_symbol(lib, name, fn)) missing = name;
  };
  need("ncclGetVersion", a.get_version);
  need("ncclGetUniqueId", a.get_unique_id);
  need("ncclCommInitRank", a.comm_init_rank);
  need("ncclCommAbort", a.comm_abort);
  need("ncclCommGetAsyncError", a.comm_get_async_error);
  need("ncclSend", a.send);
  need("ncclRecv", a.recv);
  need("ncclGetErrorString", a.get_error_string);
  if (missing != nullptr) {
    dlclose(lib);
    return Err(ErrorCode::kUnsupported, "the NCCL library '" + path + "' has no " + missing +
                                            " (NCCL 2.7 or later has every entry point used)");
  }
  std::shared_ptr<const NcclLibrary> l(new NcclLibrary(path, a));
  loaded.emplace(path, l);
  return l;
#else
  return Err(ErrorCode::kUnsupported,
             "this novaserve was built without the NCCL transport (NOVASERVE_NCCL=OFF, as in the "
             "HIP build: Debian has no RCCL), so '" +
                 path + "' is not loaded");
#endif
}

std::string NcclLibrary::version() const {
  int code = 0;
  if (api_.get_version(&code) != nccl::kSuccess) return "unknown";
  return std::to_string(code / 10000) + "." + std::to_string(code / 100 % 100) + "." +
         std::to_string(code % 100);
}

Result<nccl::UniqueId> NcclLibrary::unique_id() const {
  nccl::UniqueId id{};
  if (const nccl::Result r = api_.get_unique_id(&id); r != nccl::kSuccess) {
    return Err(ErrorCode::kInternal, error_text("ncclGetUniqueId", r));
  }
  return id;
}

std::string NcclLibrary::error_text(const char* call, nccl::Result r) const {
  const char* text = api_.get_error_string(r);
  return std::string(call) + ": " + (text != nullptr ? text : "NCCL error") + " (NCCL result " +
         std::to_string(static_cast<int>(r)) + "; NCCL_DEBUG=WARN prints NCCL's reason)";
}

std::string unique_id_hex(const nccl::UniqueId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * nccl::kUniqueIdBytes);
  for (const char c : id.internal) {
    const auto b = static_cast<unsigned char>(c);
    out += kDigits[b >> 4];
    out += kDigits[b & 15];
  }
  return out;
}

Result<nccl::UniqueId> parse_unique_id_hex(std::string_view hex) {
  const std::string want = std::to_string(2 * nccl::kUniqueIdBytes) + " hex digits";
  if (hex.size() != 2 * nccl::kUniqueIdBytes) {
    return Err(ErrorCode::kInvalidInput, "an NCCL unique id must be " + want + ", got " +
                                             std::to_string(hex.size()) + " characters");
  }
  nccl::UniqueId id{};
  for (size_t i = 0; i < nccl::kUniqueIdBytes; ++i) {
    const int hi = hex_value(hex[2 * i]);
    const int lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      return Err(ErrorCode::kInvalidInput, "an NCCL unique id must be " + want +
                                               ", got a non-hex character at " +
                                               std::to_string(hi < 0 ? 2 * i : 2 * i + 1));
    }
    id.internal[i] = static_cast<char>(hi * 16 + lo);
  }
  return id;
}

}  // namespace novaserve
