// A machine's file tree for doctor tests, built in a temp dir from a small manifest (path ->
// content), so that no fixture tree is committed. Device nodes are regular files (the checks read
// only their existence, owner and mode) with the modes udev gives them: /dev/nvidia* 0666, other
// /dev files 0660 (render/video groups), owned by the test's user, in group fixture_gid().
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>

#include "doctor/doctor.h"

namespace novaserve::doctor::testing {

/// The group of the fixtures' device nodes: the test's group, or 110 when the tests run as
/// group root (nodes in group root get a mode fix, never a group one, so they would not stand
/// for a render group).
uint32_t fixture_gid();

/// Path (absolute, as on the host) -> file content.
using Manifest = std::map<std::string, std::string>;

/// A temp dir holding a manifest's files; removed on destruction.
class FixtureTree {
 public:
  explicit FixtureTree(const Manifest& files);
  ~FixtureTree();
  FixtureTree(const FixtureTree&) = delete;
  FixtureTree& operator=(const FixtureTree&) = delete;

  const std::string& root() const { return root_; }
  void write(const std::string& path, const std::string& content) const;
  void remove(const std::string& path) const;
  void chmod(const std::string& path, mode_t mode) const;

 private:
  std::string root_;
};

/// The files of a healthy AMD host (MI250X-like: GPU on NUMA node 0 of two, amdgpu loaded,
/// /dev/kfd and a render node 0660 in group "render", ROCm libraries in the default path,
/// tuned sysctls, 64 GiB VRAM).
Manifest healthy_amd();

/// The files of a healthy NVIDIA host (H200-like: driver 580.65.06 loaded, device nodes 0666,
/// libcuda in the default path, tuned sysctls).
Manifest healthy_nvidia();

/// Inputs matching the healthy trees: a non-root user in the files' group, serve's default
/// flags, a CUDA 13.0 runtime and 141 GiB of GPU memory.
DoctorInputs healthy_inputs();

/// run_doctor on `tree`, failing the test when the run itself fails.
DoctorReport run(const FixtureTree& tree, const DoctorInputs& in);

/// Whether `report` has a finding `id`.
bool has_finding(const DoctorReport& report, const std::string& id);

/// "id (severity), id (severity), ..." for failure messages.
std::string finding_list(const DoctorReport& report);

}  // namespace novaserve::doctor::testing
