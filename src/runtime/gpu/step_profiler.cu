#include <cstdio>

#include "backend/gpu/platform/gpu_status.h"
#include "runtime/gpu/step_profiler.h"

namespace novaserve::gpu {

namespace {

const char* op_name(int op) {
  static const char* const kNames[] = {"embed",
                                       "rms_norm (+residual)",
                                       "matmul q/k/v",
                                       "matmul o",
                                       "matmul gate/up",
                                       "matmul down",
                                       "matmul output",
                                       "rope (q)",
                                       "store_kv (+rope k)",
                                       "attention",
                                       "swiglu",
                                       "other"};
  return kNames[op];
}

}  // namespace

StepProfiler::~StepProfiler() {
  if (enabled_ || steps_mode_) print();
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
  for (cudaEvent_t e : step_events_) {
    if (e != nullptr) (void)cudaEventDestroy(e);
  }
}

void StepProfiler::enter_step() {
  if (steps_mode_) entered_ = Clock::now();
}

void StepProfiler::begin_step(bool decode, int64_t tokens, cudaStream_t stream) {
  if (!enabled_ && !steps_mode_) return;
  decode_ = decode;
  used_ = 0;
  Totals& t = decode ? decode_totals_ : prefill_totals_;
  ++t.steps;
  t.tokens += tokens;
  if (!steps_mode_) return;
  for (cudaEvent_t& e : step_events_) {
    if (e == nullptr && cudaEventCreate(&e) != cudaSuccess) {
      steps_mode_ = false;  // no events: profiling stops, the step itself is unaffected
      return;
    }
  }
  queued_ = Clock::now();
  step_recorded_ = cudaEventRecord(step_events_[0], stream) == cudaSuccess;
}

void StepProfiler::queued_step(cudaStream_t stream) {
  if (steps_mode_)
    step_recorded_ = step_recorded_ && cudaEventRecord(step_events_[1], stream) == cudaSuccess;
}

void StepProfiler::start(ProfOp op, cudaStream_t stream) {
  if (!enabled_) return;
  if (2 * used_ + 2 > events_.size()) {
    for (int i = 0; i < 2; ++i) {
      cudaEvent_t e = nullptr;
      if (cudaEventCreate(&e) != cudaSuccess) {
        enabled_ = false;  // no events: profiling stops, the step itself is unaffected
        return;
      }
      events_.push_back(e);
    }
    ops_.push_back(op);
  }
  ops_[used_] = op;
  current_ = op;
  (void)cudaEventRecord(events_[2 * used_], stream);
}

void StepProfiler::stop(cudaStream_t stream) {
  if (!enabled_) return;
  (void)cudaEventRecord(events_[2 * used_ + 1], stream);
  ++used_;
}

Status StepProfiler::end_step() {
  Totals& t = decode_ ? decode_totals_ : prefill_totals_;
  if (steps_mode_) {
    const auto now = Clock::now();
    const auto ms = [](Clock::duration d) {
      return std::chrono::duration<double, std::milli>(d).count();
    };
    if (returned_once_) t.between_ms += ms(entered_ - returned_);
    t.prepare_ms += ms(queued_ - entered_);
    t.forward_ms += ms(now - entered_);
    returned_ = now;
    returned_once_ = true;
    float device = 0.0f;
    if (!step_recorded_ ||
        cudaEventElapsedTime(&device, step_events_[0], step_events_[1]) != cudaSuccess) {
      // Profiling stops (with the totals so far); the step itself is unaffected.
      std::fprintf(stderr,
                   "novaserve gpu: NOVASERVE_GPU_PROFILE=steps: an event failed; the "
                   "per-step profile stops here\n");
      print();
      steps_mode_ = false;
      return {};
    }
    t.device_ms += device;
    return {};
  }
  if (!enabled_) return {};
  for (size_t i = 0; i < used_; ++i) {
    float ms = 0.0f;
    NOVASERVE_GPU_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]));
    t.ms[static_cast<int>(ops_[i])] += ms;
  }
  return {};
}

void StepProfiler::print_steps() const {
  for (const auto* t : {&decode_totals_, &prefill_totals_}) {
    if (t->steps == 0) continue;
    const auto n = static_cast<double>(t->steps);
    const double wall = (t->between_ms + t->forward_ms) / n;
    std::fprintf(stderr,
                 "novaserve gpu profile: %s steps: %lld steps, %lld tokens; per step %.3f ms of "
                 "wall time: %.3f ms on the device (%.1f%%), %.3f ms in the caller between steps, "
                 "%.3f ms preparing the step in the runner, %.3f ms from queuing to return\n",
                 t == &decode_totals_ ? "decode" : "prefill/mixed",
                 static_cast<long long>(t->steps), static_cast<long long>(t->tokens), wall,
                 t->device_ms / n, wall > 0 ? 100.0 * t->device_ms / n / wall : 0.0,
                 t->between_ms / n, t->prepare_ms / n, (t->forward_ms - t->prepare_ms) / n);
  }
}

void StepProfiler::print() const {
  if (steps_mode_) {
    print_steps();
    return;
  }
  for (const auto* t : {&decode_totals_, &prefill_totals_}) {
    if (t->steps == 0) continue;
    double total = 0.0;
    for (double ms : t->ms) total += ms;
    std::fprintf(stderr,
                 "novaserve gpu profile: %s steps: %lld steps, %lld tokens, %.2f ms of kernels "
                 "per step\n",
                 t == &decode_totals_ ? "decode" : "prefill/mixed",
                 static_cast<long long>(t->steps), static_cast<long long>(t->tokens),
                 total / static_cast<double>(t->steps));
    for (int op = 0; op < static_cast<int>(ProfOp::kCount); ++op) {
      if (t->ms[op] == 0.0) continue;
      std::fprintf(stderr, "  %-22s %9.3f ms/step %5.1f%%\n", op_name(op),
                   t->ms[op] / static_cast<double>(t->steps), 100.0 * t->ms[op] / total);
    }
  }
}

}  // namespace novaserve::gpu
