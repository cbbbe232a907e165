// Whether a user can open a device node read-write, decided from its owner, group and mode
// bits against an injected identity (not access(2), which answers for the doctor's own user and
// the tests' user). Rule: the classic Unix permission check of path_resolution(7) (owner, then
// group, then other); uid 0 may open anything. ACLs are not read.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "doctor/doctor_inputs.h"
#include "doctor/root_fs.h"

namespace novaserve::doctor {

/// The verdict on one device node.
struct DeviceAccess {
  bool read_write = false;     ///< the user may open it O_RDWR
  uint32_t mode = 0;           ///< permission bits
  uint32_t gid = 0;            ///< the node's group
  std::string group_name;      ///< from /etc/group; "gid N" when it has no entry
  bool group_known = false;    ///< /etc/group has an entry for the gid
  bool owner = false;          ///< the user owns the node (so the owner bits decide)
  bool user_in_group = false;  ///< the gid is among the user's groups, or /etc/group lists them
  /// /etc/group lists the user but the process lacks the group: it was added after login, and
  /// takes effect at the next login or service restart.
  bool group_pending = false;
};

/// The access `user` has to `path`; empty when the node does not exist.
std::optional<DeviceAccess> device_access(const RootFs& fs, const std::string& path,
                                          const UserIdentity& user);

/// "/dev/kfd: mode 0660, group render (gid 110); user alice is not in group render".
std::string describe_access(const DeviceAccess& a, const UserIdentity& user);

/// A user name for messages: `user.name`, else "uid N".
std::string user_label(const UserIdentity& user);

/// Whether the node's mode (or owner/group) must change, because no group membership of the
/// user can give access: the user owns the node (the owner bits decide), the group is root
/// (gid 0: never a group to add a service user to), or the mode has no group read-write bits
/// (e.g. 0600).
bool needs_mode_fix(const DeviceAccess& a);

/// One node the user cannot open read-write.
struct InaccessibleNode {
  std::string path;
  DeviceAccess access;
};

/// The fix for `nodes`, one instruction per kind of cause, joined by "; ": `mode_fix` (the
/// vendor's mode/udev instruction) for the nodes for which needs_mode_fix() holds; for the rest,
/// by group: log in again (or newgrp) when /etc/group lists the user but the process lacks the
/// group; create the group first when the gid has no /etc/group entry (usermod needs a name);
/// else usermod -aG.
std::string permission_fix(
    const std::vector<InaccessibleNode>& nodes, const UserIdentity& user,
    const std::function<std::string(const std::vector<InaccessibleNode>&)>& mode_fix);

/// The nodes' paths separated by spaces, for chmod/chgrp.
std::string node_paths(const std::vector<InaccessibleNode>& nodes);

}  // namespace novaserve::doctor
