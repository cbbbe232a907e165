// NVIDIA (CUDA) checks. What a CUDA program needs at run time, from NVIDIA's driver installation
// guide ("Device node verification": /dev/nvidiactl, /dev/nvidia0..N, /dev/nvidia-uvm, created by
// the driver or nvidia-modprobe) and the CUDA Compatibility guide (libcuda.so.1 comes with the
// driver, not the toolkit; the kernel module and libcuda must be the same version).
#include <string>

#include "doctor/check_context.h"
#include "doctor/cuda_compat.h"
#include "doctor/device_access.h"
#include "doctor/kernel_state.h"
#include "doctor/visible_devices.h"

namespace novaserve::doctor {
namespace {

// Returns whether the driver is loaded.
bool check_driver(const CheckContext& ctx, std::vector<Finding>& out) {
  std::vector<Evidence> ev;
  if (module_loaded(ctx.fs, "nvidia", ev)) return true;
  if (secure_boot_enabled(ctx.fs).value_or(false)) {
    auto failures = module_signature_failures(ctx.fs, "nvidia");
    ev.push_back({kSecureBootVar, failures.empty() ? "Secure Boot on (no signature failure in "
                                                     "the saved kernel logs)"
                                                   : "Secure Boot on"});
    for (auto& f : failures) ev.push_back(std::move(f));
  }
  out.push_back({"nvidia.driver-not-loaded", Severity::kError,
                 "the nvidia kernel driver is not loaded: no NVIDIA GPU can be used", std::move(ev),
                 "sudo modprobe nvidia (install the driver if it is missing: sudo apt-get install "
                 "nvidia-driver; under Secure Boot, sign it or enroll its MOK)"});
  return false;
}

void check_device_nodes(const CheckContext& ctx, std::vector<Finding>& out) {
  std::vector<std::string> nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  bool any_gpu_node = false;
  for (const auto& name : ctx.fs.list("/dev")) {
    if (name.size() > 6 && name.rfind("nvidia", 0) == 0 && parse_int(name.substr(6)).has_value()) {
      nodes.push_back("/dev/" + name);
      any_gpu_node = true;
    }
  }
  std::vector<Evidence> missing;
  if (!any_gpu_node) missing.push_back({"/dev/nvidia0", "missing"});
  for (const auto& node : nodes) {
    if (!ctx.fs.exists(node)) missing.push_back({node, "missing"});
  }
  if (!missing.empty()) {
    out.push_back({"nvidia.device-missing", Severity::kError,
                   "NVIDIA device nodes are missing: CUDA cannot open the GPU", std::move(missing),
                   "sudo nvidia-modprobe -u -c=0 (creates /dev/nvidia0, nvidiactl and nvidia-uvm); "
                   "in a container, use the NVIDIA Container Toolkit (--gpus all)"});
  }
  // Every node is judged: CUDA needs all of them, and they can differ (nvidia-uvm is created
  // by nvidia-modprobe, the others by the driver).
  std::vector<InaccessibleNode> denied;
  std::vector<Evidence> ev;
  for (const auto& node : nodes) {
    const auto a = device_access(ctx.fs, node, ctx.in.user);
    if (!a || a->read_write) continue;
    denied.push_back({node, *a});
    ev.push_back({node, describe_access(*a, ctx.in.user)});
  }
  if (denied.empty()) return;
  out.push_back(
      {"nvidia.device-permission", Severity::kError,
       node_paths(denied) + (denied.size() == 1 ? " is" : " are") + " not read-write for " +
           user_label(ctx.in.user),
       std::move(ev), permission_fix(denied, ctx.in.user, [](const auto& n) {
         // The driver creates its nodes 0666 in group root (NVreg_DeviceFileMode=0666,
         // NVreg_DeviceFileGID=0 are its defaults): restore the mode rather than add anyone
         // to group root.
         return "restore the driver's default mode: sudo chmod 0666 " + node_paths(n) +
                "; persist: remove NVreg_DeviceFileMode/NVreg_DeviceFileGID from "
                "/etc/modprobe.d (or set NVreg_DeviceFileMode=0666), then reload the nvidia "
                "modules";
       })});
}

void check_visible_devices(const CheckContext& ctx, std::vector<Finding>& out) {
  if (auto ev = hiding_visible_devices(ctx.in.env, {"CUDA_VISIBLE_DEVICES"})) {
    out.push_back({"nvidia.visible-devices-empty",
                   Severity::kError,
                   "CUDA_VISIBLE_DEVICES hides every GPU from CUDA programs",
                   {*ev},
                   "unset CUDA_VISIBLE_DEVICES (or list the GPUs: CUDA_VISIBLE_DEVICES=0)"});
  }
}

// Returns the directory holding libcuda.so.1, or empty.
std::string check_libcuda(const CheckContext& ctx, std::vector<Finding>& out) {
  // The runtime dlopens libcuda.so.1 (its soname); a bare libcuda.so is only the linker's name.
  if (const auto lib = find_library(ctx.fs, ctx.lib_path, "libcuda.so.1")) {
    return lib->substr(0, lib->rfind('/'));
  }
  out.push_back({"nvidia.libcuda-missing",
                 Severity::kError,
                 "libcuda.so.1 (the driver's user-space half) is on no library path: CUDA "
                 "programs cannot start",
                 {{"LD_LIBRARY_PATH, /etc/ld.so.conf, default dirs", "no libcuda.so.1"}},
                 "install the driver's libraries (sudo apt-get install libcuda1, or the "
                 "driver .run file); a container needs the NVIDIA Container Toolkit"});
  return {};
}

void check_versions(const CheckContext& ctx, const std::string& libcuda_dir,
                    std::vector<Finding>& out) {
  std::string version_file;
  const auto driver = nvidia_driver_version(ctx.fs, version_file);

  // libcuda.so.1 links to libcuda.so.<driver version>; a different version than the kernel
  // module's (a driver upgrade without a reboot) makes cuInit fail with
  // CUDA_ERROR_SYSTEM_DRIVER_MISMATCH and nvidia-smi say "Driver/library version mismatch".
  // The CUDA forward-compatibility package (/usr/local/cuda-*/compat) is a libcuda meant to
  // differ from the kernel module, so it is not judged.
  const bool compat =
      libcuda_dir.size() >= 7 && libcuda_dir.compare(libcuda_dir.size() - 7, 7, "/compat") == 0;
  if (driver && !libcuda_dir.empty() && !compat) {
    for (const auto& name : ctx.fs.list(libcuda_dir)) {
      if (name.rfind("libcuda.so.", 0) != 0) continue;
      const auto lib = parse_driver_version(name.substr(11));
      if (!lib || lib->major < 100 || lib->text == driver->text) continue;
      out.push_back({"nvidia.driver-library-mismatch",
                     Severity::kError,
                     "the loaded kernel module is " + driver->text + " but libcuda is " +
                         lib->text + ": CUDA fails to initialize",
                     {{version_file, driver->text}, {libcuda_dir + "/" + name, lib->text}},
                     "reboot (or unload and reload the nvidia modules) after a driver upgrade"});
      break;
    }
  }

  const auto runtime = ctx.in.cuda_runtime_version;
  if (!runtime) {
    out.push_back({"nvidia.driver-runtime-mismatch",
                   Severity::kInfo,
                   "skipped: this novaserve was built without CUDA, so there is no runtime "
                   "version to compare the driver with",
                   {{version_file.empty() ? "/proc/driver/nvidia/version" : version_file,
                     driver ? driver->text : "unreadable"}},
                   "use a CUDA build (cmake --preset cuda) to check the driver against it"});
    return;
  }
  const auto need = min_driver_major(*runtime / 1000);
  if (!driver || !need) {
    out.push_back(
        {"nvidia.driver-runtime-mismatch",
         Severity::kInfo,
         "could not compare the driver with CUDA " + cuda_version_text(*runtime) +
             (driver ? " (no driver table for this CUDA major)" : " (driver version unreadable)"),
         {{"/proc/driver/nvidia/version", driver ? driver->text : "unreadable"}},
         "nvidia-smi shows the driver and the highest CUDA version it supports"});
    return;
  }
  if (driver->major >= *need) return;
  out.push_back(
      {"nvidia.driver-runtime-mismatch",
       Severity::kError,
       "driver " + driver->text + " is older than CUDA " + cuda_version_text(*runtime) +
           " (this binary's runtime) needs (>= " + std::to_string(*need) + ")",
       {{version_file, driver->text}, {"CUDART_VERSION (build)", std::to_string(*runtime)}},
       "install an NVIDIA driver >= " + std::to_string(*need) +
           ", or build novaserve with a CUDA toolkit this driver supports"});
}

}  // namespace

void check_nvidia(const CheckContext& ctx, std::vector<Finding>& out) {
  if (!has_vendor(ctx.gpus, GpuVendor::kNvidia)) return;
  const bool loaded = check_driver(ctx, out);
  check_device_nodes(ctx, out);
  check_visible_devices(ctx, out);
  const std::string libcuda_dir = check_libcuda(ctx, out);
  if (loaded) check_versions(ctx, libcuda_dir, out);
}

}  // namespace novaserve::doctor
