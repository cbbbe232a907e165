// The host files in deploy/ against the rules the doctor checks: the sysctl drop-in fixes every
// OS finding it names, and the systemd unit carries the required settings. (tests/cli/deploy.sh
// also runs `systemd-analyze verify` on the unit where it works.)
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

#include "doctor/deploy_sysctl.h"
#include "doctor/nofile_rule.h"
#include "doctor/root_fs.h"
#include "fixture_tree.h"

namespace novaserve::doctor::testing {
namespace {

std::string read_source(const std::string& rel) {
  std::ifstream in(std::string(NOVASERVE_SOURCE_DIR) + "/" + rel);
  EXPECT_TRUE(in) << rel;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// sysctl.conf(5): "key = value" lines; '#' and ';' start comments.
std::map<std::string, std::string> parse_sysctl(const std::string& text) {
  std::map<std::string, std::string> out;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (line.empty() || line[0] == '#' || line[0] == ';') continue;
    const size_t eq = line.find('=');
    EXPECT_NE(eq, std::string::npos) << line;
    if (eq != std::string::npos) out[trim(line.substr(0, eq))] = trim(line.substr(eq + 1));
  }
  return out;
}

// The [Service] section of a unit file, continuation lines joined; repeated keys keep all values.
std::multimap<std::string, std::string> parse_service(const std::string& text) {
  std::multimap<std::string, std::string> out;
  std::istringstream lines(text);
  std::string line;
  std::string section;
  std::string pending;
  while (std::getline(lines, line)) {
    if (!pending.empty()) line = pending + " " + trim(line);
    pending.clear();
    if (!line.empty() && line.back() == '\\') {
      pending = line.substr(0, line.size() - 1);
      continue;
    }
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      section = line;
      continue;
    }
    const size_t eq = line.find('=');
    if (section == "[Service]" && eq != std::string::npos) {
      out.emplace(line.substr(0, eq), line.substr(eq + 1));
    }
  }
  return out;
}

TEST(DoctorDeploySysctl, FixesTheOsFindingsItNames) {
  FixtureTree tree(healthy_amd());
  // Distribution defaults of an untuned host.
  tree.write("/proc/sys/net/core/somaxconn", "128\n");
  tree.write("/proc/sys/vm/swappiness", "60\n");
  tree.write("/proc/sys/vm/dirty_ratio", "20\n");
  tree.write("/proc/sys/kernel/numa_balancing", "1\n");
  const std::vector<std::string> fixed = {"os.somaxconn-low", "os.swappiness", "os.dirty-ratio",
                                          "os.numa-balancing"};
  DoctorReport before = run(tree, healthy_inputs());
  for (const auto& id : fixed) EXPECT_TRUE(has_finding(before, id)) << id;

  const auto settings = parse_sysctl(read_source("deploy/sysctl/99-novaserve.conf"));
  ASSERT_FALSE(settings.empty());
  for (const auto& [key, value] : settings) {
    std::string path = "/proc/sys/" + key;
    for (char& c : path) c = c == '.' ? '/' : c;
    tree.write(path, value + "\n");
  }
  DoctorReport after = run(tree, healthy_inputs());
  for (const auto& id : fixed) EXPECT_FALSE(has_finding(after, id)) << id;
  EXPECT_TRUE(after.findings.empty()) << finding_list(after);
  EXPECT_GE(parse_int(settings.at("net.core.somaxconn")).value_or(0), 2048);
}

TEST(DoctorDeployUnit, CarriesTheRequiredSettings) {
  const auto unit = parse_service(read_source("deploy/systemd/novaserve.service"));
  const auto one = [&](const std::string& key) {
    EXPECT_EQ(unit.count(key), 1u) << key;
    const auto it = unit.find(key);
    return it == unit.end() ? std::string() : it->second;
  };
  EXPECT_EQ(one("Restart"), "on-failure");
  EXPECT_EQ(one("User"), "novaserve");
  const std::string groups = one("SupplementaryGroups");
  EXPECT_NE(groups.find("render"), std::string::npos);
  EXPECT_NE(groups.find("video"), std::string::npos);
  // The same rule doctor's os.nofile-low applies, for the flags the unit passes.
  const std::string exec = one("ExecStart");
  EXPECT_NE(exec.find("--max-queued-requests 1024"), std::string::npos) << exec;
  EXPECT_NE(exec.find("--max-num-seqs 32"), std::string::npos) << exec;
  EXPECT_GE(parse_int(one("LimitNOFILE")).value_or(0), required_open_files(1024, 32));
  // systemd must not SIGKILL a drain that is still within --shutdown-timeout.
  const size_t at = exec.find("--shutdown-timeout ");
  ASSERT_NE(at, std::string::npos);
  const auto shutdown = parse_int(exec.substr(at + 19, exec.find(' ', at + 19) - at - 19));
  ASSERT_TRUE(shutdown.has_value());
  EXPECT_GT(parse_int(one("TimeoutStopSec")).value_or(0), *shutdown);
  EXPECT_NE(exec.find("--numa auto"), std::string::npos) << exec;
}

// The first command in `text` that starts with `start`, continuation lines joined, comment marks
// ('#' at a line's start) dropped and runs of spaces collapsed.
std::string command_in(const std::string& text, const std::string& start) {
  std::istringstream lines(text);
  std::string line;
  std::string cmd;
  bool in = false;
  while (std::getline(lines, line)) {
    line = trim(line);
    if (!line.empty() && line[0] == '#') line = trim(line.substr(1));
    if (!in && line.rfind(start, 0) != 0) continue;
    in = true;
    const bool more = !line.empty() && line.back() == '\\';
    cmd += ' ';
    cmd += trim(more ? line.substr(0, line.size() - 1) : line);
    if (!more) break;
  }
  std::string out;
  for (const char c : cmd) {
    if (c == ' ' && (out.empty() || out.back() == ' ')) continue;
    out += c;
  }
  return trim(out);
}

TEST(DoctorDeployUnit, ItsDoctorCommandHasTheServicesGroupsAndLimits) {
  const std::string text = read_source("deploy/systemd/novaserve.service");
  const auto unit = parse_service(text);
  const std::string cmd = command_in(text, "sudo systemd-run");
  ASSERT_FALSE(cmd.empty());
  EXPECT_NE(cmd.find("-p User=" + unit.find("User")->second), std::string::npos) << cmd;
  EXPECT_NE(cmd.find("-p SupplementaryGroups=\"" + unit.find("SupplementaryGroups")->second + "\""),
            std::string::npos)
      << cmd;
  EXPECT_NE(cmd.find("-p LimitNOFILE=" + unit.find("LimitNOFILE")->second), std::string::npos)
      << cmd;
  EXPECT_NE(cmd.find("novaserve doctor"), std::string::npos) << cmd;
  // docs/operations.md gives the same command.
  EXPECT_EQ(command_in(read_source("docs/operations.md"), "sudo systemd-run"), cmd);
  // `sudo -u novaserve` would run without the unit's groups and limits.
  EXPECT_EQ(command_in(text, "sudo -u"), "");
}

TEST(DoctorDeployUnit, InstallsAGpuBuildForItsDefaultDevice) {
  const std::string text = read_source("deploy/systemd/novaserve.service");
  const auto unit = parse_service(text);
  bool cuda_default = false;
  for (auto [it, end] = unit.equal_range("Environment"); it != end; ++it) {
    cuda_default = cuda_default || it->second == "NOVASERVE_DEVICE=cuda";
  }
  ASSERT_TRUE(cuda_default);
  // build/ is the CPU preset's binary: --device cuda exits 2 there.
  const std::string install = command_in(text, "sudo install -m 0755");
  EXPECT_NE(install.find("build-cuda/novaserve"), std::string::npos) << install;
  EXPECT_NE(text.find("build-hip/novaserve"), std::string::npos);
  EXPECT_NE(text.find("NOVASERVE_DEVICE=cpu"), std::string::npos);
}

TEST(DoctorDeploySysctl, SomaxconnMatchesWhatTheFixesSay) {
  const auto settings = parse_sysctl(read_source("deploy/sysctl/99-novaserve.conf"));
  EXPECT_EQ(parse_int(settings.at("net.core.somaxconn")), kDeploySomaxconn);
}

}  // namespace
}  // namespace novaserve::doctor::testing
