// Micro-benchmark of the CPU matmul (GEMV at batch 1, plus a small batch) on SmolLM2-135M
// shapes, per weight type and activation mode. Reports weight bytes streamed per second.
// K-quants (256-value blocks) only run the 1536-input shape: 576 is not a multiple of 256.
//
// Build: the CMake target bench_matmul (linked with novaserve_backend; built when Google
// Benchmark is installed): `ninja -C build bench_matmul`.
// Run: build/bench_matmul [--benchmark_filter=q4_1] ; NOVASERVE_CPU_SCALAR=1 for the scalar
// kernels; NOVASERVE_BENCH_THREADS=N to set the multi-threaded pool size (default: all cores).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul.h"
#include "quant/ggml_type.h"
#include "quant/half.h"
#include "quant/quantize.h"

namespace novaserve {
namespace {

struct Shape {
  int64_t in, out;
  const char* what;
};
constexpr Shape kShapes[] = {
    {576, 1536, "ffn_up"}, {1536, 576, "ffn_down"}, {576, 49152, "output"}};

// Weights from normally distributed values through our quantizer (realistic code and scale
// distributions); Q2_K/Q3_K (no quantizer) get random bytes with small fp16 scales.
std::vector<uint8_t> make_weights(GgmlType t, int64_t in, int64_t out) {
  std::mt19937 rng(1);
  const size_t row_bytes = *ggml_row_bytes(t, static_cast<uint64_t>(in));
  std::vector<uint8_t> w(row_bytes * static_cast<size_t>(out));
  if (t == GgmlType::kQ2_K || t == GgmlType::kQ3_K) {
    for (auto& b : w) b = static_cast<uint8_t>(rng());
    const int off = t == GgmlType::kQ2_K ? 80 : 108;
    const size_t bb = t == GgmlType::kQ2_K ? 84 : 110;
    const uint16_t h = f32_to_fp16(0.01f);
    for (size_t b = 0; b < w.size() / bb; ++b) {
      std::memcpy(w.data() + b * bb + off, &h, 2);
      if (t == GgmlType::kQ2_K) std::memcpy(w.data() + b * bb + off + 2, &h, 2);
    }
    return w;
  }
  std::normal_distribution<float> normal(0.0f, 0.02f);
  std::vector<float> row(static_cast<size_t>(in));
  for (int64_t o = 0; o < out; ++o) {
    for (auto& v : row) v = normal(rng);
    if (!quantize_row(t, row.data(), w.data() + o * row_bytes, in).ok()) std::abort();
  }
  return w;
}

ThreadPool& pool_for(int threads) {
  static std::vector<std::unique_ptr<ThreadPool>> pools(257);
  auto& p = pools[static_cast<size_t>(threads)];
  if (!p) p = std::make_unique<ThreadPool>(threads);
  return *p;
}

void bm_matmul(benchmark::State& state, GgmlType type, ActQuant mode, Shape shape, int rows,
               int threads) {
  const auto w = make_weights(type, shape.in, shape.out);
  std::vector<float> x(static_cast<size_t>(rows * shape.in));
  std::mt19937 rng(2);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (auto& v : x) v = normal(rng);
  std::vector<float> y(static_cast<size_t>(rows * shape.out));
  ThreadPool& pool = pool_for(threads);
  for (auto _ : state) {
    matmul(w.data(), type, shape.in, shape.out, x.data(), rows, y.data(), pool, mode);
    benchmark::DoNotOptimize(y.data());
    benchmark::ClobberMemory();
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations()) *
                          static_cast<int64_t>(w.size()));
  state.counters["weight_MB"] = static_cast<double>(w.size()) / 1e6;
  state.SetLabel(cpu_use_avx2() ? "avx2" : "scalar");
}

void register_all() {
  const GgmlType types[] = {GgmlType::kQ4_0, GgmlType::kQ4_1, GgmlType::kQ8_0, GgmlType::kQ5_0,
                            GgmlType::kQ5_1, GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K,
                            GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kF16,  GgmlType::kBF16,
                            GgmlType::kF32};
  const char* env = std::getenv("NOVASERVE_BENCH_THREADS");
  int all = env ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency());
  if (all < 1) all = 1;
  if (all > 256) all = 256;
  for (GgmlType t : types) {
    for (ActQuant mode : {ActQuant::kQ8, ActQuant::kNone}) {
      for (const Shape& s : kShapes) {
        if (s.in % ggml_type_traits(t).block_elems != 0) continue;  // K-quants need in % 256 == 0
        for (int threads : {1, all}) {
          for (int rows : {1, 8}) {
            const std::string name = std::string(ggml_type_traits(t).name) +
                                     (mode == ActQuant::kQ8 ? "/q8/" : "/exact/") + s.what + "_" +
                                     std::to_string(s.in) + "x" + std::to_string(s.out) +
                                     "/rows:" + std::to_string(rows) +
                                     "/threads:" + std::to_string(threads);
            benchmark::RegisterBenchmark(name.c_str(), bm_matmul, t, mode, s, rows, threads)
                ->UseRealTime()
                ->Unit(benchmark::kMicrosecond);
          }
          if (all == 1) break;  // threads 1 == all
        }
      }
    }
  }
}

}  // namespace
}  // namespace novaserve

int main(int argc, char** argv) {
  novaserve::register_all();
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
