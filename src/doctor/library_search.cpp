#include "doctor/library_search.h"

#include <algorithm>
#include <sstream>

namespace novaserve::doctor {
namespace {

// glibc's trusted directories on x86-64 Debian/Ubuntu (multiarch) and Fedora/RHEL (lib64).
const char* const kDefaultDirs[] = {"/lib/x86_64-linux-gnu",
                                    "/usr/lib/x86_64-linux-gnu",
                                    "/lib64",
                                    "/usr/lib64",
                                    "/lib",
                                    "/usr/lib"};
constexpr int kMaxIncludeDepth = 4;

void add(std::vector<LibDir>& out, std::string dir, LibDirSource source, std::string origin) {
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
  if (dir.empty() || dir[0] != '/') return;  // relative entries depend on the cwd: ignored
  const bool seen =
      std::any_of(out.begin(), out.end(), [&](const LibDir& d) { return d.dir == dir; });
  if (!seen) out.push_back({std::move(dir), source, std::move(origin)});
}

void read_conf(const RootFs& fs, const std::string& file, int depth, std::vector<LibDir>& out) {
  if (depth > kMaxIncludeDepth) return;
  const auto text = fs.read(file);
  if (!text) return;
  std::istringstream lines(*text);
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line.substr(0, line.find('#')));
    if (line.empty()) continue;
    if (line.rfind("include", 0) == 0 && line.size() > 7 && (line[7] == ' ' || line[7] == '\t')) {
      const std::string pattern = trim(line.substr(8));
      const size_t star = pattern.find('*');
      if (star == std::string::npos) {
        read_conf(fs, pattern, depth + 1, out);
        continue;
      }
      const std::string dir = pattern.substr(0, pattern.rfind('/', star));
      const std::string prefix = pattern.substr(dir.size() + 1, star - dir.size() - 1);
      const std::string suffix = pattern.substr(star + 1);
      for (const auto& name : fs.list(dir)) {
        const bool match = name.size() >= prefix.size() + suffix.size() &&
                           name.compare(0, prefix.size(), prefix) == 0 &&
                           name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
        if (match) read_conf(fs, dir + "/" + name, depth + 1, out);
      }
      continue;
    }
    add(out, line, LibDirSource::kLdSoConf, file);
  }
}

}  // namespace

std::vector<LibDir> library_search_path(const RootFs& fs, const Environment& env) {
  std::vector<LibDir> out;
  if (const auto it = env.find("LD_LIBRARY_PATH"); it != env.end()) {
    std::istringstream parts(it->second);
    std::string dir;
    while (std::getline(parts, dir, ':')) {
      add(out, dir, LibDirSource::kLdLibraryPath, "LD_LIBRARY_PATH");
    }
  }
  read_conf(fs, "/etc/ld.so.conf", 0, out);
  for (const char* dir : kDefaultDirs) add(out, dir, LibDirSource::kDefault, "default");
  return out;
}

std::optional<std::string> find_library_in(const RootFs& fs, const std::string& dir,
                                           const std::string& prefix) {
  for (const auto& name : fs.list(dir)) {
    if (name == prefix || name.rfind(prefix + ".", 0) == 0) return dir + "/" + name;
  }
  return std::nullopt;
}

std::optional<std::string> find_library(const RootFs& fs, const std::vector<LibDir>& dirs,
                                        const std::string& prefix) {
  for (const auto& d : dirs) {
    if (d.dir.size() >= 6 && d.dir.compare(d.dir.size() - 6, 6, "/stubs") == 0) continue;
    if (auto found = find_library_in(fs, d.dir, prefix)) return found;
  }
  return std::nullopt;
}

std::vector<std::string> rocm_lib_dirs(const RootFs& fs) {
  std::vector<std::string> dirs;
  for (const auto& name : fs.list("/opt")) {
    if (name.rfind("rocm", 0) == 0 && fs.exists("/opt/" + name + "/lib")) {
      dirs.push_back("/opt/" + name + "/lib");
    }
  }
  return dirs;
}

}  // namespace novaserve::doctor
