// The binding for real on this machine: node 0 exists everywhere NUMA is available. Each test
// binds a thread of its own, so the rest of the test binary keeps its CPUs.
#include "numa/numa_bind.h"

#include <gtest/gtest.h>
#include <numa.h>

#include <thread>

#include "doctor/cpu_list.h"
#include "doctor/numa_topology.h"
#include "doctor/root_fs.h"

namespace novaserve::numa {
namespace {

TEST(NumaBind, BindsTheThreadsCpusAndMemoryToNodeZero) {
  if (numa_available() < 0) GTEST_SKIP() << "no NUMA support in this kernel";
  const doctor::RootFs fs("/");
  const auto node0 = doctor::numa_node_cpus(fs, 0);
  ASSERT_TRUE(node0.has_value());
  std::thread t([&] {
    ASSERT_TRUE(bind_to_numa_node(0).ok());
    // The kernel's view of this thread (proc(5): /proc/thread-self/status).
    const auto status = fs.read("/proc/thread-self/status");
    ASSERT_TRUE(status.has_value());
    const size_t at = status->find("Cpus_allowed_list:");
    ASSERT_NE(at, std::string::npos);
    const auto allowed =
        doctor::parse_cpu_list(status->substr(at + 18, status->find('\n', at) - at - 18));
    ASSERT_TRUE(allowed.has_value());
    EXPECT_EQ(*allowed, *node0);
    // libnuma's view: runs on node 0 only, allocates from node 0 only.
    bitmask* run = numa_get_run_node_mask();
    bitmask* mem = numa_get_membind();
    for (int n = 0; n <= numa_max_node(); ++n) {
      EXPECT_EQ(numa_bitmask_isbitset(run, static_cast<unsigned>(n)) != 0, n == 0) << n;
      EXPECT_EQ(numa_bitmask_isbitset(mem, static_cast<unsigned>(n)) != 0, n == 0) << n;
    }
    numa_bitmask_free(run);
    numa_bitmask_free(mem);
  });
  t.join();
}

TEST(NumaBind, RefusesANodeThatDoesNotExist) {
  if (numa_available() < 0) GTEST_SKIP() << "no NUMA support in this kernel";
  std::thread t([] {
    const auto st = bind_to_numa_node(numa_max_node() + 1);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  });
  t.join();
}

}  // namespace
}  // namespace novaserve::numa
