// AMD (ROCm/HIP) checks. What ROCm needs at run time, from the ROCm install guide ("Linux
// prerequisites": amdgpu loaded, the user in the render and video groups) and the HIP runtime's
// own requirements: /dev/kfd (the HSA kernel driver, opened by libhsa-runtime64) and a
// /dev/dri/renderD* node per GPU, both read-write; libamdhip64 and libhsa-runtime64 on the
// loader's path.
#include <string>

#include "doctor/check_context.h"
#include "doctor/device_access.h"
#include "doctor/kernel_state.h"
#include "doctor/visible_devices.h"

namespace novaserve::doctor {
namespace {

// The node's mode must change (it has no group rw bits, or its group is root): restore what
// ROCm's udev rules give it, 0660 in group render (or the node's own group, when it has one),
// and persist that with a udev rule, since udev recreates the node at every boot.
std::string amd_mode_fix(const std::vector<InaccessibleNode>& nodes, const std::string& match) {
  std::string group = "render";
  for (const auto& n : nodes) {
    if (n.access.gid != 0 && n.access.group_known) group = n.access.group_name;
  }
  const std::string paths = node_paths(nodes);
  return "the mode must change, not the user's groups: sudo chgrp " + group + " " + paths +
         " && sudo chmod 0660 " + paths + "; persist: echo '" + match + ", GROUP=\"" + group +
         "\", MODE=\"0660\"' | sudo tee /etc/udev/rules.d/70-novaserve-gpu.rules && sudo "
         "udevadm control --reload && sudo udevadm trigger (the user must be in group " +
         group + ")";
}

void check_driver(const CheckContext& ctx, std::vector<Finding>& out) {
  std::vector<Evidence> ev;
  if (module_loaded(ctx.fs, "amdgpu", ev)) return;
  const auto secure_boot = secure_boot_enabled(ctx.fs);
  if (secure_boot.value_or(false)) {
    auto failures = module_signature_failures(ctx.fs, "amdgpu");
    if (!failures.empty()) {
      failures.insert(failures.begin(), {kSecureBootVar, "Secure Boot on"});
      out.push_back({"amd.secure-boot-unsigned", Severity::kError,
                     "Secure Boot is on and the kernel refused an unsigned amdgpu module",
                     std::move(failures),
                     "sign the DKMS module with an enrolled key: sudo mokutil --import "
                     "/var/lib/dkms/mok.pub (reboot, enroll), or turn Secure Boot off in the "
                     "BIOS"});
    } else {
      ev.push_back({kSecureBootVar,
                    "Secure Boot on (no signature failure in the saved kernel "
                    "logs; check `journalctl -k | grep -i signature`)"});
    }
  }
  out.push_back({"amd.driver-not-loaded", Severity::kError,
                 "the amdgpu kernel driver is not loaded: no AMD GPU can be used", std::move(ev),
                 "sudo modprobe amdgpu (install amdgpu-dkms if it is missing; `dmesg | grep "
                 "amdgpu` says why a load failed)"});
}

void check_kfd(const CheckContext& ctx, std::vector<Finding>& out) {
  const auto kfd = device_access(ctx.fs, "/dev/kfd", ctx.in.user);
  if (!kfd) {
    out.push_back({"amd.kfd-missing",
                   Severity::kError,
                   "/dev/kfd is absent: the ROCm runtime (HSA) cannot open the GPU",
                   {{"/dev/kfd", "missing"}},
                   "load amdgpu with KFD support (sudo modprobe amdgpu); in a container, pass "
                   "--device=/dev/kfd --device=/dev/dri"});
    return;
  }
  if (kfd->read_write) return;
  out.push_back({"amd.kfd-permission",
                 Severity::kError,
                 "/dev/kfd is not read-write for " + user_label(ctx.in.user) + " (group " +
                     kfd->group_name + ")",
                 {{"/dev/kfd", describe_access(*kfd, ctx.in.user)}},
                 permission_fix({{"/dev/kfd", *kfd}}, ctx.in.user, [](const auto& nodes) {
                   return amd_mode_fix(nodes, "SUBSYSTEM==\"kfd\", KERNEL==\"kfd\"");
                 })});
}

void check_render_nodes(const CheckContext& ctx, std::vector<Finding>& out) {
  std::vector<std::string> nodes;
  for (const auto& name : ctx.fs.list("/dev/dri")) {
    if (name.rfind("renderD", 0) == 0) nodes.push_back("/dev/dri/" + name);
  }
  if (nodes.empty()) {
    out.push_back({"amd.no-render-node",
                   Severity::kError,
                   "no /dev/dri/renderD* node: the HIP runtime finds no GPU to open",
                   {{"/dev/dri", ctx.fs.exists("/dev/dri") ? "no renderD* entry" : "missing"}},
                   "load amdgpu (sudo modprobe amdgpu); in a container, pass --device=/dev/dri"});
    return;
  }
  // Every node is judged: udev usually gives them one group and mode, but a chmod by hand or a
  // stale rule can leave some of them apart.
  std::vector<InaccessibleNode> denied;
  std::vector<Evidence> ev;
  for (const auto& node : nodes) {
    const auto a = device_access(ctx.fs, node, ctx.in.user);
    if (!a || a->read_write) continue;
    denied.push_back({node, *a});
    ev.push_back({node, describe_access(*a, ctx.in.user)});
  }
  if (denied.empty()) return;
  out.push_back({"amd.render-permission", Severity::kError,
                 node_paths(denied) + (denied.size() == 1 ? " is" : " are") +
                     " not read-write for " + user_label(ctx.in.user),
                 std::move(ev), permission_fix(denied, ctx.in.user, [](const auto& n) {
                   return amd_mode_fix(n, "SUBSYSTEM==\"drm\", KERNEL==\"renderD*\"");
                 })});
}

void check_visible_devices(const CheckContext& ctx, std::vector<Finding>& out) {
  // ROCR_VISIBLE_DEVICES masks at the HSA level, HIP_VISIBLE_DEVICES (and CUDA_VISIBLE_DEVICES,
  // which HIP also honours) in the HIP runtime.
  if (auto ev = hiding_visible_devices(
          ctx.in.env, {"ROCR_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "CUDA_VISIBLE_DEVICES"})) {
    const std::string name = ev->value.substr(0, ev->value.find('='));
    out.push_back({"amd.visible-devices-empty",
                   Severity::kError,
                   name + " hides every GPU from the ROCm runtime",
                   {*ev},
                   "unset " + name + " (or list the GPUs: " + name + "=0)"});
  }
}

void check_runtime(const CheckContext& ctx, std::vector<Finding>& out) {
  for (const char* lib : {"libamdhip64.so", "libhsa-runtime64.so"}) {
    if (find_library(ctx.fs, ctx.lib_path, lib)) continue;
    std::optional<std::string> in_rocm;
    for (const auto& dir : rocm_lib_dirs(ctx.fs)) {
      if ((in_rocm = find_library_in(ctx.fs, dir, lib))) break;
    }
    if (in_rocm) {
      const std::string dir = in_rocm->substr(0, in_rocm->rfind('/'));
      out.push_back(
          {"amd.rocm-path-unset",
           Severity::kError,
           std::string(lib) + " is in " + dir +
               ", which is on neither LD_LIBRARY_PATH nor ld.so.conf",
           {{*in_rocm, "present"},
            {"LD_LIBRARY_PATH",
             ctx.in.env.count("LD_LIBRARY_PATH") ? ctx.in.env.at("LD_LIBRARY_PATH") : "unset"},
            {"/etc/ld.so.conf", "does not list " + dir}},
           "echo " + dir + " | sudo tee /etc/ld.so.conf.d/rocm.conf && sudo ldconfig"});
      return;
    }
    out.push_back({"amd.hip-runtime-missing",
                   Severity::kError,
                   std::string(lib) + " is not installed: HIP programs cannot start",
                   {{"library path and /opt/rocm*/lib", std::string("no ") + lib + "*"}},
                   "sudo apt-get install libamdhip64-5 (Debian) or install ROCm "
                   "(amdgpu-install --usecase=hiplibsdk)"});
    return;
  }
}

}  // namespace

void check_amd(const CheckContext& ctx, std::vector<Finding>& out) {
  if (!has_vendor(ctx.gpus, GpuVendor::kAmd)) return;
  check_driver(ctx, out);
  check_kfd(ctx, out);
  check_render_nodes(ctx, out);
  check_visible_devices(ctx, out);
  check_runtime(ctx, out);
}

}  // namespace novaserve::doctor
