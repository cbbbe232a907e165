// The links of a multi-process pipeline (runtime/pipeline/rank_link.h, stage_protocol.h): the
// --nccl-init URL, the hello and its refusals, messages both ways, stray peers, the timeouts
// (closed ports on 127.0.0.1 only), and malformed step plans that must be refused, not crash.
#include "runtime/pipeline/rank_link.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include "rank_test_util.h"
#include "runtime/pipeline/rank_listener.h"
#include "runtime/pipeline/stage_protocol.h"

namespace novaserve {
namespace {

using std::chrono::milliseconds;

TEST(RankLinkUrl, ParsesAndRefuses) {
  auto ok = parse_rendezvous_url("tcp://10.0.0.2:29500");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(ok->host, "10.0.0.2");
  EXPECT_EQ(ok->port, 29500);
  EXPECT_TRUE(parse_rendezvous_url("tcp://rank0.svc.cluster.local:1").ok());
  for (const char* bad :
       {"10.0.0.2:29500", "tcp://:29500", "tcp://host", "tcp://host:0", "tcp://host:65536",
        "tcp://host:12x", "tcp://a..b:5", "tcp://300.1.1.1:5", "tcp://ho st:5", "http://host:5"}) {
    auto r = parse_rendezvous_url(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
    EXPECT_NE(r.error().message.find("--nccl-init"), std::string::npos) << r.error().message;
  }
}

TEST(RankLink, MessagesBothWaysAfterAStrayPeer) {
  auto listener = listen_local();
  ASSERT_NE(listener, nullptr);
  const uint16_t port = listener->port();
  std::thread rank1([port] {
    // Stray peers first: an HTTP request and a truncated message are dropped, not fatal.
    send_raw(port, "GET / HTTP/1.1\r\n\r\n");
    send_raw(port, std::string("NVSP\x05\0\0\0", 8));
    auto link = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(10000));
    ASSERT_TRUE(link.ok()) << link.error().message;
    auto m = link->receive();
    ASSERT_TRUE(m.ok()) << m.error().message;
    EXPECT_EQ(header_string(m->header, "op"), "ping");
    ASSERT_EQ(m->payload.size(), 3u);
    std::vector<uint8_t> back(m->payload.rbegin(), m->payload.rend());
    EXPECT_TRUE(link->send({{"op", "pong"}, {"n", 3}}, back).ok());
  });
  auto ranks = listener->accept_ranks(2, milliseconds(10000), kNoCheck);
  ASSERT_TRUE(ranks.ok()) << ranks.error().message;
  ASSERT_EQ(ranks->size(), 1u);
  RankLink& link = (*ranks)[0].link;
  EXPECT_EQ(link.peer_rank(), 1);
  const std::vector<uint8_t> payload = {1, 2, 3};
  ASSERT_TRUE(link.send({{"op", "ping"}}, payload).ok());
  auto answer = link.receive();
  rank1.join();
  ASSERT_TRUE(answer.ok()) << answer.error().message;
  EXPECT_EQ(header_int(answer->header, "n"), 3);
  EXPECT_EQ(answer->payload, (std::vector<uint8_t>{3, 2, 1}));
  // The rank has gone: the next receive says so instead of blocking.
  auto gone = link.receive();
  ASSERT_FALSE(gone.ok());
  EXPECT_EQ(gone.error().code, ErrorCode::kIo);
  EXPECT_NE(gone.error().message.find("rank 1"), std::string::npos) << gone.error().message;
}

TEST(RankLink, RefusesAWrongWorldARankOutsideItAndTheCheck) {
  struct Case {
    nlohmann::json hello;
    const char* reason;
  };
  const Case cases[] = {
      {hello(1, 3), "--world-size 3"},
      {hello(2, 2), "outside 1..1"},
      {{{"op", "hello"}, {"rank", 1}, {"world_size", 2}, {"model", "other"}}, "another model"},
  };
  for (const Case& c : cases) {
    auto listener = listen_local();
    ASSERT_NE(listener, nullptr);
    const uint16_t port = listener->port();
    std::string rank_error;
    std::thread rank([&] {
      auto link = connect_to_rank0({"127.0.0.1", port}, c.hello, milliseconds(10000));
      rank_error = link.ok() ? "" : link.error().message;
    });
    auto ranks = listener->accept_ranks(2, milliseconds(10000), [](const nlohmann::json& h) {
      return h.contains("model") ? std::string("rank 1 loaded another model") : std::string();
    });
    rank.join();
    ASSERT_FALSE(ranks.ok()) << c.reason;
    EXPECT_NE(ranks.error().message.find(c.reason), std::string::npos) << ranks.error().message;
    // The rank is told why.
    EXPECT_NE(rank_error.find("refused"), std::string::npos) << rank_error;
    EXPECT_NE(rank_error.find(c.reason), std::string::npos) << rank_error;
  }
}

TEST(RankLink, ClosedPortTimesOutWithAClearError) {
  uint16_t port = 0;
  {
    auto listener = listen_local();
    ASSERT_NE(listener, nullptr);
    port = listener->port();
  }  // closed: nobody listens there now
  const auto start = std::chrono::steady_clock::now();
  auto link = connect_to_rank0({"127.0.0.1", port}, hello(1, 2), milliseconds(700));
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(link.ok());
  EXPECT_EQ(link.error().code, ErrorCode::kIo);
  EXPECT_NE(link.error().message.find("nobody answered within 0.7 s"), std::string::npos)
      << link.error().message;
  EXPECT_GE(took, milliseconds(650));  // it retried until the timeout, not once

  // Rank 0 whose ranks never come: names the missing ones.
  auto listener = listen_local();
  ASSERT_NE(listener, nullptr);
  auto ranks = listener->accept_ranks(3, milliseconds(300), kNoCheck);
  ASSERT_FALSE(ranks.ok());
  EXPECT_EQ(ranks.error().code, ErrorCode::kIo);
  EXPECT_NE(ranks.error().message.find("only 0 of the 2 other ranks joined within 0.3 s "
                                       "(missing: rank 1, 2)"),
            std::string::npos)
      << ranks.error().message;
}

// A valid one-sequence plan of 2 rows and 1 block, n_embd 4: a "forward" with its hidden
// state, or a "step" (the NCCL transport's) without.
RankMessage valid_plan(const char* op = kForwardOp) {
  const std::vector<int32_t> tokens = {5, 6};
  const std::vector<int32_t> blocks = {0};
  ForwardSeq s;
  s.tokens = tokens;
  s.pos0 = 3;
  s.kv.block_table = blocks.data();
  s.kv.n_blocks = 1;
  s.kv.block_size = 16;
  s.kv.layer_stride = 1024;
  const std::vector<float> hidden(8, 0.5f);
  const std::vector<int32_t> pools = {0};
  const ForwardSeq seqs[] = {s};
  if (std::string_view(op) == kStepOp) return encode_step(seqs, pools, ActQuant::kQ8, {}, kStepOp);
  return encode_step(seqs, pools, ActQuant::kQ8, hidden);
}

TEST(StageProtocol, StepPlanRoundTrips) {
  auto plan = decode_step(valid_plan(), 4);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->mode, ActQuant::kQ8);
  ASSERT_EQ(plan->seqs.size(), 1u);
  EXPECT_EQ(plan->seqs[0].pos0, 3);
  EXPECT_EQ(plan->seqs[0].block_size, 16);
  EXPECT_EQ(plan->tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(plan->blocks, (std::vector<int32_t>{0}));
  EXPECT_EQ(plan->hidden, std::vector<float>(8, 0.5f));
}

TEST(StageProtocol, AStepPlanHasNoHiddenState) {
  const RankMessage m = valid_plan(kStepOp);
  EXPECT_EQ(header_string(m.header, "op"), "step");
  auto plan = decode_step(m, 4);
  ASSERT_TRUE(plan.ok()) << plan.error().message;
  EXPECT_EQ(plan->tokens, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(plan->blocks, (std::vector<int32_t>{0}));
  EXPECT_TRUE(plan->hidden.empty());
  // A "forward" payload (with its hidden state) under the "step" op is the wrong size.
  RankMessage forward = valid_plan();
  forward.header["op"] = kStepOp;
  EXPECT_FALSE(decode_step(forward, 4).ok());
}

TEST(StageProtocol, MalformedPlansAreRefused) {
  std::vector<RankMessage> bad;
  for (int i = 0; i < 9; ++i) bad.push_back(valid_plan());
  bad[0].payload.pop_back();                       // short payload
  bad[1].payload.push_back(0);                     // long payload
  bad[2].header["seqs"][0][0] = 0;                 // a sequence without tokens
  bad[3].header["seqs"][0][1] = -1;                // negative position
  bad[4].header["seqs"][0][3] = "1";               // not an integer
  bad[5].header["seqs"][0].erase(8);               // a field missing
  bad[6].header["rows"] = 3;                       // rows that do not add up
  bad[7].header["mode"] = 7;                       // no such mode
  bad[8].header["seqs"][0][0] = int64_t{1} << 40;  // out of range
  for (size_t i = 0; i < bad.size(); ++i) {
    auto plan = decode_step(bad[i], 4);
    ASSERT_FALSE(plan.ok()) << "case " << i;
    EXPECT_EQ(plan.error().code, ErrorCode::kInvalidInput) << "case " << i;
  }
  EXPECT_FALSE(decode_step(valid_plan(), 5).ok());  // another n_embd than the payload's
}

TEST(StageProtocol, AnswersBecomeStatuses) {
  RankMessage ok{{{"op", "ok"}}, {}};
  EXPECT_TRUE(answer_status(ok, "rank 1").ok());
  RankMessage err{error_answer(Err(ErrorCode::kInvalidInput, "token 99 outside the vocabulary")),
                  {}};
  const Status st = answer_status(err, "rank 1");
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, ErrorCode::kInvalidInput);
  EXPECT_EQ(st.error().message, "rank 1: token 99 outside the vocabulary");
  RankMessage odd{{{"op", "error"}, {"code", 99}, {"error", "x"}}, {}};
  EXPECT_EQ(answer_status(odd, "rank 2").error().code, ErrorCode::kInternal);
  RankMessage other{{{"op", "what"}}, {}};
  EXPECT_EQ(answer_status(other, "rank 2").error().code, ErrorCode::kIo);
}

}  // namespace
}  // namespace novaserve
