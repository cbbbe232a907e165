// One engine step (docs/engine.md, "One step"): plan, emit aborts, forward, commit, sample, emit.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <stdexcept>

#include "common/check.h"
#include "engine/engine_impl.h"
#include "engine/logprobs.h"

namespace novaserve {

StepOutput Engine::output_for(const Sequence& seq) const {
  StepOutput out;
  out.prompt_tokens = seq.num_prompt_tokens();
  out.cached_prompt_tokens = seq.num_cached_prompt_tokens();
  out.generated_tokens = seq.num_generated_tokens();
  if (seq.first_scheduled()) out.first_scheduled = *seq.first_scheduled();
  return out;
}

bool Engine::greedy_on_runner(const Sequence& seq) const {
  const EngineRequest& r = seq.request();
  // Logprobs need the logits; min_tokens and grammars mask some of them before the argmax.
  return seq.sampler().plain_greedy() && r.top_logprobs < 0 &&
         seq.num_generated_tokens() >= r.min_tokens && seq.matcher() == nullptr;
}

int32_t Engine::sample(Sequence& seq, const float* logits, std::span<const uint32_t> mask) {
  const EngineRequest& r = seq.request();
  bool hold_stop = seq.num_generated_tokens() < r.min_tokens;
  if (mask.empty() && !hold_stop) return seq.sampler().sample(logits);
  // The masks go on a copy: the raw logits still feed logprobs.
  std::copy(logits, logits + n_vocab_, masked_logits_.begin());
  if (!mask.empty()) {
    bool any = false;       // some token allowed
    bool any_text = false;  // some token other than an end-of-generation one allowed
    for (int32_t id = 0; id < n_vocab_; ++id) {
      if (!mask_allows(mask, id)) {
        masked_logits_[id] = -INFINITY;
      } else {
        any = true;
        any_text = any_text || !is_eog_[id];
      }
    }
    if (!any) return -1;
    // A complete grammar output outranks min_tokens: there is nothing left to generate.
    hold_stop = hold_stop && any_text;
  }
  // min_tokens (vLLM semantics): until that many tokens exist, end-of-generation and stop ids
  // cannot be drawn.
  if (hold_stop) {
    for (int32_t id = 0; id < n_vocab_; ++id) {
      if (is_eog_[id]) masked_logits_[id] = -INFINITY;
    }
    for (int32_t id : r.stop_token_ids) {
      if (id >= 0 && id < n_vocab_) masked_logits_[id] = -INFINITY;
    }
  }
  return seq.sampler().sample(masked_logits_.data());
}

std::optional<FinishReason> Engine::finish_after(const Sequence& seq, int32_t token) const {
  const EngineRequest& r = seq.request();
  if (is_eog_[token] && !r.ignore_eos) return FinishReason::kStop;
  if (std::find(r.stop_token_ids.begin(), r.stop_token_ids.end(), token) !=
      r.stop_token_ids.end()) {
    return FinishReason::kStop;
  }
  if (seq.num_generated_tokens() >= r.max_tokens ||
      seq.num_tokens() >= scheduler_->config().max_model_len) {
    return FinishReason::kLength;
  }
  return std::nullopt;
}

void Engine::fail_plan(const SchedulerPlan& plan, const std::string& message) {
  for (const ScheduledSeq& s : plan.seqs) {
    auto seq = scheduler_->finish(*s.seq, FinishReason::kError);
    StepOutput out = output_for(*seq);
    out.finish = FinishReason::kError;
    out.error = message;
    seq->request().on_output(std::move(out));
  }
}

void Engine::emit_dropped(const SchedulerPlan& plan) {
  for (const auto& seq : plan.aborted) {
    StepOutput out = output_for(*seq);
    out.finish = FinishReason::kAbort;
    seq->request().on_output(std::move(out));
  }
  for (const auto& seq : plan.expired) {
    StepOutput out = output_for(*seq);
    out.finish = FinishReason::kError;
    out.error_code = "queue_timeout";
    char msg[160];
    std::snprintf(msg, sizeof msg,
                  "the request waited longer than --max-queue-time (%.3g s) to be scheduled (for "
                  "a free sequence slot or KV blocks); nothing of it was computed",
                  static_cast<double>(scheduler_->config().max_queue_time.count()) / 1000.0);
    out.error = msg;
    seq->request().on_output(std::move(out));
  }
}

void Engine::observe_prefill(int64_t prefill_tokens, double seconds) {
  // Only steps after which prompt work is still queued measure the rate at which that queue
  // drains; a step that emptied it was limited by the work, not by the machine.
  if (prefill_tokens <= 0 || scheduler_->pending_prefill_tokens() == 0) return;
  constexpr double kDecay = 0.95;  // per step: the rate follows the last few dozen steps
  prefill_tokens_sum_ = prefill_tokens_sum_ * kDecay + static_cast<double>(prefill_tokens);
  prefill_seconds_sum_ = prefill_seconds_sum_ * kDecay + seconds;
}

void Engine::observe_departures(int64_t departures, double seconds, bool queued) {
  // Only while sequences wait does the rate at which others leave decide their wait.
  if (!queued) return;
  constexpr double kDecay = 0.99;  // per step: departures are sparse, so a longer memory
  departures_sum_ = departures_sum_ * kDecay + static_cast<double>(departures);
  departure_seconds_sum_ = departure_seconds_sum_ * kDecay + seconds;
}

void Engine::step() {
  launch(0);
  if (groups_[0].plan != nullptr) complete(0);
}

void Engine::launch(int32_t group) {
  NOVASERVE_CHECK(options_.fail_after_steps == 0 || num_steps_ < options_.fail_after_steps)
      << "the test hook --test-fail-replica fails this engine after " << num_steps_ << " steps";
  GroupStep& g = groups_[group];
  g.scheduled = Clock::now();
  g.queued = scheduler_->num_waiting() > 0;
  const SchedulerPlan& plan = scheduler_->schedule(g.scheduled, group);
  emit_dropped(plan);
  g.departures = static_cast<int64_t>(plan.aborted.size() + plan.expired.size());
  if (plan.seqs.empty()) {
    observe_departures(g.departures,
                       std::chrono::duration<double>(Clock::now() - g.scheduled).count(), g.queued);
    return;
  }
  // Prompt tokens this step takes care of: those it computes, and those admissions found in the
  // prefix cache (the backlog the SLO rule divides by this rate counts both).
  g.prefill_tokens = scheduler_->stats().prefix_cache_hits - prefix_hits_seen_;
  prefix_hits_seen_ = scheduler_->stats().prefix_cache_hits;
  for (const ScheduledSeq& s : plan.seqs) {
    // A decode computes the last generated token; everything else is prompt (or recompute).
    const bool decode = s.num_tokens == 1 && s.pos0 >= s.seq->num_prompt_tokens();
    if (!decode) g.prefill_tokens += s.num_tokens;
  }
  g.shape = plan.shape;

  g.seqs.clear();
  for (const ScheduledSeq& s : plan.seqs) {
    ForwardSeq f;
    f.tokens = s.seq->tokens().subspan(s.pos0, s.num_tokens);
    f.pos0 = s.pos0;
    f.kv = kv_.view(s.seq->block_table());
    f.greedy = s.sample && greedy_on_runner(*s.seq);
    g.seqs.push_back(f);
  }
  // Grammar masks of the rows that sample this step: their matchers have accepted every token
  // so far, so the masks are filled while the forward runs.
  g.mask_jobs.clear();
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    grammar::GrammarMatcher* m = plan.seqs[i].sample ? plan.seqs[i].seq->matcher() : nullptr;
    if (m != nullptr) g.mask_jobs.push_back({static_cast<int32_t>(i), m});
  }
  g.masks->start(g.mask_jobs);
  const auto t_forward = Clock::now();
  const Status submitted = model_->submit(group, g.seqs, options_.act_quant);
  forward_seconds_ += std::chrono::duration<double>(Clock::now() - t_forward).count();
  if (!submitted.ok()) {
    mask_wait_seconds_ += g.masks->wait();
    // A device error leaves the device unusable for what follows: the planned requests fail
    // with it, and so does the engine (its replica; the others keep serving).
    fail_plan(plan, "forward pass failed: " + submitted.error().message);
    throw std::runtime_error("forward pass failed: " + submitted.error().message);
  }
  g.plan = &plan;
}

void Engine::complete(int32_t group) {
  GroupStep& g = groups_[group];
  const SchedulerPlan& plan = *g.plan;
  const auto t_wait = Clock::now();
  const Status forward = model_->wait(group);
  forward_seconds_ += std::chrono::duration<double>(Clock::now() - t_wait).count();
  g.plan = nullptr;  // no longer in flight, whatever follows
  mask_wait_seconds_ += g.masks->wait();
  if (!forward.ok()) {
    fail_plan(plan, "forward pass failed: " + forward.error().message);
    throw std::runtime_error("forward pass failed: " + forward.error().message);
  }
  scheduler_->commit(group);

  int64_t departures = g.departures;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    if (!plan.seqs[i].sample) continue;
    Sequence& seq = *plan.seqs[i].seq;
    const std::optional<int32_t> greedy = g.seqs[i].greedy ? model_->greedy_token(i) : std::nullopt;
    const float* logits = greedy ? nullptr : model_->logits(i);
    grammar::GrammarMatcher* matcher = seq.matcher();
    int32_t token;
    if (greedy) {
      token = *greedy;
      seq.sampler().accept(token);
    } else {
      token =
          sample(seq, logits,
                 matcher ? g.masks->mask(static_cast<int32_t>(i)) : std::span<const uint32_t>());
    }
    // The matcher follows the token it allowed; a refusal here would be a grammar-engine bug,
    // and failing the request beats emitting output that breaks its schema.
    if (token < 0 || (matcher != nullptr && !matcher->accept_token(token))) {
      ++departures;
      const auto done = scheduler_->finish(seq, FinishReason::kError);
      StepOutput out = output_for(*done);
      out.finish = FinishReason::kError;
      out.error = token < 0 ? "the grammar allows no token at this point"
                            : "the grammar refused the token its own mask allowed";
      done->request().on_output(std::move(out));
      continue;
    }
    seq.append_token(token);
    seq.update_trigger_grammar(token);
    StepOutput out = output_for(seq);
    out.token = token;
    if (seq.request().top_logprobs >= 0) {  // never greedy_on_runner: logits is set
      fill_logprobs(logits, n_vocab_, token, seq.request().top_logprobs, out);
    }
    out.finish = finish_after(seq, token);
    if (!out.finish && matcher != nullptr && !seq.trigger_grammar() && matcher->is_terminated()) {
      // The grammar is complete and allows only a stop token: end now instead of spending a
      // step on it. The token carries text, so it goes out first and a token-less final output
      // ends the request (request.h: a kStop output with a token is read as the terminator).
      seq.request().on_output(std::move(out));
      out = output_for(seq);
      out.finish = FinishReason::kStop;
    }
    if (out.finish) {
      ++departures;
      // finish() frees the blocks now; the Sequence lives until the output is handed over.
      const auto done = scheduler_->finish(seq, *out.finish);
      done->request().on_output(std::move(out));
    } else {
      seq.request().on_output(std::move(out));
    }
  }
  ++num_steps_;
  // With several groups in flight a step's latency (planned to emitted) overlaps the other
  // groups' steps: the cost model learns that latency, while the rates and the step-time total
  // count only the wall time since the previous completion, so that they add up to the
  // engine's time (docs/engine.md). With one group both are the step's time.
  const auto now = Clock::now();
  const double latency = std::chrono::duration<double>(now - g.scheduled).count();
  const double interval =
      std::chrono::duration<double>(now - std::max(g.scheduled, last_completion_)).count();
  last_completion_ = now;
  step_seconds_ += interval;
  cost_model_.observe(g.shape, latency * 1000.0);
  observe_prefill(g.prefill_tokens, interval);
  observe_departures(departures, interval, g.queued);
}

void Engine::drain() {
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i].plan == nullptr) continue;
    (void)model_->wait(static_cast<int>(i));
    groups_[i].plan = nullptr;
    groups_[i].masks->wait();
  }
}

}  // namespace novaserve
