// Next-token masks of a step's grammar-constrained rows, filled on a worker thread while the
// step's forward pass runs (docs/structured-outputs.md, "Where masks apply"): a row's mask
// depends only on the tokens it has accepted, all known before the forward starts, so the
// mask work overlaps the model instead of adding to the step.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <span>
#include <thread>
#include <vector>

#include "grammar/grammar.h"

namespace novaserve {

class GrammarMaskWorker {
 public:
  /// One mask to fill: `row` in [0, max_rows) selects the buffer.
  struct Job {
    int32_t row = 0;
    grammar::GrammarMatcher* matcher = nullptr;  ///< not touched by anyone else until wait()
  };

  /// `max_rows`: most constrained rows of one step (max_num_seqs); `n_vocab`: the model's
  /// vocabulary (masks are ceil(n_vocab / 32) words, bit t of word t / 32 = token t allowed).
  /// Buffers are sized here; start()/wait() do not allocate. The thread starts on first use.
  GrammarMaskWorker(int32_t max_rows, int32_t n_vocab);
  ~GrammarMaskWorker();
  GrammarMaskWorker(const GrammarMaskWorker&) = delete;
  GrammarMaskWorker& operator=(const GrammarMaskWorker&) = delete;

  /// Begins filling the masks of `jobs` (at most max_rows, distinct rows) and returns at once.
  /// Call wait() before reading a mask or touching a job's matcher.
  void start(std::span<const Job> jobs);

  /// Blocks until the masks of the last start() are filled (returns at once if none pending).
  /// Returns the seconds this call spent blocked: the part of the mask work the forward did not
  /// hide.
  double wait();

  /// Row `row`'s mask (valid after wait()).
  std::span<const uint32_t> mask(int32_t row) const {
    return {masks_.data() + static_cast<size_t>(row) * words_, words_};
  }
  size_t words() const { return words_; }
  /// Seconds the worker spent filling masks since construction (read after wait()).
  double busy_seconds() const { return busy_seconds_; }

 private:
  void run();

  size_t words_;
  int32_t max_rows_;
  std::vector<uint32_t> masks_;  // max_rows x words_
  std::vector<Job> jobs_;        // reserved to max_rows
  std::mutex mu_;
  std::condition_variable cv_;
  bool pending_ = false;       // jobs_ published, not yet done
  double busy_seconds_ = 0.0;  // written by the worker before it clears pending_
  bool stop_ = false;
  std::thread thread_;
};

/// True when bit `token` of `mask` is set (tokens past the mask are not allowed).
inline bool mask_allows(std::span<const uint32_t> mask, int32_t token) {
  const auto w = static_cast<size_t>(token) >> 5;
  return token >= 0 && w < mask.size() && ((mask[w] >> (token & 31)) & 1u) != 0;
}

}  // namespace novaserve
