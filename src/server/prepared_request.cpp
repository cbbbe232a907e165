#include "server/prepared_request.h"

#include <atomic>
#include <boost/asio/post.hpp>
#include <chrono>
#include <exception>
#include <utility>

#include "server/handler_common.h"

namespace novaserve {
namespace {

// One request between the handler and its continuation. Shared by the pool task, the strand
// continuation and the lifecycle's cancel function, which may outlive both.
struct Preparation {
  // Spelled out: make_shared of an aggregate needs C++20's parenthesized aggregate
  // initialization, which clang 14 (the fuzz build) lacks.
  Preparation(ServerContext& c, const ModelServices& m, std::shared_ptr<ResponseChannel> ch,
              PrepareFn fn, std::string meth, std::string p, std::string b,
              std::chrono::steady_clock::time_point t)
      : ctx(c),
        model(m),
        channel(std::move(ch)),
        prepare(fn),
        method(std::move(meth)),
        path(std::move(p)),
        body(std::move(b)),
        arrival(t) {}

  ServerContext& ctx;
  const ModelServices& model;
  std::shared_ptr<ResponseChannel> channel;
  PrepareFn prepare;
  std::string method;
  std::string path;
  std::string body;
  std::chrono::steady_clock::time_point arrival;
  uint64_t lifecycle_id = 0;
  std::atomic<bool> drain_aborted{false};
  Prepared result;
};

// On the channel's strand.
void finish(Preparation& p) {
  try {
    if (auto* job = std::get_if<PreparedJob>(&p.result)) {
      if (p.drain_aborted.load(std::memory_order_relaxed)) {
        p.ctx.metrics.count_rejected(RejectReason::kShuttingDown);
        p.channel->send(unavailable("the server is shutting down", "shutting_down"));
      } else {
        job->plan.arrival = p.arrival;
        GenerationJob::start(p.ctx, p.model, p.channel, std::move(job->format),
                             std::move(job->plan));
      }
    } else {
      p.channel->send(std::move(std::get<HttpResponse>(p.result)));
    }
  } catch (const std::exception& ex) {
    p.channel->send(internal_error(p.method, p.path, ex));
  }
  // After GenerationJob::start registered the job, so a drain never sees zero in between.
  p.ctx.lifecycle.remove(p.lifecycle_id);
}

}  // namespace

void run_prepared(ServerContext& ctx, const ModelServices& model, HttpRequest& request,
                  const std::shared_ptr<ResponseChannel>& channel, PrepareFn prepare) {
  if (auto refusal = ctx.admission.try_enter_pool(model.engine->stats().max_num_seqs)) {
    ctx.metrics.count_rejected(refusal->reason);
    return channel->send(std::move(refusal->response));
  }
  std::shared_ptr<Preparation> p;
  try {
    p = std::make_shared<Preparation>(ctx, model, channel, prepare, request.method, request.path,
                                      std::move(request.body), std::chrono::steady_clock::now());
  } catch (...) {
    ctx.admission.left_pool();
    throw;
  }
  const std::weak_ptr<Preparation> weak = p;
  p->lifecycle_id = ctx.lifecycle.add([weak] {
    if (auto q = weak.lock()) q->drain_aborted.store(true, std::memory_order_relaxed);
  });
  // Read here, on the strand: channel methods are not to be called from the pool.
  boost::asio::any_io_executor strand = channel->executor();
  boost::asio::post(ctx.tokenize_executor, [p = std::move(p), strand = std::move(strand)] {
    const auto max_wait = p->ctx.admission.config().max_queue_time;
    if (max_wait.count() > 0 && std::chrono::steady_clock::now() - p->arrival > max_wait) {
      // It waited out --max-queue-time for the pool: tokenizing it now would only waste CPU.
      p->ctx.metrics.count_rejected(RejectReason::kQueueTimeout);
      p->result = unavailable("the request waited longer than --max-queue-time for tokenization",
                              "queue_timeout");
    } else {
      try {
        p->result = p->prepare(p->ctx, p->model, p->body);
      } catch (const std::exception& ex) {
        p->result = internal_error(p->method, p->path, ex);
      }
    }
    p->body = std::string();  // a big prompt's bytes need not wait for the strand
    p->ctx.admission.left_pool();
    boost::asio::post(strand, [p] { finish(*p); });
  });
}

}  // namespace novaserve
