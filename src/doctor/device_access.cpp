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
  return std::string("mode ") + mode + ", group " + a.group_name + " (gid " +
         std::to_string(a.gid) + "); user " + user_label(user) +
         (a.group_pending ? " is listed in group " + a.group_name +
                                " in /etc/group but the process lacks it (log in again)"
          : a.user_in_group ? " is in group " + a.group_name
                            : " is not in group " + a.group_name);
}

}  // namespace novaserve::doctor
