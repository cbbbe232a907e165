// Device-side greedy decoding: argmax_rows (argmax_gpu.h) against the sequential scan that
// Sampler's greedy path runs, on adversarial rows (ties, NaNs, infinities, the maximum at either
// end), and GpuLlamaRunner::greedy_token against the argmax of the logits it would otherwise copy.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "../unit/model/tiny_model.h"
#include "backend/gpu/kernels/argmax_gpu.h"
#include "engine/block_table.h"
#include "engine/paged_kv_cache.h"
#include "gpu_test_util.h"
#include "runtime/gpu/gpu_runner.h"

namespace novaserve::gpu::test {
namespace {

// The scan of Sampler::argmax: the first index of the largest value; NaN never compares greater.
int32_t scan_argmax(const float* x, int64_t n) {
  int32_t best = 0;
  for (int64_t i = 1; i < n; ++i) {
    if (x[i] > x[best]) best = static_cast<int32_t>(i);
  }
  return best;
}

class GreedyTest : public GpuTest {};

TEST_F(GreedyTest, ArgmaxRowsMatchesTheSamplerScan) {
  constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
  constexpr float kInf = std::numeric_limits<float>::infinity();
  for (const int64_t n_vocab : {1, 7, 512, 513, 128256}) {
    std::vector<std::vector<float>> rows;
    rows.push_back(random_floats(n_vocab, rng_));  // random
    std::vector<float> ties(n_vocab, 1.0f);        // all equal: index 0
    rows.push_back(ties);
    std::vector<float> late = random_floats(n_vocab, rng_);
    late[n_vocab - 1] = 100.0f;  // maximum at the end
    rows.push_back(late);
    std::vector<float> twice = random_floats(n_vocab, rng_);
    twice[n_vocab / 3] = 50.0f;  // a tie between two maxima: the lower index
    twice[n_vocab - 1] = 50.0f;
    rows.push_back(twice);
    std::vector<float> nan0 = random_floats(n_vocab, rng_);
    nan0[0] = kNan;  // nothing beats a NaN at index 0
    rows.push_back(nan0);
    std::vector<float> nans = random_floats(n_vocab, rng_);
    for (int64_t i = 1; i < n_vocab; i += 3) nans[i] = kNan;  // NaNs elsewhere never win
    rows.push_back(nans);
    rows.push_back(std::vector<float>(n_vocab, -kInf));  // all -inf: index 0
    std::vector<float> inf = random_floats(n_vocab, rng_);
    inf[n_vocab / 2] = kInf;
    rows.push_back(inf);
    std::vector<float> host;
    for (const auto& r : rows) host.insert(host.end(), r.begin(), r.end());
    const DeviceBuffer<float> d_logits(host);
    const DeviceBuffer<int32_t> d_ids(rows.size());
    ASSERT_TRUE(argmax_rows(d_logits.get(), static_cast<int64_t>(rows.size()), n_vocab, d_ids.get(),
                            stream_)
                    .ok());
    sync();
    const std::vector<int32_t> ids = d_ids.download();
    for (size_t r = 0; r < rows.size(); ++r) {
      EXPECT_EQ(ids[r], scan_argmax(rows[r].data(), n_vocab))
          << "row kind " << r << ", n_vocab " << n_vocab << ", " << seed_note();
    }
  }
  EXPECT_FALSE(argmax_rows(nullptr, -1, 4, nullptr, stream_).ok());
  EXPECT_FALSE(argmax_rows(nullptr, 1, 0, nullptr, stream_).ok());
}

// Runs decode steps of `n` sequences on a tiny model; `greedy(i)` says which ask for greedy.
struct DecodeRig {
  DecodeRig(std::shared_ptr<const GgufFile> file, bool graphs, int32_t n) : n(n) {
    auto m = create_gpu_runner(std::move(file), GpuRunnerOptions{0, graphs, {}});
    EXPECT_TRUE(m.ok()) << (m.ok() ? "" : m.error().message);
    runner = std::move(m.value());
    auto c = PagedKvCache::create(runner->config(), n * kBlocks, kBlockSize, GgmlType::kF16,
                                  runner.get());
    EXPECT_TRUE(c.ok()) << (c.ok() ? "" : c.error().message);
    kv = std::make_unique<PagedKvCache>(std::move(c.value()));
    for (int32_t i = 0; i < n; ++i) {
      tables.emplace_back(kBlocks);
      for (int32_t b = 0; b < kBlocks; ++b) tables.back().push_back(i * kBlocks + b);
    }
  }
  Status step(const std::vector<int32_t>& tokens, int32_t pos, const std::vector<bool>& greedy) {
    seqs.clear();
    for (int32_t i = 0; i < n; ++i) {
      ForwardSeq f{{&tokens[i], 1}, pos, kv->view(tables[i]), false};
      f.greedy = greedy[i];
      seqs.push_back(f);
    }
    return runner->forward(seqs, ActQuant::kNone);
  }
  static constexpr int32_t kBlockSize = 16, kBlocks = 4;
  int32_t n;
  std::unique_ptr<ModelRunner> runner;
  std::unique_ptr<PagedKvCache> kv;
  std::vector<BlockTable> tables;
  std::vector<ForwardSeq> seqs;
};

TEST_F(GreedyTest, RunnerGreedyTokensEqualTheArgmaxOfItsLogits) {
  testing::TinySpec s;
  s.n_embd = 256;
  s.n_head = 4;
  s.n_head_kv = 2;
  s.n_ff = 512;
  s.n_vocab = 300;
  s.n_ctx = 256;
  s.matrix_type = GgmlType::kQ4_0;
  s.embd_type = GgmlType::kQ4_0;
  auto file = testing::make_tiny_model(s);
  constexpr int32_t kN = 5;
  // `full` never asks for greedy and copies its logits; `mixed` asks for greedy on some
  // sequences (logits still copied for the others), `all` on every one (only ids copied).
  DecodeRig full(file.file, true, kN), mixed(file.file, true, kN), all(file.file, true, kN);
  std::vector<int32_t> tokens(kN);
  for (int32_t i = 0; i < kN; ++i) tokens[i] = 1 + 37 * i;
  const std::vector<bool> none(kN, false), some = {true, false, true, true, false}, every(kN, true);
  for (int32_t pos = 0; pos < 40; ++pos) {  // the first step runs eagerly and captures the graph
    ASSERT_TRUE(full.step(tokens, pos, none).ok());
    ASSERT_TRUE(mixed.step(tokens, pos, some).ok());
    ASSERT_TRUE(all.step(tokens, pos, every).ok());
    for (int32_t i = 0; i < kN; ++i) {
      EXPECT_FALSE(full.runner->greedy_token(i).has_value());
      const int32_t want = scan_argmax(full.runner->logits(i), s.n_vocab);
      const auto m = mixed.runner->greedy_token(i);
      EXPECT_EQ(m.has_value(), some[i]);
      if (m) {
        EXPECT_EQ(*m, want) << "step " << pos << " sequence " << i;
        EXPECT_EQ(scan_argmax(mixed.runner->logits(i), s.n_vocab), want);
      }
      const auto a = all.runner->greedy_token(i);
      ASSERT_TRUE(a.has_value());
      EXPECT_EQ(*a, want) << "step " << pos << " sequence " << i;
      tokens[i] = want;
    }
  }
}

}  // namespace
}  // namespace novaserve::gpu::test
