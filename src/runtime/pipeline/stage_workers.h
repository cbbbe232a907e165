// StageWorkers: the threads of an overlapped pipeline (pipeline_runner.h, docs/multi-gpu.md
// "Micro-batching"): one per stage, so that while stage s + 1 runs the step of one slot, stage s
// already runs the next slot's. Steps enter stage 0 in submission order and pass from stage to
// stage through one hand-off per link, so every stage runs them in that order.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "common/result.h"

namespace novaserve {

/// What the threads do for a step; each hook runs on the named stage's thread and returns its
/// status (an exception, including a failed NOVASERVE_CHECK, becomes kInternal).
struct StageHooks {
  /// Stage `stage` (>= 1) takes the input of `slot`'s step from stage - 1's output, which stays
  /// unchanged until this returns (stage - 1's thread waits).
  std::function<Status(int stage, int slot)> receive;
  /// Stage `stage` runs its part of `slot`'s step (a stage before the last also hands its output
  /// to the link, to be taken by receive()).
  std::function<Status(int stage, int slot)> run;
  /// On the last stage's thread, after its run() succeeded: keeps the step's outputs.
  std::function<Status(int slot)> finish;
};

/// One thread per stage over `n_slots` slots. The hooks are called only from these threads;
/// submit() and wait() from one other thread (the runner's caller).
class StageWorkers {
 public:
  /// Starts `n_stages` (>= 1) threads named "ns-stage-<s>".
  StageWorkers(int n_stages, int n_slots, StageHooks hooks);
  /// Lets each thread finish the hook it is running, then joins them; steps not finished are
  /// dropped.
  ~StageWorkers();
  StageWorkers(const StageWorkers&) = delete;
  StageWorkers& operator=(const StageWorkers&) = delete;

  /// Queues `slot`'s step at stage 0. Checked: `slot` is in range and not in flight.
  void submit(int slot);
  /// Blocks until `slot`'s step has left the last stage; returns the first error of its hooks
  /// (a stage after a failed one skips the step). The slot is free again afterwards. Errors
  /// also: kInvalidInput for a slot out of range or not in flight.
  Status wait(int slot);
  /// Whether `slot` holds a step not yet collected by wait().
  bool in_flight(int slot) const;
  /// Whether any slot is in flight.
  bool any_in_flight() const;

 private:
  // The hand-off from stage s to s + 1 (link s): a slot posted by s and not yet taken by s + 1.
  struct Link {
    int slot = -1;  // -1: empty
  };
  struct Slot {
    bool in_flight = false;
    bool done = false;
    Status status;
  };

  void run(int stage);
  // The next slot for `stage`, or -1 when stopping. Called with mu_ held.
  int next_slot(int stage, std::unique_lock<std::mutex>& lk);
  int n_stages_;
  StageHooks hooks_;
  mutable std::mutex mu_;
  std::vector<std::condition_variable> stage_cv_;  // stage s waits for work or its link
  std::condition_variable done_cv_;                // wait() waits for a slot
  std::vector<int> queue_;                         // slots submitted, not yet taken by stage 0
  std::vector<Link> links_;                        // [n_stages - 1]
  std::vector<Slot> slots_;
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace novaserve
