// PCI addresses as the GPU runtimes and SMIs write them ("0000:17:00.0", NVML's legacy
// "00000000:17:00.0", upper or lower case), compared as numbers so that the spellings match.
#pragma once

#include <cstdint>
#include <string>

#include "common/result.h"

namespace novaserve {

/// Parses "[domain:]bus:device.function" (hex; domain 0 when absent) into ROCm SMI's BDFID
/// encoding: domain << 32 | bus << 8 | device << 3 | function (rocm_smi.h,
/// rsmi_dev_pci_id_get). Errors: kInvalidInput naming the text.
Result<uint64_t> parse_pci_address(const std::string& text);

}  // namespace novaserve
