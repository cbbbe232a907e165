// Start-up calibration of the step cost model (docs/engine.md, "Stall-free chunked prefill"):
// a few forward passes of known shapes, timed, so that the first steps under load already cap
// prompt chunks sensibly. The engine then refines the model with every step it runs.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "engine/engine_impl.h"

namespace novaserve {
namespace {

// Shapes of the calibration steps (capped by the pool, the context and the step budget).
constexpr int32_t kDecodeBatch = 8;
constexpr int32_t kChunk = 96;
constexpr int32_t kDeepPos = 768;

}  // namespace

void Engine::calibrate_shape(std::span<const ForwardSeq> seqs, int runs) {
  using Clock = std::chrono::steady_clock;
  StepShape shape;
  for (const ForwardSeq& f : seqs) shape.add(f.pos0, static_cast<int32_t>(f.tokens.size()));
  // Earlier runs pay one-time costs (page faults, graph capture, lazy workspaces); the last one
  // is timed.
  for (int run = 0; run < runs; ++run) {
    const auto t0 = Clock::now();
    if (!model_->forward(seqs, options_.act_quant).ok()) return;  // the real steps will say why
    if (run == runs - 1) {
      cost_model_.observe(shape,
                          std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
  }
}

void Engine::calibrate() {
  const auto t0 = std::chrono::steady_clock::now();
  // The calibration writes K/V into blocks that are all free now. Nothing reads a free block:
  // a sequence writes every position of a block before attending to it, and the prefix cache
  // holds no entry yet.
  const SchedulerConfig& sc = scheduler_->config();
  const int32_t bs = block_size_;
  const int32_t pool_tokens = kv_.num_blocks() * bs;
  const int32_t limit = std::min({pool_tokens, sc.max_model_len, sc.max_num_batched_tokens});
  std::vector<int32_t> ids(static_cast<size_t>(std::max(limit, 1)));
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>((i * 7919) % n_vocab_);
  std::vector<BlockTable> tables;
  tables.reserve(kDecodeBatch + 1);
  const auto table = [&](int32_t first_block, int32_t tokens) -> BlockTable& {
    BlockTable& t = tables.emplace_back(BlockTable::blocks_for(tokens, bs));
    for (int32_t b = 0; b < BlockTable::blocks_for(tokens, bs); ++b) {
      t.push_back((first_block + b) % kv_.num_blocks());
    }
    return t;
  };
  const auto seq = [&](BlockTable& t, int32_t pos0, int32_t n) {
    ForwardSeq f;
    f.tokens = std::span<const int32_t>(ids.data(), static_cast<size_t>(n));
    f.pos0 = pos0;
    f.kv = kv_.view(t);
    return f;
  };

  std::vector<ForwardSeq> step;
  // Decodes: 1 and up to kDecodeBatch sequences (distinct blocks where the pool has them).
  const int32_t batch = std::min({kDecodeBatch, sc.max_num_seqs, kv_.num_blocks()});
  for (int32_t b : {1, batch}) {
    step.clear();
    tables.clear();
    for (int32_t i = 0; i < b; ++i) step.push_back(seq(table(i, 1), 0, 1));
    calibrate_shape(step, /*runs=*/2);
  }
  // Prompt chunks at position 0 (two lengths, so the per-token cost is not fitted from one
  // point), and a shorter one deep in the context (attention cost). Each runs twice: the first
  // run of a shape pays lazy set-up (GEMM workspaces, kernel loading on a GPU).
  const int32_t chunk = std::min(kChunk, limit);
  for (const int32_t n : {chunk / 3, chunk}) {
    if (n < 2) continue;
    tables.clear();
    const ForwardSeq first = seq(table(0, n), 0, n);
    calibrate_shape(std::span<const ForwardSeq>(&first, 1), /*runs=*/2);
  }
  const int32_t deep_n = chunk / 2;
  const int32_t deep_pos = std::min(kDeepPos, std::min(pool_tokens, sc.max_model_len) - deep_n);
  if (deep_n >= 1 && deep_pos > deep_n) {
    tables.clear();
    const ForwardSeq deep = seq(table(0, deep_pos + deep_n), deep_pos, deep_n);
    calibrate_shape(std::span<const ForwardSeq>(&deep, 1), /*runs=*/2);
  }
  cost_model_.anchor();
  const auto c = cost_model_.coefficients();
  std::fprintf(stderr,
               "novaserve engine: step cost model %.2f ms + %.4f ms/token + %.3f ms/sequence + "
               "%.3g ms/attention pair (%lld calibration steps, %.2f s)\n",
               c[0], c[1], c[2], c[3], static_cast<long long>(cost_model_.observations()),
               std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace novaserve
