// The faults a new-user trial found in the multi-process pipeline (issue 17, docs/multi-gpu.md
// "Several processes"), each reproduced on loopback TCP: idle connections that must not delay a
// rank, a stray peer's huge first message, a duplicate rank that comes after the world is full,
// a rank that stops answering a step, rank 0 giving up, and a model of the same shapes with
// other weights.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <mutex>
#include <thread>

#include "../../model/tiny_model.h"
#include "rank_test_util.h"
#include "runtime/pipeline/rank_pipeline.h"
#include "runtime/pipeline/rank_wire.h"
#include "runtime/pipeline/remote_stage.h"
#include "runtime/pipeline/stage_protocol.h"

namespace novaserve {
namespace {

using std::chrono::milliseconds;

// This process's resident memory, bytes (VmRSS of /proc/self/status).
int64_t resident_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6)) * 1024;
  }
  return 0;
}

// Waits (up to 4 s) for the other end to close `fd`; true when it did.
bool closed_by_peer(int fd) {
  timeval tv{4, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  char c = 0;
  const ssize_t n = ::recv(fd, &c, 1, 0);
  return n == 0 || (n < 0 && errno == ECONNRESET);
}

TEST(RankFaults, IdleConnectionsDoNotDelayARank) {
  auto listener = listen_local();
  ASSERT_NE(listener, nullptr);
  const uint16_t port = listener->port();
  // Three connections that never say anything (port scanners, probes) come first. Read one at a
  // time, each would hold the rank's hello for the 5-s hello timeout, past the 3-s deadline.
  int idle[3];
  for (int& fd : idle) {
    fd = connect_raw(port);
    ASSERT_GE(fd, 0);
  }
  std::thread rank1([port] {
    auto link = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(10000));
    EXPECT_TRUE(link.ok()) << link.error().message;
  });
  auto ranks = listener->accept_ranks(2, milliseconds(3000), kNoCheck);
  rank1.join();
  for (int fd : idle) ::close(fd);
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  EXPECT_EQ((*ranks)[0].link.peer_rank(), 1);
}

TEST(RankFaults, AHugeFirstMessageIsDroppedBeforeAnyAllocation) {
  // The reader's limit: a hello may announce at most kMaxHelloBytes of header and of payload.
  const auto huge = encode_rank_prefix(10, uint64_t{3} << 30);
  EXPECT_FALSE(decode_rank_prefix(huge, kMaxHelloBytes, kMaxHelloBytes, "a new peer").ok());
  EXPECT_TRUE(decode_rank_prefix(huge, kMaxRankHeaderBytes, kMaxRankPayloadBytes, "rank 1").ok());

  auto listener = listen_local();
  ASSERT_NE(listener, nullptr);
  const uint16_t port = listener->port();
  const int64_t rss_before = resident_bytes();
  bool stray_dropped = false;
  std::thread peers([port, &huge, &stray_dropped] {
    // A stray peer announces a 3 GiB payload, sends its 10-byte header and nothing more: rank 0
    // must drop it at the prefix (not allocate the payload and wait for its bytes), and then
    // admit the real rank.
    const int fd = connect_raw(port);
    ASSERT_GE(fd, 0);
    const std::string message = std::string(huge.begin(), huge.end()) + R"({"op":"x"})";
    ASSERT_EQ(::write(fd, message.data(), message.size()), static_cast<ssize_t>(message.size()));
    stray_dropped = closed_by_peer(fd);
    ::close(fd);
    auto link = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(10000));
    EXPECT_TRUE(link.ok()) << link.error().message;
  });
  auto ranks = listener->accept_ranks(2, milliseconds(4000), kNoCheck);
  peers.join();
  EXPECT_TRUE(stray_dropped);
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  EXPECT_LT(resident_bytes() - rss_before, int64_t{512} << 20);
}

TEST(RankFaults, ALateDuplicateRankIsRefusedWithAReason) {
  auto listener = listen_local();
  ASSERT_NE(listener, nullptr);
  const uint16_t port = listener->port();
  std::thread rank1([port] {
    auto link = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(10000));
    EXPECT_TRUE(link.ok()) << link.error().message;
  });
  auto ranks = listener->accept_ranks(2, milliseconds(10000), kNoCheck);
  rank1.join();
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  std::mutex mu;
  std::vector<std::string> logged;
  listener->refuse_late_joiners([&](const std::string& refusal) {
    std::lock_guard<std::mutex> lock(mu);
    logged.push_back(refusal);
  });
  // The world is full: a second rank 1, and a process of another world, are told why.
  auto late = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(5000));
  ASSERT_FALSE(late.ok());
  EXPECT_EQ(late.error().code, ErrorCode::kIo);
  EXPECT_NE(late.error().message.find("rank 0 refused this rank: rank 1 has already joined"),
            std::string::npos)
      << late.error().message;
  auto other = connect_to_rank0({"127.0.0.1", port}, hello(2, 3), milliseconds(5000));
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.error().message.find("--world-size 3"), std::string::npos)
      << other.error().message;
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(logged.size(), 2u);
  // The joined rank's link is untouched.
  EXPECT_EQ((*ranks)[0].link.peer_rank(), 1);
}

TEST(RankFaults, AStepThatGetsNoAnswerFailsWithinTheRankTimeout) {
  auto listener = listen_local();
  ASSERT_NE(listener, nullptr);
  const uint16_t port = listener->port();
  // A fake rank 1 that answers the start-up commands, then takes a step and never answers it,
  // as a stopped process would; it records the message that comes after the step.
  std::string after_step;
  std::thread rank1([port, &after_step] {
    auto link = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(10000));
    ASSERT_TRUE(link.ok()) << link.error().message;
    for (;;) {
      auto m = link->receive();
      ASSERT_TRUE(m.ok()) << m.error().message;
      const std::string op = header_string(m->header, "op");
      if (op == "forward") break;
      ASSERT_TRUE(link->send({{"op", "ok"}, {"describe", "fake"}, {"memory_domain", "host"}}).ok());
    }
    auto next = link->receive(milliseconds(10000));
    after_step = next.ok() ? header_string(next->header, "op") : next.error().message;
  });
  auto ranks = listener->accept_ranks(2, milliseconds(10000), kNoCheck);
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  {
    auto stage = RemoteStage::create(std::move((*ranks)[0].link), LayerRange{0, 1}, 4, 8, false,
                                     RankTimeouts{milliseconds(10000), milliseconds(300)}, nullptr);
    ASSERT_TRUE(stage.ok()) << stage.error().message;
    auto pool = (*stage)->allocate_kv(64);
    ASSERT_TRUE(pool.ok()) << pool.error().message;
    ASSERT_TRUE((*stage)->hidden_input(1).ok());
    const int32_t token = 1;
    const int32_t block = 0;
    ForwardSeq seq;
    seq.tokens = {&token, 1};
    seq.kv.k = pool->k;
    seq.kv.v = pool->v;
    seq.kv.layer_stride = 64;
    seq.kv.block_table = &block;
    seq.kv.n_blocks = 1;
    seq.kv.block_size = 16;
    const Status st = (*stage)->forward({&seq, 1}, ActQuant::kNone);
    ASSERT_FALSE(st.ok());
    EXPECT_EQ(st.error().code, ErrorCode::kIo);
    EXPECT_NE(st.error().message.find("rank 1 did not answer within 0.3 s (--rank-timeout)"),
              std::string::npos)
        << st.error().message;
    // The link stays failed: the next step fails without sending anything.
    const Status again = (*stage)->forward({&seq, 1}, ActQuant::kNone);
    ASSERT_FALSE(again.ok());
    EXPECT_NE(again.error().message.find("did not answer"), std::string::npos);
  }  // destroyed: the rank is still told to shut down, after the step it never answered
  rank1.join();
  EXPECT_EQ(after_step, "shutdown");
}

TEST(RankFaults, RankZeroGivingUpEndsTheRankWithItsReason) {
  auto listener = listen_local();
  ASSERT_NE(listener, nullptr);
  const uint16_t port = listener->port();
  Status served;
  std::thread rank1([port, &served] {
    auto link = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(10000));
    ASSERT_TRUE(link.ok()) << link.error().message;
    const StageFactory never = [](LayerRange) -> Result<std::unique_ptr<PipelineStage>> {
      return Err(ErrorCode::kInternal, "no stage expected");
    };
    served = serve_stage(*link, ModelConfig{}, never);
  });
  auto ranks = listener->accept_ranks(2, milliseconds(10000), kNoCheck);
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  (*ranks)[0].link.shutdown_peer("rank 2 loaded another model");
  (*ranks)[0].link.shutdown_peer();  // once per link: this one is not sent
  rank1.join();
  ASSERT_FALSE(served.ok());
  EXPECT_EQ(served.error().code, ErrorCode::kIo);
  EXPECT_EQ(served.error().message, "rank 0 gave up: rank 2 loaded another model");
}

TEST(RankFaults, SameShapesOtherWeightsAreRefusedOnBothSides) {
  testing::TinySpec spec;
  const testing::TinyFile ours = testing::make_tiny_model(spec);
  spec.seed = 2;  // the same shapes and tensor bytes, other weights
  const testing::TinyFile theirs = testing::make_tiny_model(spec);
  ASSERT_NE(ours.file, nullptr);
  ASSERT_NE(theirs.file, nullptr);
  auto a = model_identity(*ours.file);
  auto b = model_identity(*theirs.file);
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)["tensor_bytes"], (*b)["tensor_bytes"]);
  EXPECT_EQ(model_mismatch(*a, *a), "");
  const std::string why = model_mismatch(*a, *b);
  EXPECT_NE(why.find("the same shapes and tensor sizes but other weights"), std::string::npos)
      << why;
  spec.n_layer = 3;
  auto c = model_identity(*testing::make_tiny_model(spec).file);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(model_mismatch(*a, *c), "n_layer 3, rank 0's 2");

  // Through the hello: rank 0 refuses rank 1 and both say why.
  RankWorld w;
  w.address = RendezvousAddress{"127.0.0.1", free_port()};
  w.timeout = milliseconds(10000);
  const auto cpu = [](std::shared_ptr<const GgufFile> f) -> StageFactory {
    return [f](LayerRange r) { return create_cpu_stage(f, r, 1); };
  };
  Status rank1_status;
  std::thread rank1([&] {
    RankWorld mine = w;
    mine.rank = 1;
    rank1_status = run_pipeline_rank(*theirs.file, mine, "cpu", cpu(theirs.file));
  });
  auto p = create_rank0_pipeline(ours.file, PipelineConfig{0, "auto", false, 0}, w, "cpu",
                                 cpu(ours.file));
  rank1.join();
  ASSERT_FALSE(p.ok());
  EXPECT_EQ(p.error().code, ErrorCode::kIo);
  EXPECT_NE(p.error().message.find("rank 1 loaded another model: the same shapes"),
            std::string::npos)
      << p.error().message;
  ASSERT_FALSE(rank1_status.ok());
  EXPECT_NE(rank1_status.error().message.find("rank 0 refused this rank: rank 1 loaded another "
                                              "model: the same shapes"),
            std::string::npos)
      << rank1_status.error().message;
}

}  // namespace
}  // namespace novaserve
