#include "doctor/root_fs.h"

#include <sys/stat.h>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <system_error>

namespace novaserve::doctor {

RootFs::RootFs(std::string root) : root_(std::move(root)) {
  // "/" + "/sys" must not become "//sys", and "dir/" + "/sys" not "dir//sys".
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
}

std::string RootFs::host_path(const std::string& path) const {
  if (root_ == "/") return path;
  return root_ + path;
}

std::optional<std::string> RootFs::read(const std::string& path, size_t max_bytes) const {
  std::error_code ec;
  if (!std::filesystem::is_regular_file(host_path(path), ec)) {
    // sysfs and procfs attributes are regular files; device nodes (/dev/kmsg) could block.
    return std::nullopt;
  }
  std::ifstream in(host_path(path), std::ios::binary);
  if (!in) return std::nullopt;
  std::string data(max_bytes, '\0');
  in.read(data.data(), static_cast<std::streamsize>(max_bytes));
  if (in.bad()) return std::nullopt;
  data.resize(static_cast<size_t>(in.gcount()));
  return data;
}

std::optional<std::string> RootFs::read_line(const std::string& path) const {
  auto data = read(path, 64 << 10);
  if (!data) return std::nullopt;
  return trim(data->substr(0, data->find('\n')));
}

std::optional<int64_t> RootFs::read_int(const std::string& path) const {
  auto line = read_line(path);
  if (!line) return std::nullopt;
  return parse_int(*line);
}

bool RootFs::exists(const std::string& path) const {
  struct stat st {};
  return ::lstat(host_path(path).c_str(), &st) == 0;
}

std::optional<FileStat> RootFs::stat(const std::string& path) const {
  struct stat st {};
  if (::stat(host_path(path).c_str(), &st) != 0) return std::nullopt;
  return FileStat{st.st_uid, st.st_gid, static_cast<uint32_t>(st.st_mode & 07777)};
}

std::vector<std::string> RootFs::list(const std::string& dir) const {
  std::vector<std::string> names;
  std::error_code ec;
  std::filesystem::directory_iterator it(host_path(dir), ec);
  for (; !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::string trim(const std::string& s) {
  const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  size_t b = 0;
  size_t e = s.size();
  while (b < e && space(s[b])) ++b;
  while (e > b && space(s[e - 1])) --e;
  return s.substr(b, e - b);
}

std::optional<int64_t> parse_int(const std::string& text) {
  const std::string s = trim(text);
  const bool hex = s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
  const char* begin = s.data() + (hex ? 2 : 0);
  const char* end = s.data() + s.size();
  if (begin == end) return std::nullopt;
  int64_t v = 0;
  const auto r = std::from_chars(begin, end, v, hex ? 16 : 10);
  if (r.ec != std::errc() || r.ptr != end) return std::nullopt;
  return v;
}

}  // namespace novaserve::doctor
