// The host files in deploy/ against the rules the doctor checks: the sysctl drop-in fixes every
// OS finding it names, and the systemd unit carries the required settings. (tests/cli/deploy.sh
// also runs `systemd-analyze verify` on the unit where it works.)
#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <sstream>

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

}  // namespace
}  // namespace novaserve::doctor::testing
