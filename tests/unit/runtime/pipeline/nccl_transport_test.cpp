// NcclLibrary and NcclTransport (runtime/pipeline/nccl_*.h). The transports run over the test
// library tests/fakes/fake_nccl.cpp (NCCL's entry points over local sockets, host memory), with
// the ranks as threads: this tests the loader, the transport's checks, order and sizes, its
// stream wait and its error paths, not NCCL itself (the real NCCL run needs two GPUs: issue 18).
#include "runtime/pipeline/nccl_transport.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <vector>

namespace novaserve {
namespace {

using std::chrono::milliseconds;

std::shared_ptr<const NcclLibrary> fake() {
  auto l = NcclLibrary::load_from(NOVASERVE_FAKE_NCCL);
  EXPECT_TRUE(l.ok()) << l.error().message;
  return l.ok() ? l.value() : nullptr;
}

// Skips in a build that leaves NCCL out (NcclLibrary.ABuildWithoutNcclSaysSo runs there).
class NcclLibraryTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if !defined(NOVASERVE_WITH_NCCL)
    GTEST_SKIP() << "this build leaves the NCCL transport out (NOVASERVE_NCCL=OFF)";
#endif
  }
};

// The fake's own waits (its collective init, a recv with no sender) end after 3 s.
class NcclTransportTest : public NcclLibraryTest {
 protected:
  void SetUp() override {
    NcclLibraryTest::SetUp();
    setenv("NOVASERVE_FAKE_NCCL_TIMEOUT_S", "3", 1);
  }
};

// A world of `n` ranks over the fake (ncclCommInitRank is collective: one thread per rank);
// rank r gets streams[r] when given.
std::vector<std::unique_ptr<NcclTransport>> make_world(
    int n, std::vector<StageStream> streams = {}, milliseconds step_timeout = milliseconds(5000)) {
  auto library = fake();
  std::vector<std::unique_ptr<NcclTransport>> out(static_cast<size_t>(n));
  if (library == nullptr) return out;
  auto id = library->unique_id();
  EXPECT_TRUE(id.ok());
  streams.resize(static_cast<size_t>(n));
  std::vector<std::thread> threads;
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r] {
      auto t = NcclTransport::create(library, *id, r, n, streams[static_cast<size_t>(r)],
                                     milliseconds(10000), step_timeout);
      EXPECT_TRUE(t.ok()) << t.error().message;
      if (t.ok()) out[static_cast<size_t>(r)] = std::move(t.value());
    });
  }
  for (auto& t : threads) t.join();
  return out;
}

TEST_F(NcclLibraryTest, AMissingLibraryNamesThePathAndTheVariable) {
  auto l = NcclLibrary::load_from("/nonexistent/libnccl.so.2");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kNotFound);
  EXPECT_NE(l.error().message.find("cannot load the NCCL library '/nonexistent/libnccl.so.2'"),
            std::string::npos)
      << l.error().message;
  EXPECT_NE(l.error().message.find("NOVASERVE_NCCL_LIB"), std::string::npos);
}

TEST_F(NcclLibraryTest, ALibraryWithoutTheEntryPointsIsRefused) {
  auto l = NcclLibrary::load_from("libc.so.6");
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(l.error().message.find("the NCCL library 'libc.so.6' has no ncclGetVersion"),
            std::string::npos)
      << l.error().message;
}

TEST_F(NcclLibraryTest, TheFakeLoadsOnceAndGivesDistinctIds) {
  auto a = fake();
  auto b = fake();
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a, b);
  EXPECT_EQ(a->version(), "0.0.0");
  auto x = a->unique_id();
  auto y = a->unique_id();
  ASSERT_TRUE(x.ok() && y.ok());
  EXPECT_NE(unique_id_hex(*x), unique_id_hex(*y));
}

TEST_F(NcclLibraryTest, TheCudaToolkitsLibraryHasEveryEntryPoint) {
#if defined(NOVASERVE_REAL_NCCL_LIB)
  // Resolving the symbols and asking the version needs no GPU.
  auto l = NcclLibrary::load_from(NOVASERVE_REAL_NCCL_LIB);
  ASSERT_TRUE(l.ok()) << l.error().message;
  EXPECT_EQ((*l)->version().rfind("2.", 0), 0u) << (*l)->version();
#else
  GTEST_SKIP() << "no libnccl.so.2 under /usr/local/cuda/lib when this build was configured";
#endif
}

TEST(NcclLibrary, ABuildWithoutNcclSaysSo) {
#if defined(NOVASERVE_WITH_NCCL)
  GTEST_SKIP() << "this build has the NCCL transport (NOVASERVE_NCCL=ON)";
#else
  auto l = NcclLibrary::load_from(NOVASERVE_FAKE_NCCL);
  ASSERT_FALSE(l.ok());
  EXPECT_EQ(l.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(l.error().message.find("built without the NCCL transport"), std::string::npos);
#endif
}

TEST(NcclLibrary, NvlsIsTurnedOffUnlessTheUserSetIt) {
  const char* before = std::getenv("NCCL_NVLS_ENABLE");
  const std::string saved = before != nullptr ? before : "";
  unsetenv("NCCL_NVLS_ENABLE");
  set_nccl_env_defaults();
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "0");
  setenv("NCCL_NVLS_ENABLE", "1", 1);
  set_nccl_env_defaults();
  EXPECT_STREQ(std::getenv("NCCL_NVLS_ENABLE"), "1");
  if (before != nullptr) {
    setenv("NCCL_NVLS_ENABLE", saved.c_str(), 1);
  } else {
    unsetenv("NCCL_NVLS_ENABLE");
  }
}

TEST(NcclLibrary, UniqueIdHexRoundTripsAndBadHexIsRefused) {
  nccl::UniqueId id{};
  for (size_t i = 0; i < nccl::kUniqueIdBytes; ++i) id.internal[i] = static_cast<char>(i * 7);
  const std::string hex = unique_id_hex(id);
  ASSERT_EQ(hex.size(), 256u);
  auto back = parse_unique_id_hex(hex);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(std::memcmp(back->internal, id.internal, nccl::kUniqueIdBytes), 0);
  EXPECT_FALSE(parse_unique_id_hex(hex.substr(1)).ok());
  std::string bad = hex;
  bad[10] = 'g';
  auto refused = parse_unique_id_hex(bad);
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("non-hex character at 10"), std::string::npos);
}

TEST_F(NcclTransportTest, AChainOfThreeRanksKeepsOrderSizesAndBytes) {
  auto world = make_world(3);
  ASSERT_TRUE(world[0] && world[1] && world[2]);
  EXPECT_STREQ(world[1]->name(), "nccl");
  const std::vector<int64_t> sizes = {1, 5, 100000, 3};
  std::thread rank0([&] {
    for (size_t m = 0; m < sizes.size(); ++m) {
      std::vector<float> x(static_cast<size_t>(sizes[m]));
      for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(m * 1000 + i);
      // The fake copies at the call, as a device stream's later work may overwrite the source.
      ASSERT_TRUE(world[0]->send(0, x.data(), sizes[m]).ok());
    }
  });
  std::thread rank1([&] {
    for (const int64_t n : sizes) {
      std::vector<float> x(static_cast<size_t>(n));
      const Status got = world[1]->recv(1, x.data(), n);
      ASSERT_TRUE(got.ok()) << got.error().message;
      for (float& v : x) v += 0.5f;
      ASSERT_TRUE(world[1]->send(1, x.data(), n).ok());
    }
  });
  for (size_t m = 0; m < sizes.size(); ++m) {
    std::vector<float> x(static_cast<size_t>(sizes[m]), -1.0f);
    const Status got = world[2]->recv(2, x.data(), sizes[m]);
    ASSERT_TRUE(got.ok()) << got.error().message;
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(x[i], static_cast<float>(m * 1000 + i) + 0.5f) << "message " << m << " value " << i;
    }
  }
  rank0.join();
  rank1.join();
}

TEST_F(NcclTransportTest, EachRankCarriesOnlyItsOwnLinks) {
  auto world = make_world(2);
  ASSERT_TRUE(world[0] && world[1]);
  float x[2] = {0, 0};
  EXPECT_EQ(world[0]->recv(0, x, 2).error().code, ErrorCode::kInvalidInput);  // no predecessor
  EXPECT_EQ(world[1]->send(1, x, 2).error().code, ErrorCode::kInvalidInput);  // no successor
  EXPECT_EQ(world[1]->send(0, x, 2).error().code, ErrorCode::kInvalidInput);  // rank 0's side
  EXPECT_EQ(world[0]->send(0, x, -1).error().code, ErrorCode::kInvalidInput);
  // Refusals are not failures: the link still works.
  ASSERT_TRUE(world[0]->send(0, x, 2).ok());
  EXPECT_TRUE(world[1]->recv(1, x, 2).ok());
  auto library = fake();
  auto id = library->unique_id();
  auto outside =
      NcclTransport::create(library, *id, 2, 2, {}, milliseconds(100), milliseconds(100));
  ASSERT_FALSE(outside.ok());
  EXPECT_EQ(outside.error().code, ErrorCode::kInvalidInput);
}

TEST_F(NcclTransportTest, ASizeMismatchFailsAndTheTransportStaysFailed) {
  auto world = make_world(2);
  ASSERT_TRUE(world[0] && world[1]);
  std::vector<float> x(8, 1.0f);
  ASSERT_TRUE(world[0]->send(0, x.data(), 4).ok());
  const Status st = world[1]->recv(1, x.data(), 8);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInternal);
  EXPECT_NE(st.error().message.find("rank 1 from rank 0: ncclRecv: invalid usage"),
            std::string::npos)
      << st.error().message;
  const Status again = world[1]->recv(1, x.data(), 4);
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().message, st.error().message);
}

TEST_F(NcclTransportTest, APeerThatLeftFailsTheNextRecv) {
  auto world = make_world(2);
  ASSERT_TRUE(world[0] && world[1]);
  std::vector<float> x(4, 2.0f);
  ASSERT_TRUE(world[0]->send(0, x.data(), 4).ok());
  ASSERT_TRUE(world[1]->recv(1, x.data(), 4).ok());
  world[0].reset();  // ncclCommAbort: its connections close
  const Status st = world[1]->recv(1, x.data(), 4);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.error().message.find("remote process exited"), std::string::npos)
      << st.error().message;
}

TEST_F(NcclTransportTest, CreationGivesUpWhenARankNeverJoins) {
  auto library = fake();
  auto id = library->unique_id();
  // Rank 1 never calls ncclCommInitRank: the collective init of rank 0 cannot finish.
  auto t = NcclTransport::create(library, *id, 0, 2, {}, milliseconds(200), milliseconds(100));
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kIo);
  EXPECT_EQ(t.error().message,
            "rank 0 of 2: ncclCommInitRank did not finish within 0.2 s (--nccl-init-timeout): a "
            "rank did not join the NCCL communicator");
}

// A device stage's stream, played by counters: a transfer returns once `done` says so.
struct FakeStream {
  std::atomic<int> current{0};
  std::atomic<int> polls{0};
  std::atomic<int> ready_after{3};  // polls until done
  StageStream hooks() {
    StageStream s;
    s.make_current = [this] {
      ++current;
      return Status();
    };
    s.done = [this]() -> Result<bool> { return ++polls % ready_after.load() == 0; };
    return s;
  }
};

TEST_F(NcclTransportTest, ADeviceTransferWaitsForItsStreamWithinTheStepTimeout) {
  FakeStream s0, s1;
  auto world = make_world(2, {s0.hooks(), s1.hooks()}, milliseconds(150));
  ASSERT_TRUE(world[0] && world[1]);
  EXPECT_GE(s0.current.load(), 1);  // before ncclCommInitRank
  EXPECT_GE(s1.current.load(), 1);
  std::vector<float> x(4, 3.0f);
  const int before = s0.current.load();
  ASSERT_TRUE(world[0]->send(0, x.data(), 4).ok());
  EXPECT_EQ(s0.polls.load(), 3);
  EXPECT_EQ(s0.current.load(), before + 1);
  ASSERT_TRUE(world[0]->send(0, x.data(), 4).ok());
  ASSERT_TRUE(world[1]->recv(1, x.data(), 4).ok());
  EXPECT_EQ(s1.polls.load(), 3);
  // A stream that never finishes: the send fails after --rank-timeout and stays failed.
  s0.ready_after = 1 << 30;
  const Status sent = world[0]->send(0, x.data(), 4);
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().code, ErrorCode::kIo);
  EXPECT_EQ(sent.error().message,
            "rank 0 to rank 1: the NCCL transfer did not complete within 0.15 s "
            "(--rank-timeout)");
  EXPECT_EQ(world[0]->send(0, x.data(), 4).error().message, sent.error().message);
  // And a receive, in a world of its own (rank 0 above is gone).
  FakeStream never;
  never.ready_after = 1 << 30;
  auto other = make_world(2, {StageStream{}, never.hooks()}, milliseconds(150));
  ASSERT_TRUE(other[0] && other[1]);
  ASSERT_TRUE(other[0]->send(0, x.data(), 4).ok());
  const Status got = other[1]->recv(1, x.data(), 4);
  ASSERT_FALSE(got.ok());
  EXPECT_EQ(got.error().message,
            "rank 1 from rank 0: the NCCL transfer did not complete within 0.15 s "
            "(--rank-timeout)");
  EXPECT_EQ(other[1]->recv(1, x.data(), 4).error().message, got.error().message);
}

}  // namespace
}  // namespace novaserve
