// The engine with several groups of sequences in flight (docs/engine.md, "Groups of sequences in
// flight"), over a runner that keeps up to G steps in flight and runs them on a thread of its
// own: nothing runs until the engine waits for a step that is not done, and then every step in
// flight runs, in a random order and after random pauses, so that steps complete before, at or
// after their wait() and out of submission order. Every request must get the tokens of an engine
// that runs one step at a time (the CPU forward pass is batch-invariant), with chunked prefill,
// seeded sampling, logprobs, prefix hits, preemption, a cancel seen while its step is in flight
// and a failed step; and the engine must never change the tokens or block table of a sequence
// whose step is in flight (stronger than the runner contract asks, which lets runners copy).
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <thread>

#include "cpu_runner_factory.h"
#include "engine/engine.h"
#include "engine_fixture.h"

namespace novaserve {
namespace {

// What the runner saw, shared with the test (the engine owns the runner).
struct RunnerLog {
  std::atomic<int> steps{0};           // steps run through submit()
  std::atomic<int> changed_inputs{0};  // steps whose caller's tokens or tables changed in flight
  std::atomic<int> out_of_order{0};    // steps run before one submitted earlier
  std::atomic<int> most_in_flight{0};  // the most steps in flight at once
};

// Up to `slots` steps in flight over a CPU model; see the file comment. Steps in flight belong
// to different groups, whose sequences and KV blocks are disjoint, so any order is valid. The Nth
// step run (fail_at, 1-based; 0 = never) fails as a device error would.
class ShuffledSlotRunner final : public ModelRunner {
 public:
  ShuffledSlotRunner(std::unique_ptr<ModelRunner> inner, int slots, uint32_t seed, int fail_at,
                     std::shared_ptr<RunnerLog> log)
      : inner_(std::move(inner)),
        slots_(static_cast<size_t>(slots)),
        rng_(seed),
        fail_at_(fail_at),
        log_(std::move(log)) {
    thread_ = std::thread([this] { run(); });
  }
  ~ShuffledSlotRunner() override {
    {
      std::lock_guard<std::mutex> lk(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    thread_.join();
  }

  const ModelConfig& config() const override { return inner_->config(); }
  std::string describe() const override { return "shuffled slots over " + inner_->describe(); }
  Status reserve(int64_t max_rows, int64_t max_seqs, int64_t max_context,
                 int32_t block_size) override {
    return inner_->reserve(max_rows, max_seqs, max_context, block_size);
  }
  // The engine's start-up calibration only: no step is in flight then.
  Status forward(std::span<const ForwardSeq> seqs, ActQuant mode) override {
    current_ = -1;
    return inner_->forward(seqs, mode);
  }
  const float* logits(size_t seq, int32_t token) const override {
    if (current_ < 0) return inner_->logits(seq, token);
    EXPECT_EQ(token, -1);
    return slots_[static_cast<size_t>(current_)].logits[seq].data();
  }
  int max_in_flight() const override { return static_cast<int>(slots_.size()); }

  Status submit(int slot, std::span<const ForwardSeq> seqs, ActQuant mode) override {
    std::lock_guard<std::mutex> lk(mu_);
    if (slot < 0 || slot >= max_in_flight() || slots_[static_cast<size_t>(slot)].in_flight) {
      return Err(ErrorCode::kInvalidInput, "slot " + std::to_string(slot));
    }
    Slot& s = slots_[static_cast<size_t>(slot)];
    s = Slot{};
    s.in_flight = true;
    s.order = next_order_++;
    s.mode = mode;
    s.live.assign(seqs.begin(), seqs.end());
    for (const ForwardSeq& f : seqs) {
      s.tokens.emplace_back(f.tokens.begin(), f.tokens.end());
      s.tables.emplace_back(f.kv.block_table, f.kv.block_table + f.kv.n_blocks);
    }
    s.copy = s.live;
    for (size_t i = 0; i < s.copy.size(); ++i) {
      s.copy[i].tokens = s.tokens[i];
      s.copy[i].kv.block_table = s.tables[i].data();
    }
    pending_.push_back(slot);
    int n = 0;
    for (const Slot& x : slots_) n += x.in_flight ? 1 : 0;
    log_->most_in_flight = std::max(log_->most_in_flight.load(), n);
    cv_.notify_all();
    return {};
  }

  Status wait(int slot) override {
    std::unique_lock<std::mutex> lk(mu_);
    if (slot < 0 || slot >= max_in_flight() || !slots_[static_cast<size_t>(slot)].in_flight) {
      return Err(ErrorCode::kInvalidInput, "slot " + std::to_string(slot) + " is not in flight");
    }
    Slot& s = slots_[static_cast<size_t>(slot)];
    if (!s.done) {
      run_requested_ = true;
      cv_.notify_all();
    }
    cv_.wait(lk, [&] { return s.done; });
    s.in_flight = false;
    current_ = slot;
    return s.status;
  }

 private:
  struct Slot {
    bool in_flight = false;
    bool done = false;
    uint64_t order = 0;
    ActQuant mode = ActQuant::kNone;
    std::vector<ForwardSeq> live;  // as submitted: the engine's spans
    std::vector<ForwardSeq> copy;  // over the copies below
    std::vector<std::vector<int32_t>> tokens, tables;
    std::vector<std::vector<float>> logits;
    Status status;
  };

  void run() {
    std::unique_lock<std::mutex> lk(mu_);
    for (;;) {
      cv_.wait(lk, [&] { return stop_ || (run_requested_ && !pending_.empty()); });
      if (stop_) return;
      const size_t pick = rng_() % pending_.size();
      const int slot = pending_[pick];
      Slot& s = slots_[static_cast<size_t>(slot)];
      for (const int other : pending_) {
        if (slots_[static_cast<size_t>(other)].order < s.order) {
          ++log_->out_of_order;
          break;
        }
      }
      pending_.erase(pending_.begin() + static_cast<std::ptrdiff_t>(pick));
      const auto pause = std::chrono::microseconds(rng_() % 3000);
      const int index = ++log_->steps;
      lk.unlock();
      std::this_thread::sleep_for(pause);
      for (size_t i = 0; i < s.live.size(); ++i) {
        const ForwardSeq& f = s.live[i];
        if (!std::equal(f.tokens.begin(), f.tokens.end(), s.tokens[i].begin()) ||
            !std::equal(f.kv.block_table, f.kv.block_table + f.kv.n_blocks, s.tables[i].begin())) {
          ++log_->changed_inputs;
        }
      }
      Status st = index == fail_at_ ? Status(Err(ErrorCode::kInternal, "injected device error"))
                                    : inner_->forward(s.copy, s.mode);
      if (st.ok()) {
        const int64_t n_vocab = inner_->config().n_vocab;
        for (size_t i = 0; i < s.copy.size(); ++i) {
          const float* x = inner_->logits(i, -1);
          s.logits.emplace_back(x, x + n_vocab);
        }
      }
      lk.lock();
      s.status = std::move(st);
      s.done = true;
      if (pending_.empty()) run_requested_ = false;
      cv_.notify_all();
    }
  }

  std::unique_ptr<ModelRunner> inner_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<Slot> slots_;
  std::vector<int> pending_;
  uint64_t next_order_ = 0;
  std::mt19937 rng_;
  int fail_at_;
  std::shared_ptr<RunnerLog> log_;
  int current_ = -1;            // the slot logits() reads; -1: the inner runner (after forward())
  bool run_requested_ = false;  // a wait() found its step not done: run every step in flight
  bool stop_ = false;
  std::thread thread_;
};

const std::vector<std::string>& kTexts = kEngineTestTexts;

class EngineGroupsTest : public DefaultModelTest {
 protected:
  // An engine over the CPU model; with `groups` > 0 through a ShuffledSlotRunner of that many
  // slots (the engine keeps that many groups in flight).
  std::unique_ptr<EngineClient> make(EngineOptions o, int groups, int fail_at = 0) {
    const RunnerFactory cpu = cpu_runner_factory(2);
    if (groups > 0) {
      auto log = log_;
      o.make_runner =
          [cpu, groups, fail_at,
           log](std::shared_ptr<const GgufFile> file) -> Result<std::unique_ptr<ModelRunner>> {
        auto inner = cpu(std::move(file));
        if (!inner.ok()) return inner.error();
        return std::unique_ptr<ModelRunner>(std::make_unique<ShuffledSlotRunner>(
            std::move(inner.value()), groups, 1234u + static_cast<uint32_t>(groups), fail_at, log));
      };
    } else {
      o.make_runner = cpu;
    }
    auto e = create_engine(gguf_, *tokenizer_, o);
    EXPECT_TRUE(e.ok()) << (e.ok() ? "" : e.error().message);
    return e.ok() ? std::move(e.value()) : nullptr;
  }

  // Greedy requests 0 .. 5 (one per text), seeded sampled ones 100 .. 105 and a greedy one with
  // logprobs (200), submitted at once; returns each one's tokens.
  std::map<uint64_t, std::vector<int32_t>> serve(EngineClient& e, int32_t max_tokens) {
    Collector c;
    size_t n = 0;
    for (size_t i = 0; i < kTexts.size(); ++i) {
      EXPECT_TRUE(e.submit(request(i, kTexts[i], max_tokens, c)).ok());
      EngineRequest noisy = request(100 + i, kTexts[(i + 1) % kTexts.size()], max_tokens, c);
      noisy.sampling.temperature = 0.9f;
      noisy.sampling.top_p = 0.8f;
      noisy.sampling.seed = i;
      EXPECT_TRUE(e.submit(std::move(noisy)).ok());
      n += 2;
    }
    EngineRequest lp = request(200, kTexts[0], max_tokens, c);
    lp.top_logprobs = 2;
    EXPECT_TRUE(e.submit(std::move(lp)).ok());
    ++n;
    EXPECT_TRUE(c.wait(n));
    std::map<uint64_t, std::vector<int32_t>> out;
    for (uint64_t id : {0, 1, 2, 3, 4, 5, 100, 101, 102, 103, 104, 105, 200}) {
      const Collector::Result r = c.get(id);
      EXPECT_EQ(r.finish, FinishReason::kLength) << "request " << id;
      out[id] = r.tokens;
    }
    return out;
  }

  // A greedy request that runs to max_tokens.
  static EngineRequest request(uint64_t id, const std::string& text, int32_t max_tokens,
                               Collector& c) {
    EngineRequest r = DefaultModelTest::request(id, text, max_tokens, c);
    r.ignore_eos = true;
    return r;
  }

  std::shared_ptr<RunnerLog> log_ = std::make_shared<RunnerLog>();
};

TEST_F(EngineGroupsTest, GroupsInFlightGiveEveryRequestTheTokensOfOneStepAtATime) {
  EngineOptions o;
  o.scheduler.max_num_batched_tokens = 24;  // prompts are chunked beside decodes
  o.scheduler.max_num_seqs = 8;
  auto plain = make(o, 0);
  const auto want = serve(*plain, 10);
  plain.reset();
  for (int groups : {2, 3}) {
    SCOPED_TRACE(std::to_string(groups) + " groups");
    log_ = std::make_shared<RunnerLog>();
    auto e = make(o, groups);
    EXPECT_EQ(serve(*e, 10), want);
    e.reset();
    EXPECT_EQ(log_->changed_inputs, 0);
    EXPECT_GT(log_->steps, 0);
    EXPECT_EQ(log_->most_in_flight, groups);
    EXPECT_GT(log_->out_of_order, 0);  // the shuffle did run steps out of submission order
  }
}

TEST_F(EngineGroupsTest, PreemptionInsideGroupsUnderATinyKvPoolKeepsTheTokens) {
  EngineOptions o;
  o.block_size = 16;
  // 9 blocks = 144 positions for 13 sequences of up to ~50: preemption within each group.
  o.kv_cache_memory = 9 * 2 * 30 * 192 * 16 * sizeof(float);
  auto plain = make(o, 0);
  const auto want = serve(*plain, 16);
  plain.reset();
  auto e = make(o, 2);
  EXPECT_EQ(serve(*e, 16), want);
  EXPECT_GT(e->stats().num_preemptions, 0);
  e.reset();
  EXPECT_EQ(log_->changed_inputs, 0);
}

TEST_F(EngineGroupsTest, ACancelOfASequenceInFlightWaitsForItsGroup) {
  EngineOptions o;
  o.scheduler.max_num_seqs = 4;  // 2 per group: requests 1, 2 in group 0 and 3, 4 in group 1
  o.batch_wait = std::chrono::milliseconds(2000);  // all four join the first step
  auto e = make(o, 2);
  Collector c;
  auto flag = std::make_shared<std::atomic<bool>>(false);
  EngineRequest first = request(1, kTexts[1], 20, c);
  first.cancelled = flag;
  ASSERT_TRUE(e->submit(std::move(first)).ok());
  ASSERT_TRUE(e->submit(request(2, kTexts[2], 12, c)).ok());
  // Request 3 (group 1) cancels request 1 from its third token's callback, on the engine
  // thread while group 0's decode step, request 1's included, is in flight: that step still
  // completes and emits its token, then group 0's next schedule() drops request 1.
  size_t tokens_at_cancel = 0;
  EngineRequest third = request(3, kTexts[3], 12, c);
  const OutputCallback record = third.on_output;
  int seen = 0;
  third.on_output = [&, record](StepOutput&& out) {
    if (out.token >= 0 && ++seen == 3) {
      tokens_at_cancel = c.num_outputs(1);
      flag->store(true);
    }
    record(std::move(out));
  };
  ASSERT_TRUE(e->submit(std::move(third)).ok());
  ASSERT_TRUE(e->submit(request(4, kTexts[4], 12, c)).ok());
  ASSERT_TRUE(c.wait(4));
  EXPECT_EQ(c.get(1).finish, FinishReason::kAbort);
  EXPECT_GE(tokens_at_cancel, 1u);
  EXPECT_EQ(c.get(1).tokens.size(), tokens_at_cancel + 1);
  for (uint64_t id = 2; id <= 4; ++id) {
    EXPECT_EQ(c.get(id).finish, FinishReason::kLength) << "request " << id;
    EXPECT_EQ(c.get(id).tokens.size(), 12u) << "request " << id;
  }
  e.reset();
  EXPECT_EQ(log_->changed_inputs, 0);
}

TEST_F(EngineGroupsTest, AFailedStepFailsTheEngineAndEveryRequestEndsOnce) {
  EngineOptions o;
  o.scheduler.max_num_seqs = 6;
  auto e = make(o, 3, /*fail_at=*/5);
  Collector c;
  for (uint64_t id = 0; id < kTexts.size(); ++id) {
    ASSERT_TRUE(e->submit(request(id, kTexts[id], 30, c)).ok());
  }
  ASSERT_TRUE(c.wait(kTexts.size()));  // each request ends exactly once (Collector checks)
  for (uint64_t id = 0; id < kTexts.size(); ++id) {
    EXPECT_EQ(c.get(id).finish, FinishReason::kError) << "request " << id;
  }
  EXPECT_FALSE(e->healthy());
  Collector late;
  EXPECT_FALSE(e->submit(request(99, kTexts[0], 4, late)).ok());
}

}  // namespace
}  // namespace novaserve
