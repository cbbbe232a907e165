// serve's --numa choice on sysfs fixtures (no binding).
#include "numa/numa_choice.h"

#include <gtest/gtest.h>

#include "../doctor/fixture_tree.h"

namespace novaserve::numa {
namespace {

using doctor::RootFs;
using doctor::testing::FixtureTree;
using doctor::testing::Manifest;

Manifest two_nodes(const std::string& gpu_node) {
  return {{"/sys/devices/system/node/online", "0-1\n"},
          {"/sys/devices/system/node/node0/cpulist", "0-7\n"},
          {"/sys/devices/system/node/node1/cpulist", "8-15\n"},
          {"/sys/bus/pci/devices/0000:c1:00.0/numa_node", gpu_node + "\n"}};
}

NumaMode mode(const std::string& text) {
  auto m = parse_numa_mode(text);
  EXPECT_TRUE(m.ok()) << text;
  return m.ok() ? m.value() : NumaMode{};
}

TEST(NumaMode, ParsesAutoOffAndNodes) {
  EXPECT_EQ(mode("auto").kind, NumaMode::Kind::kAuto);
  EXPECT_EQ(mode("off").kind, NumaMode::Kind::kOff);
  EXPECT_EQ(mode("1").node, 1);
  for (const char* bad : {"", "-1", "0x1", "one", "1.5", "99999"}) {
    auto m = parse_numa_mode(bad);
    ASSERT_FALSE(m.ok()) << bad;
    EXPECT_EQ(m.error().code, ErrorCode::kInvalidInput);
  }
}

TEST(NumaChoice, AutoFollowsTheGpusNode) {
  FixtureTree tree(two_nodes("1"));
  auto c = choose_numa_node(mode("auto"), "0000:C1:00.0", RootFs(tree.root()));
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(c->node, 1);
  EXPECT_NE(c->reason.find("node 1 (CPUs 8-15)"), std::string::npos) << c->reason;
}

TEST(NumaChoice, AutoDoesNothingWithoutAGpuOrOnOneNodeOrWithoutANode) {
  FixtureTree tree(two_nodes("-1"));
  auto cpu = choose_numa_node(mode("auto"), "", RootFs(tree.root()));
  ASSERT_TRUE(cpu.ok());
  EXPECT_FALSE(cpu->node.has_value());
  EXPECT_NE(cpu->reason.find("no GPU"), std::string::npos);
  auto unknown = choose_numa_node(mode("auto"), "0000:c1:00.0", RootFs(tree.root()));
  ASSERT_TRUE(unknown.ok());
  EXPECT_FALSE(unknown->node.has_value());

  FixtureTree one(Manifest{{"/sys/devices/system/node/online", "0\n"},
                           {"/sys/devices/system/node/node0/cpulist", "0-3\n"},
                           {"/sys/bus/pci/devices/0000:c1:00.0/numa_node", "0\n"}});
  auto single = choose_numa_node(mode("auto"), "0000:c1:00.0", RootFs(one.root()));
  ASSERT_TRUE(single.ok());
  EXPECT_FALSE(single->node.has_value());
  EXPECT_NE(single->reason.find("one NUMA node"), std::string::npos) << single->reason;
}

TEST(NumaChoice, ExplicitNodeMustExist) {
  FixtureTree tree(two_nodes("0"));
  auto ok = choose_numa_node(mode("1"), "", RootFs(tree.root()));
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->node, 1);
  auto bad = choose_numa_node(mode("3"), "", RootFs(tree.root()));
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(bad.error().message.find("online nodes: 0-1"), std::string::npos)
      << bad.error().message;
}

TEST(NumaChoice, OffDoesNothing) {
  FixtureTree tree(two_nodes("1"));
  auto c = choose_numa_node(mode("off"), "0000:c1:00.0", RootFs(tree.root()));
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->node.has_value());
}

}  // namespace
}  // namespace novaserve::numa
