// Read-only access to a machine's files through a root directory, so that every doctor check and
// the NUMA choice read a fixture tree in tests exactly as they read / on a host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace novaserve::doctor {

/// What stat(2) says about a file, for permission checks that must not depend on the user the
/// tests run as (the doctor compares these bits with an injected identity instead of access(2)).
struct FileStat {
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t mode = 0;  ///< permission bits only (st_mode & 07777)
};

/// A view of the file system below `root`. Paths given to its methods are absolute host paths
/// ("/sys/module/amdgpu"); they are resolved as root + path. No method throws or aborts: a file
/// that is missing, unreadable, a directory where a file was expected, or too large gives an
/// empty optional (or an empty list).
class RootFs {
 public:
  /// `root` is a directory ("/" on a host, a temp dir in tests).
  explicit RootFs(std::string root);

  const std::string& root() const { return root_; }

  /// The whole file, at most `max_bytes` (1 MiB: sysfs/procfs files are one page; logs are
  /// read in their first MiB, which is enough for a boot's module-load messages).
  std::optional<std::string> read(const std::string& path, size_t max_bytes = 1 << 20) const;

  /// The file's first line, trimmed of surrounding whitespace (sysfs attributes, sysctls).
  std::optional<std::string> read_line(const std::string& path) const;

  /// The file's content as a decimal or 0x-prefixed hexadecimal integer (after trimming), or
  /// empty when it is missing or not entirely a number.
  std::optional<int64_t> read_int(const std::string& path) const;

  /// Whether anything (file, directory, device node) exists at `path`.
  bool exists(const std::string& path) const;

  std::optional<FileStat> stat(const std::string& path) const;

  /// The names in a directory (no "." or ".."), sorted; empty when it is missing or unreadable.
  std::vector<std::string> list(const std::string& dir) const;

 private:
  std::string host_path(const std::string& path) const;

  std::string root_;
};

/// `s` without leading and trailing spaces, tabs and newlines.
std::string trim(const std::string& s);

/// Parses a decimal or 0x-prefixed hexadecimal integer that fills all of `s` (after trimming).
std::optional<int64_t> parse_int(const std::string& s);

}  // namespace novaserve::doctor
