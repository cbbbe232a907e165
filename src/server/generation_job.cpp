#include "server/generation_job.h"

#include <boost/asio/post.hpp>

#include "server/handler_common.h"
#include "server/sse.h"

namespace novaserve {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<uint64_t> g_next_request_id{1};

// StepOutput::error_code of a request the engine expired in its queue.
constexpr const char* kQueueTimeout = "queue_timeout";

double seconds(Clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

ApiError server_error(int status, std::string message, const char* code) {
  ApiError e;
  e.status = status;
  e.type = "server_error";
  e.message = std::move(message);
  e.code = code;
  return e;
}

}  // namespace

GenerationJob::GenerationJob(ServerContext& ctx, const ModelServices& model,
                             std::shared_ptr<ResponseChannel> channel,
                             std::unique_ptr<ResponseFormat> format, JobPlan plan)
    : ctx_(ctx),
      model_(model),
      channel_(std::move(channel)),
      format_(std::move(format)),
      plan_(std::move(plan)),
      stop_(plan_.stop),
      timing_(plan_.choices.size()) {
  choices_.reserve(plan_.choices.size());
  for (size_t i = 0; i < plan_.choices.size(); ++i) {
    choices_.emplace_back(*model_.tokenizer, stop_, plan_.top_logprobs >= 0, plan_.shown_controls);
    cancelled_.push_back(std::make_shared<std::atomic<bool>>(false));
  }
}

void GenerationJob::start(ServerContext& ctx, const ModelServices& model,
                          std::shared_ptr<ResponseChannel> channel,
                          std::unique_ptr<ResponseFormat> format, JobPlan plan) {
  int64_t prompt_tokens = 0;
  for (const ChoicePlan& c : plan.choices) prompt_tokens += static_cast<int64_t>(c.prompt.size());
  if (auto refusal = ctx.admission.try_admit(
          model.engine->stats(), static_cast<int32_t>(plan.choices.size()), prompt_tokens)) {
    ctx.metrics.count_rejected(refusal->reason);
    channel->send(std::move(refusal->response));
    return;
  }
  const auto n = static_cast<int32_t>(plan.choices.size());
  std::shared_ptr<GenerationJob> job;
  try {
    job = std::make_shared<GenerationJob>(ctx, model, channel, std::move(format), std::move(plan));
  } catch (...) {
    ctx.admission.release(n);  // from here on the job owns the reservation (~GenerationJob)
    throw;
  }
  job->reserved_ = n;
  const std::weak_ptr<GenerationJob> weak = job;
  // Registered before submission: a cancel from a drain or a gone client then reaches the
  // engine through the flags the requests carry.
  job->lifecycle_id_ = ctx.lifecycle.add([weak] {
    if (auto j = weak.lock()) j->cancel();
  });
  channel->on_abort([weak] {
    if (auto j = weak.lock()) j->cancel();
  });
  if (!job->submit_all()) return;
  if (job->plan_.stream) {
    channel->start_stream(200, "text/event-stream",
                          {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}});
    for (size_t i = 0; i < job->choices_.size(); ++i) {
      if (auto first = job->format_->stream_start(i)) channel->write(sse_data(*first));
    }
  }
}

bool GenerationJob::submit_all() {
  const boost::asio::any_io_executor exec = channel_->executor();
  for (size_t i = 0; i < plan_.choices.size(); ++i) {
    const ChoicePlan& c = plan_.choices[i];
    EngineRequest r;
    r.id = g_next_request_id.fetch_add(1);
    r.prompt = c.prompt;
    r.sampling = plan_.sampling;
    r.sampling.seed = c.seed;
    r.max_tokens = c.max_tokens;
    r.min_tokens = std::min(plan_.min_tokens, c.max_tokens);
    r.ignore_eos = plan_.ignore_eos;
    r.stop_token_ids = plan_.stop_token_ids;
    r.top_logprobs = plan_.top_logprobs;
    r.grammar = plan_.grammar;
    r.trigger_grammar = plan_.trigger_grammar;
    r.trigger_tokens = plan_.trigger_tokens;
    r.priority = plan_.priority;
    r.cancelled = cancelled_[i];
    r.arrival = plan_.arrival;
    r.on_output = [self = shared_from_this(), exec, i](StepOutput&& out) {
      boost::asio::post(
          exec, [self, i, out = std::move(out)]() mutable { self->on_output(i, std::move(out)); });
    };
    const Status st = model_.engine->submit(std::move(r));
    if (!st.ok()) {
      // Choices before i were submitted and release their slots with their (abort) outputs.
      release_slots(static_cast<int32_t>(plan_.choices.size() - i));
      cancel();
      completed_ = true;
      const bool client_fault =
          st.error().code == ErrorCode::kInvalidInput || st.error().code == ErrorCode::kUnsupported;
      channel_->send(HttpResponse::error(
          client_fault ? invalid_request(st.error().message)
                       : server_error(500, "engine: " + st.error().message, "engine_error")));
      ctx_.lifecycle.remove(lifecycle_id_);
      return false;
    }
  }
  return true;
}

GenerationJob::~GenerationJob() {
  // Choices that never delivered a final output (the engine was destroyed, or something threw
  // between admission and submission) give their slots back here.
  release_slots(reserved_);
  if (lifecycle_id_ != 0 && !completed_) ctx_.lifecycle.remove(lifecycle_id_);
}

void GenerationJob::release_slots(int32_t n) {
  n = std::min(n, reserved_);
  if (n <= 0) return;
  reserved_ -= n;
  ctx_.admission.release(n);
}

void GenerationJob::cancel() {
  for (const auto& flag : cancelled_) flag->store(true, std::memory_order_relaxed);
  model_.engine->notify();
}

void GenerationJob::record_token(size_t i, const StepOutput& out) {
  const Clock::time_point now = Clock::now();
  ChoiceTiming& t = timing_[i];
  if (t.first) {
    t.first = false;
    ctx_.metrics.observe_time_to_first_token(seconds(now - plan_.arrival));
    if (out.first_scheduled != Clock::time_point{}) {
      ctx_.metrics.observe_queue_time(std::max(0.0, seconds(out.first_scheduled - plan_.arrival)));
    }
  } else {
    ctx_.metrics.observe_inter_token_latency(seconds(now - t.last));
  }
  t.last = now;
}

void GenerationJob::on_output(size_t i, StepOutput&& out) {
  ChoiceStream& choice = choices_[i];
  if (choice.finished()) return;  // outputs the engine made before it saw our cancel flag
  if (out.token >= 0) record_token(i, out);
  const ChoiceDelta d = choice.push(out);
  if (choice.stop_string_matched()) {
    cancelled_[i]->store(true, std::memory_order_relaxed);  // the engine frees it next step
    model_.engine->notify();
  }
  const bool queue_timeout = d.finish == FinishReason::kError && d.error_code == kQueueTimeout;
  if (d.finish) {
    ++finished_;
    release_slots(1);
    if (queue_timeout && !timed_out_) {
      timed_out_ = true;  // counted once per request, however many choices expired
      ctx_.metrics.count_rejected(RejectReason::kQueueTimeout);
      cancel();  // the request fails as a whole: its other choices stop too
    } else if (!timed_out_) {
      ctx_.metrics.observe_e2e_latency(seconds(Clock::now() - plan_.arrival));
      ctx_.metrics.count_finished(*d.finish);
      ctx_.metrics.add_generation_tokens(choice.completion_tokens());
    }
  }
  if (completed_) return;
  if (plan_.stream && queue_timeout) {
    channel_->write(sse_data(server_error(503, d.error, kQueueTimeout).to_json()));
  } else if (plan_.stream && !d.empty()) {
    for (const Json& chunk : format_->stream_chunks(i, d)) channel_->write(sse_data(chunk));
    if (d.finish == FinishReason::kError) {
      channel_->write(sse_data(server_error(500, "engine: " + d.error, "engine_error").to_json()));
    }
  }
  if (finished_ == choices_.size()) complete();
}

void GenerationJob::complete() {
  completed_ = true;
  ctx_.metrics.add_prompt_tokens(plan_.prompt_tokens);
  Usage usage;
  usage.prompt_tokens = plan_.prompt_tokens;
  for (const ChoiceStream& c : choices_) usage.completion_tokens += c.completion_tokens();
  if (plan_.stream) {
    if (plan_.include_usage) channel_->write(sse_data(format_->usage_chunk(usage)));
    channel_->write(std::string(kSseDone));
    channel_->end_stream();
  } else {
    const ChoiceStream* failed = nullptr;
    const ChoiceStream* timed_out = nullptr;
    for (const ChoiceStream& c : choices_) {
      if (c.finish_reason() != FinishReason::kError) continue;
      (c.error_code() == kQueueTimeout ? timed_out : failed) = &c;
    }
    if (timed_out != nullptr) {
      channel_->send(unavailable(timed_out->error(), kQueueTimeout));
    } else if (failed != nullptr) {
      channel_->send(
          HttpResponse::error(server_error(500, "engine: " + failed->error(), "engine_error")));
    } else {
      channel_->send(HttpResponse::json(200, format_->response(choices_, usage)));
    }
  }
  ctx_.lifecycle.remove(lifecycle_id_);
}

}  // namespace novaserve
