// Test helpers for the scheduler: request/sequence factories and a fake model that executes
// plans against a simulated paged KV store and verifies what attention would read.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <numeric>
#include <vector>

#include "engine/block_table.h"
#include "engine/scheduler.h"
#include "engine/sequence.h"

namespace novaserve::engine_test {

constexpr int32_t kVocab = 1000;

inline std::vector<int32_t> iota_tokens(int32_t n, int32_t start = 1) {
  std::vector<int32_t> v(n);
  std::iota(v.begin(), v.end(), start);
  for (auto& x : v) x %= kVocab;
  return v;
}

inline std::unique_ptr<Sequence> make_seq(uint64_t id, std::vector<int32_t> prompt,
                                          int32_t max_tokens, int32_t block_size,
                                          int32_t priority = 0) {
  EngineRequest r;
  r.id = id;
  r.prompt = std::move(prompt);
  r.max_tokens = max_tokens;
  r.priority = priority;
  r.sampling.temperature = 0.0f;
  return std::make_unique<Sequence>(std::move(r), kVocab, block_size);
}

/// The token the fake model "samples": a function of the request and its length only, so the
/// result must not depend on batching, chunking, prefix hits or preemption.
inline int32_t fake_token(uint64_t id, int32_t num_tokens) {
  return static_cast<int32_t>((id * 7919 + static_cast<uint64_t>(num_tokens) * 31) % kVocab);
}

/// Simulated KV storage: slot s of the paged cache holds a fingerprint of the prefix whose last
/// position wrote it (real K/V depend on every earlier token, so a block reused under a wrong
/// prefix would show up as a mismatch).
class FakeModel {
 public:
  FakeModel(int32_t num_blocks, int32_t block_size, int32_t max_seqs, int32_t max_indices)
      : bs_(block_size),
        store_(static_cast<size_t>(num_blocks) * block_size, 0),
        csr_(max_seqs, max_indices, block_size) {}

  /// Writes each planned sequence's new positions, then reads every position of every planned
  /// sequence through the CSR export, as a paged attention kernel would.
  void run(const SchedulerPlan& plan) {
    csr_.clear();
    for (const ScheduledSeq& e : plan.seqs) {
      const Sequence& s = *e.seq;
      ASSERT_EQ(e.pos0, s.num_computed_tokens());
      ASSERT_GE(e.num_tokens, 1);
      ASSERT_LE(e.pos0 + e.num_tokens, s.num_tokens());
      ASSERT_EQ(e.sample, e.pos0 + e.num_tokens == s.num_tokens());
      const auto fp = fingerprints(s);
      for (int32_t p = e.pos0; p < e.pos0 + e.num_tokens; ++p) {
        store_[s.block_table().slot(p, bs_)] = fp[p];
      }
      csr_.append(s.block_table(), e.pos0 + e.num_tokens);
      ++steps_with_work_;
    }
    for (size_t i = 0; i < plan.seqs.size(); ++i) {
      const Sequence& s = *plan.seqs[i].seq;
      const auto fp = fingerprints(s);
      const int32_t kv_len = plan.seqs[i].pos0 + plan.seqs[i].num_tokens;
      for (int32_t p = 0; p < kv_len; ++p) {
        const int32_t page = csr_.indices()[csr_.indptr()[i] + p / bs_];
        const uint64_t got = store_[static_cast<size_t>(page) * bs_ + p % bs_];
        ASSERT_EQ(got, fp[p]) << "sequence " << s.id() << " reads wrong KV at position " << p;
      }
    }
  }
  int64_t steps_with_work() const { return steps_with_work_; }

 private:
  static std::vector<uint64_t> fingerprints(const Sequence& s) {
    std::vector<uint64_t> fp(s.num_tokens());
    uint64_t h = 0x9E3779B97F4A7C15ull;
    for (int32_t p = 0; p < s.num_tokens(); ++p) {
      h = (h ^ static_cast<uint64_t>(s.tokens()[p] + 1)) * 0x100000001B3ull;
      fp[p] = h | 1;  // 0 marks a never-written slot
    }
    return fp;
  }

  int32_t bs_;
  std::vector<uint64_t> store_;
  PagedKvCsr csr_;
  int64_t steps_with_work_ = 0;
};

/// Per finished request: why and what it generated.
struct Finished {
  uint64_t id = 0;
  FinishReason reason = FinishReason::kError;
  std::vector<int32_t> generated;
  int32_t num_cached_prompt_tokens = 0;
  /// The finished sequence (null when aborted), kept alive so the step's plan entries stay
  /// valid for the test, as an engine holds it until it has emitted the final output.
  std::unique_ptr<Sequence> seq;
};

/// The first half of an engine step with the fake model: schedule `group` and record the
/// aborted requests in `done`. Returns the plan (now in flight).
inline const SchedulerPlan& launch_step(Scheduler& sched, std::vector<Finished>& done,
                                        int32_t group = 0) {
  const SchedulerPlan& plan = sched.schedule(std::chrono::steady_clock::now(), group);
  for (const auto& a : plan.aborted) {
    done.push_back({a->id(),
                    *a->finish_reason(),
                    {a->generated().begin(), a->generated().end()},
                    a->num_cached_prompt_tokens(),
                    nullptr});
  }
  return plan;
}

/// The second half: run `plan` (of `group`) on the fake model, commit, then sample every
/// `sample` entry; a request ends with kLength at max_tokens or kStop when `stop_after(id)`
/// tokens were generated. Appends finished requests to `done`.
inline void complete_step(Scheduler& sched, FakeModel& model, const SchedulerPlan& plan,
                          std::vector<Finished>& done,
                          const std::function<int32_t(uint64_t)>& stop_after = {},
                          int32_t group = 0) {
  model.run(plan);
  sched.commit(group);
  std::vector<Sequence*> sampled;
  for (const ScheduledSeq& e : plan.seqs) {
    if (e.sample) sampled.push_back(e.seq);
  }
  for (Sequence* s : sampled) {
    s->append_token(fake_token(s->id(), s->num_tokens()));
    std::optional<FinishReason> reason;
    if (s->num_generated_tokens() == s->request().max_tokens) {
      reason = FinishReason::kLength;
    } else if (stop_after && stop_after(s->id()) == s->num_generated_tokens()) {
      reason = FinishReason::kStop;
    }
    if (!reason) continue;
    auto owned = sched.finish(*s, *reason);
    done.push_back({owned->id(),
                    *reason,
                    {owned->generated().begin(), owned->generated().end()},
                    owned->num_cached_prompt_tokens(),
                    std::move(owned)});
  }
}

/// One engine step with the fake model: launch_step() then complete_step(). Returns the plan.
inline const SchedulerPlan& run_step(Scheduler& sched, FakeModel& model,
                                     std::vector<Finished>& done,
                                     const std::function<int32_t(uint64_t)>& stop_after = {}) {
  const SchedulerPlan& plan = launch_step(sched, done);
  complete_step(sched, model, plan, done, stop_after);
  return plan;
}

/// What a request must generate (whatever else ran), given its prompt length and final length.
inline std::vector<int32_t> expected_generation(uint64_t id, int32_t prompt_len, int32_t n) {
  std::vector<int32_t> g;
  for (int32_t i = 0; i < n; ++i) g.push_back(fake_token(id, prompt_len + i));
  return g;
}

}  // namespace novaserve::engine_test
