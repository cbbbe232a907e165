// Greedy decoding of several groups of sequences on one ModelRunner, each group with steps of its
// own: either one group at a time through forward(), or with every group's step in flight at
// once (group g in slot g: submit all, then wait for each in turn and submit its next step), as
// the engine drives an overlapped pipeline. Used to check an overlapped pipeline against a runner
// that runs one step at a time (the CPU tests bit for bit; tests/gpu within a bound).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

#include "engine/block_table.h"
#include "engine/paged_kv_cache.h"
#include "model/model_runner.h"

namespace novaserve::testing {

/// What one run produced, per sequence (groups back to back): its greedy tokens and the logits
/// rows they were taken from.
struct GroupRun {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<std::vector<float>>> logits;  // [sequence][step][n_vocab]
};

/// Runs `groups` (each a batch of prompts) for `n_new` greedy tokens per sequence on `r`: the
/// prompts in one step, then one token per step. `in_flight`: all groups' steps in flight at
/// once (needs r.max_in_flight() >= groups.size()); else each group's steps one at a time with
/// forward(), group by group.
inline GroupRun run_groups(ModelRunner& r,
                           const std::vector<std::vector<std::vector<int32_t>>>& groups,
                           int32_t n_new, bool in_flight, GgmlType kv_type = GgmlType::kF32) {
  const int32_t block_size = 16;
  int32_t n_seqs = 0, longest = 0;
  for (const auto& g : groups) {
    n_seqs += static_cast<int32_t>(g.size());
    for (const auto& p : g) longest = std::max<int32_t>(longest, p.size());
  }
  const int32_t per_seq = BlockTable::blocks_for(longest + n_new, block_size);
  const Status reserved = r.reserve(static_cast<int64_t>(n_seqs) * longest, n_seqs,
                                    static_cast<int64_t>(per_seq) * block_size, block_size);
  EXPECT_TRUE(reserved.ok()) << (reserved.ok() ? "" : reserved.error().message);
  auto kv = PagedKvCache::create(r.config(), n_seqs * per_seq, block_size, kv_type, &r);
  EXPECT_TRUE(kv.ok()) << (kv.ok() ? "" : kv.error().message);
  if (!kv.ok()) return {};
  // Sequence i owns blocks i * per_seq .. in reverse, so that block tables matter.
  std::vector<BlockTable> tables;
  std::vector<std::vector<int32_t>> tokens;
  std::vector<size_t> first_of;  // per group: its first sequence
  for (const auto& g : groups) {
    first_of.push_back(tokens.size());
    for (const auto& p : g) {
      BlockTable& t = tables.emplace_back(per_seq);
      for (int32_t b = per_seq - 1; b >= 0; --b) {
        t.push_back(static_cast<int32_t>(tables.size() - 1) * per_seq + b);
      }
      tokens.push_back(p);
      tokens.back().reserve(p.size() + static_cast<size_t>(n_new));  // spans stay valid
    }
  }
  GroupRun out;
  out.tokens.resize(tokens.size());
  out.logits.resize(tokens.size());
  const int64_t n_vocab = r.config().n_vocab;
  std::vector<std::vector<ForwardSeq>> steps(groups.size());
  std::vector<int32_t> done_steps(groups.size(), 0);
  // The next step of group g: its prompts first, then each sequence's last token.
  const auto build = [&](size_t g) {
    steps[g].clear();
    for (size_t i = 0; i < groups[g].size(); ++i) {
      const size_t s = first_of[g] + i;
      const auto pos0 = static_cast<int32_t>(done_steps[g] == 0 ? 0 : tokens[s].size() - 1);
      ForwardSeq f;
      f.tokens = std::span<const int32_t>(tokens[s]).subspan(static_cast<size_t>(pos0));
      f.pos0 = pos0;
      f.kv = kv->view(tables[s]);
      steps[g].push_back(f);
    }
  };
  // Reads group g's logits after its step and appends each sequence's argmax.
  const auto take = [&](size_t g) {
    for (size_t i = 0; i < groups[g].size(); ++i) {
      const size_t s = first_of[g] + i;
      const float* x = r.logits(i);
      out.logits[s].emplace_back(x, x + n_vocab);
      const auto next = static_cast<int32_t>(std::max_element(x, x + n_vocab) - x);
      out.tokens[s].push_back(next);
      tokens[s].push_back(next);
    }
    ++done_steps[g];
  };
  if (!in_flight) {
    for (size_t g = 0; g < groups.size(); ++g) {
      while (done_steps[g] < n_new) {
        build(g);
        const Status st = r.forward(steps[g], ActQuant::kNone);
        EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
        if (!st.ok()) return out;
        take(g);
      }
    }
    return out;
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    build(g);
    const Status st = r.submit(static_cast<int>(g), steps[g], ActQuant::kNone);
    EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
    if (!st.ok()) return out;
  }
  for (int32_t round = 0; round < n_new; ++round) {
    for (size_t g = 0; g < groups.size(); ++g) {
      const Status st = r.wait(static_cast<int>(g));
      EXPECT_TRUE(st.ok()) << (st.ok() ? "" : st.error().message);
      if (!st.ok()) return out;
      take(g);
      if (done_steps[g] == n_new) continue;
      build(g);
      const Status sub = r.submit(static_cast<int>(g), steps[g], ActQuant::kNone);
      EXPECT_TRUE(sub.ok()) << (sub.ok() ? "" : sub.error().message);
      if (!sub.ok()) return out;
    }
  }
  return out;
}

/// Whether two runs' logits are equal bit for bit (same shapes, same bytes).
inline bool same_bits(const std::vector<std::vector<std::vector<float>>>& a,
                      const std::vector<std::vector<std::vector<float>>>& b) {
  if (a.size() != b.size()) return false;
  for (size_t s = 0; s < a.size(); ++s) {
    if (a[s].size() != b[s].size()) return false;
    for (size_t t = 0; t < a[s].size(); ++t) {
      if (a[s][t].size() != b[s][t].size() ||
          std::memcmp(a[s][t].data(), b[s][t].data(), a[s][t].size() * sizeof(float)) != 0) {
        return false;
      }
    }
  }
  return true;
}

}  // namespace novaserve::testing
