// Which NVIDIA driver a CUDA runtime needs. Source: NVIDIA's "CUDA Compatibility" guide, Minor
// Version Compatibility, Table 1: a runtime of CUDA 11.x runs on drivers >= 450, 12.x on >= 525,
// 13.x on >= 580 (newer drivers always work: backward compatibility). Below that, cudaInit fails
// with cudaErrorInsufficientDriver.
#pragma once

#include <optional>
#include <string>

#include "doctor/root_fs.h"

namespace novaserve::doctor {

/// A driver version "580.65.06" -> {580, 65, 6}; patch 0 when absent ("570.26").
struct DriverVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string text;
};

/// The first token of `text` that is a driver version (digits.digits[.digits]); empty when none.
std::optional<DriverVersion> parse_driver_version(const std::string& text);

/// The loaded kernel module's version: /proc/driver/nvidia/version ("NVRM version: NVIDIA UNIX
/// x86_64 Kernel Module  580.65.06  ..."), else /sys/module/nvidia/version. `file` gets the file
/// that gave it.
std::optional<DriverVersion> nvidia_driver_version(const RootFs& fs, std::string& file);

/// The lowest driver major version that runs a runtime of CUDA `runtime_major`; empty for a
/// major the table does not know (below 11, or newer than 13).
std::optional<int> min_driver_major(int runtime_major);

/// CUDART_VERSION 13000 -> "13.0".
std::string cuda_version_text(int cudart_version);

}  // namespace novaserve::doctor
