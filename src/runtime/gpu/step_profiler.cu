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
  if (enabled_) print();
  for (cudaEvent_t e : events_) (void)cudaEventDestroy(e);
}

void StepProfiler::begin_step(bool decode, int64_t tokens) {
  if (!enabled_) return;
  decode_ = decode;
  used_ = 0;
  Totals& t = decode ? decode_totals_ : prefill_totals_;
  ++t.steps;
  t.tokens += tokens;
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
  if (!enabled_) return {};
  Totals& t = decode_ ? decode_totals_ : prefill_totals_;
  for (size_t i = 0; i < used_; ++i) {
    float ms = 0.0f;
    NOVASERVE_GPU_RETURN_IF_ERROR(cudaEventElapsedTime(&ms, events_[2 * i], events_[2 * i + 1]));
    t.ms[static_cast<int>(ops_[i])] += ms;
  }
  return {};
}

void StepProfiler::print() const {
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
