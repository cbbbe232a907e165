// Kernel state that both GPU families depend on: loaded modules, Secure Boot, the kernel log.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "doctor/finding.h"
#include "doctor/root_fs.h"

namespace novaserve::doctor {

/// Whether kernel module `name` is loaded: /sys/module/<name>/initstate is "live" (or the
/// directory exists without it), or /proc/modules lists it. Built-in drivers also appear in
/// /sys/module, so they count as loaded. `evidence` gets the files read.
bool module_loaded(const RootFs& fs, const std::string& name, std::vector<Evidence>& evidence);

/// Secure Boot state from the EFI variable SecureBoot-8be4df61-93ca-11d2-aa0d-00e098032b8c in
/// /sys/firmware/efi/efivars (the GUID is EFI_GLOBAL_VARIABLE): 4 bytes of attributes, then one
/// byte, 1 = on (UEFI spec 2.10, section 3.3 "Globally Defined Variables"). Empty when not readable
/// (BIOS boot, no efivarfs).
std::optional<bool> secure_boot_enabled(const RootFs& fs);

/// The file holding the Secure Boot variable, for evidence.
extern const char* const kSecureBootVar;

/// Lines of the saved kernel logs (/var/log/kern.log, /var/log/dmesg, /var/log/syslog: the
/// journal is binary and not read) that contain every word of at least one of `patterns`
/// (case-sensitive). At most `max_lines`, each with its file name. Each log is read once, in its
/// first 16 MiB.
std::vector<Evidence> kernel_log_lines(const RootFs& fs,
                                       const std::vector<std::vector<std::string>>& patterns,
                                       size_t max_lines = 3);

/// Kernel-log lines showing that an unsigned module was refused under Secure Boot: lines naming
/// `module` with "signature" or "Key was rejected", and the kernel's own refusal messages, which
/// do not name the module ("Loading of unsigned module is rejected", and lockdown's "unsigned
/// module loading is restricted"; kernel_lockdown(7), kernel module signing docs:
/// Documentation/admin-guide/module-signing.rst).
std::vector<Evidence> module_signature_failures(const RootFs& fs, const std::string& module);

}  // namespace novaserve::doctor
