#include "doctor/device_access.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace novaserve::doctor {
namespace {

struct GroupEntry {
  std::string name;
  std::vector<std::string> members;
};

// group(5): name:password:GID:user_list.
std::optional<GroupEntry> find_group(const RootFs& fs, uint32_t gid) {
  const auto text = fs.read("/etc/group");
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    std::vector<std::string> fields;
    std::istringstream parts(line);
    std::string f;
    while (std::getline(parts, f, ':')) fields.push_back(f);
    if (fields.size() < 3 || parse_int(fields[2]) != static_cast<int64_t>(gid)) continue;
    GroupEntry g{fields[0], {}};
    if (fields.size() > 3) {
      std::istringstream users(fields[3]);
      while (std::getline(users, f, ',')) g.members.push_back(trim(f));
    }
    return g;
  }
  return std::nullopt;
}

}  // namespace

std::optional<DeviceAccess> device_access(const RootFs& fs, const std::string& path,
                                          const UserIdentity& user) {
  const auto st = fs.stat(path);
  if (!st) return std::nullopt;
  DeviceAccess a;
  a.mode = st->mode;
  a.gid = st->gid;
  const auto group = find_group(fs, st->gid);
  a.group_name = group ? group->name : "gid " + std::to_string(st->gid);
  a.group_known = group.has_value();
  a.owner = user.uid == st->uid;
  const bool in_gids = std::find(user.gids.begin(), user.gids.end(), st->gid) != user.gids.end();
  const bool listed =
      group && !user.name.empty() &&
      std::find(group->members.begin(), group->members.end(), user.name) != group->members.end();
  a.user_in_group = in_gids || listed;
  a.group_pending = listed && !in_gids;
  uint32_t bits = 0;
  if (user.uid == st->uid) {
    bits = (st->mode >> 6) & 7;
  } else if (in_gids) {
    // The kernel checks the process's groups, not /etc/group: a user added to the group must
    // log in again (or restart the service) before the new group applies.
    bits = (st->mode >> 3) & 7;
  } else {
    bits = st->mode & 7;
  }
  a.read_write = user.uid == 0 || (bits & 6) == 6;
  return a;
}

std::string user_label(const UserIdentity& user) {
  return user.name.empty() ? "uid " + std::to_string(user.uid) : user.name;
}

std::string describe_access(const DeviceAccess& a, const UserIdentity& user) {
  char mode[8];
  std::snprintf(mode, sizeof mode, "%04o", a.mode);
  std::string s = std::string("mode ") + mode + ", group " + a.group_name + " (gid " +
                  std::to_string(a.gid) + "); user " + user_label(user) +
                  (a.group_pending ? " is listed in group " + a.group_name +
                                         " in /etc/group but the process lacks it (log in again)"
                   : a.user_in_group ? " is in group " + a.group_name
                                     : " is not in group " + a.group_name);
  if (a.owner) {
    s += "; the user owns the node, so the owner bits decide";
  } else if ((a.mode & 060) != 060) {
    s += "; the mode gives the group no read-write access";
  } else if (a.gid == 0) {
    s += "; the group is root";
  }
  return s;
}

bool needs_mode_fix(const DeviceAccess& a) {
  return a.owner || a.gid == 0 || (a.mode & 060) != 060;
}

std::string node_paths(const std::vector<InaccessibleNode>& nodes) {
  std::string s;
  for (const auto& n : nodes) s += (s.empty() ? "" : " ") + n.path;
  return s;
}

std::string permission_fix(
    const std::vector<InaccessibleNode>& nodes, const UserIdentity& user,
    const std::function<std::string(const std::vector<InaccessibleNode>&)>& mode_fix) {
  const std::string name = user.name.empty() ? "$USER" : user.name;
  std::vector<InaccessibleNode> by_mode;
  std::vector<std::string> parts;
  std::vector<uint32_t> seen;
  for (const auto& n : nodes) {
    const DeviceAccess& a = n.access;
    if (needs_mode_fix(a)) {
      by_mode.push_back(n);
      continue;
    }
    if (std::find(seen.begin(), seen.end(), a.gid) != seen.end()) continue;
    seen.push_back(a.gid);
    const std::string gid = std::to_string(a.gid);
    if (a.group_pending) {
      // The kernel checks the process's groups, fixed at login: usermod has already been done.
      parts.push_back("/etc/group already lists " + name + " in group " + a.group_name +
                      ", but this process lacks it (added after login): log in again (or run "
                      "newgrp " +
                      a.group_name + "), or restart the service");
    } else if (!a.group_known) {
      // usermod -aG needs a group the group database knows.
      parts.push_back("gid " + gid + " has no entry in /etc/group: sudo groupadd -g " + gid +
                      " gpu" + gid + " && sudo usermod -aG gpu" + gid + " " + name +
                      " (in a container: --group-add " + gid + "), then log in again");
    } else {
      const bool in_unit = a.group_name == "render" || a.group_name == "video";
      parts.push_back(
          "sudo usermod -aG " + a.group_name + " " + name +
          " (then log in again, or restart the service; " +
          (in_unit ? std::string("the systemd unit sets SupplementaryGroups=render "
                                 "video")
                   : "for the systemd unit, add " + a.group_name + " to SupplementaryGroups=") +
          ")");
    }
  }
  if (!by_mode.empty()) parts.insert(parts.begin(), mode_fix(by_mode));
  std::string s;
  for (const auto& p : parts) s += (s.empty() ? "" : "; ") + p;
  return s;
}

}  // namespace novaserve::doctor
