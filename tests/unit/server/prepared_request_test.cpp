// run_prepared and the tokenize pool: the prepare phase runs on an "ns-tokenize" thread and the
// answer on the channel's strand; a busy pool leaves the strand free; a preparation counts as
// in flight for a drain, and one aborted by the drain's timeout is answered 503, not started;
// an exception in the prepare phase is a 500.
#include "server/prepared_request.h"

#include <gtest/gtest.h>
#include <pthread.h>

#include <boost/asio/post.hpp>
#include <future>
#include <stdexcept>

#include "server/text_handlers.h"
#include "server/tokenize_pool.h"
#include "server_test_util.h"

namespace novaserve {
namespace {

using Json = nlohmann::ordered_json;
using testing::RecordingChannel;

std::string current_thread_name() {
  char name[32] = {};
  pthread_getname_np(pthread_self(), name, sizeof name);
  return name;
}

class PreparedRequestTest : public ::testing::Test {
 protected:
  PreparedRequestTest() : model_(testing::script_options("Hello")) {
    ctx_.config.model_name = "test-model";
    ctx_.tokenize_executor = pool_.executor();
    ctx_.publish(&model_.services);
  }

  // Occupies the pool's only thread until the returned promise is set.
  std::promise<void> block_pool() {
    std::promise<void> release;
    auto started = std::make_shared<std::promise<void>>();
    auto running = started->get_future();
    boost::asio::post(pool_.executor(), [started, gate = release.get_future().share()] {
      started->set_value();
      gate.wait();
    });
    running.wait();
    return release;
  }

  // Runs run_prepared on the channel's strand, as a route handler would.
  std::shared_ptr<RecordingChannel> start(PrepareFn prepare, std::string body) {
    auto ch = std::make_shared<RecordingChannel>(ioc_);
    auto req = std::make_shared<HttpRequest>();
    req->method = "POST";
    req->path = "/test";
    req->body = std::move(body);
    boost::asio::post(ch->executor(), [this, ch, req, prepare] {
      run_prepared(ctx_, model_.services, *req, ch, prepare);
    });
    return ch;
  }

  ServerContext ctx_;  // first: outlives the jobs that ioc_'s handlers and the engine hold
  boost::asio::io_context ioc_;
  testing::TestModel model_;
  TokenizePool pool_{1};  // last: joined before the context and model go
};

std::string g_prepared_on;  // written by the pool thread, read after its answer arrived

TEST_F(PreparedRequestTest, PrepareRunsOnThePoolAndTheAnswerOnTheStrand) {
  auto ch = start(
      [](const ServerContext&, const ModelServices&, const std::string& body) -> Prepared {
        g_prepared_on = current_thread_name();
        return HttpResponse::json(200, Json{{"echo", body}});
      },
      "abc");
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ch->done; }));
  EXPECT_EQ(g_prepared_on, "ns-tokenize");
  EXPECT_EQ(ch->status, 200);
  EXPECT_EQ(Json::parse(ch->body)["echo"], "abc");
  EXPECT_EQ(ch->off_strand_calls, 0);
  EXPECT_EQ(ctx_.lifecycle.in_flight(), 0u);
}

TEST_F(PreparedRequestTest, ABusyPoolLeavesTheStrandFree) {
  std::promise<void> release = block_pool();
  auto ch = std::make_shared<RecordingChannel>(ioc_);
  HttpRequest req;
  req.method = "POST";
  req.body = R"({"prompt": "hi"})";
  bool handler_returned = false;
  bool later_work_ran = false;
  boost::asio::post(ch->executor(), [&] {
    handle_tokenize(ctx_, req, ch);
    handler_returned = true;
  });
  // What the strand runs next (another request's work) is not held up by the tokenization.
  boost::asio::post(ch->executor(), [&] { later_work_ran = true; });
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return later_work_ran; }));
  EXPECT_TRUE(handler_returned);
  EXPECT_FALSE(ch->done);
  release.set_value();
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ch->done; }));
  EXPECT_EQ(Json::parse(ch->body)["tokens"], Json::array({'h', 'i'}));
  EXPECT_EQ(ch->off_strand_calls, 0);
}

TEST_F(PreparedRequestTest, APreparationCountsAsInFlightAndADrainTimeoutRefusesItsGeneration) {
  std::promise<void> release = block_pool();
  auto ch = start(
      [](const ServerContext&, const ModelServices&, const std::string&) -> Prepared {
        JobPlan plan;
        plan.choices.push_back({{'x'}, 2, std::nullopt});
        plan.prompt_tokens = 1;
        return PreparedJob{nullptr, std::move(plan)};  // never started: no format needed
      },
      "");
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ctx_.lifecycle.in_flight() == 1; }));
  ctx_.lifecycle.begin_drain();
  ctx_.lifecycle.cancel_all();  // what --shutdown-timeout does
  release.set_value();
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ch->done; }));
  EXPECT_EQ(ch->status, 503);
  EXPECT_EQ(Json::parse(ch->body)["error"]["code"], "shutting_down");
  EXPECT_TRUE(model_.engine->submitted().empty());
  EXPECT_EQ(ctx_.lifecycle.in_flight(), 0u);
}

TEST_F(PreparedRequestTest, AnExceptionWhilePreparingIs500) {
  auto ch = start([](const ServerContext&, const ModelServices&,
                     const std::string&) -> Prepared { throw std::runtime_error("boom"); },
                  "");
  ASSERT_TRUE(testing::run_until(ioc_, [&] { return ch->done; }));
  EXPECT_EQ(ch->status, 500);
  const Json e = Json::parse(ch->body)["error"];
  EXPECT_EQ(e["type"], "server_error");
  EXPECT_EQ(e["message"], "internal error: boom");
  EXPECT_EQ(ctx_.lifecycle.in_flight(), 0u);
}

}  // namespace
}  // namespace novaserve
