// Test harness for the paged attention ops: random sequences with random, scattered block tables,
// stored in two steps (the "history" 0 .. pos0 - 1, then the new rows pos0 .. pos0 + n_new - 1,
// as a chunked prefill or a decode step does), run through the CPU backend (the reference) and
// through the GPU ops, on the same inputs.
#pragma once

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <random>
#include <thread>
#include <vector>

#include "backend/cpu/cpu_backend.h"
#include "backend/gpu/kernels/attention_ops.h"
#include "gpu_test_util.h"
#include "quant/ggml_type.h"

namespace novaserve::gpu::test {

/// One sequence of a batch: pos0 cached positions plus n_new new ones. A padding sequence has no
/// pages and one new row (a decode batch padded to a graph bucket); its output must be zeros.
struct SeqSpec {
  int32_t pos0 = 0;
  int32_t n_new = 1;
  bool padding = false;
};

/// Attention geometry plus the cache's block size.
struct AttnGeometry {
  const char* name;
  int32_t n_head, n_head_kv, head_dim, block_size;
};

/// Llama-3-8B's attention (32 query heads on 8 KV heads, head_dim 128) on 16-row cache blocks.
inline constexpr AttnGeometry kLlama3{"llama3 32:8 d128 bs16", 32, 8, 128, 16};

/// NMSE bound of the tensor-core prefill (prefill_attention_mma.h) on an F16 cache against the CPU
/// on the same cache: q and the softmax weights are rounded to fp16 before their products, so it
/// matches the CPU's f32 arithmetic only to ~1e-7 (derivation: prefill_attention_mma_test.cu).
inline constexpr double kMmaPrefillVsCpuF16Nmse = 1e-6;

/// The same bound for the tensor-core decode on a Q8_0 cache (decode_attention_mma): q, P and P
/// times each V scale are rounded to fp16 before their products (the codes are exact), ~1e-7.
inline constexpr double kMmaDecodeVsCpuQ8Nmse = 1e-6;

/// Initial value of the GPU output buffers: rows that a kernel must not write keep it.
inline constexpr float kSentinel = 1e30f;

/// One step's block tables in the CSR form of paged_kv.h, on the host.
struct HostCsr {
  std::vector<int32_t> qo_indptr{0}, indptr{0}, indices, last_page_len;
  int64_t n_rows = 0;
  int32_t max_new = 0;
};

/// The same CSR on the device, and the PagedKvBatch pointing at it.
struct DeviceCsr {
  explicit DeviceCsr(const HostCsr& h)
      : qo(h.qo_indptr), indptr(h.indptr), indices(h.indices), last(h.last_page_len) {
    batch.batch = static_cast<int32_t>(h.last_page_len.size());
    batch.qo_indptr = qo.get();
    batch.indptr = indptr.get();
    batch.indices = indices.get();
    batch.last_page_len = last.get();
  }
  DeviceBuffer<int32_t> qo, indptr, indices, last;
  PagedKvBatch batch;
};

/// n normal(0, 1) floats, as random_floats for n below 2^26. Larger fills (only the batch-64
/// and batch-256 cases of DecodeBandwidthReport: 72M and 288M values, 15 s on one core) are drawn
/// in fixed chunks of 2^20 values, each from its own generator seeded by `rng`, on all cores:
/// the values depend on the seed only, not on the number of threads.
inline std::vector<float> harness_floats(size_t n, std::mt19937& rng) {
  constexpr size_t kParallelFrom = size_t{1} << 26, kChunk = size_t{1} << 20;
  if (n < kParallelFrom) return random_floats(n, rng);
  const size_t chunks = (n + kChunk - 1) / kChunk;
  std::vector<uint32_t> seeds(chunks);
  for (uint32_t& s : seeds) s = static_cast<uint32_t>(rng());
  std::vector<float> v(n);
  std::atomic<size_t> next{0};
  const auto fill = [&] {
    for (size_t c = next++; c < chunks; c = next++) {
      std::mt19937 r(seeds[c]);
      std::normal_distribution<float> dist(0.0f, 1.0f);
      const size_t end = std::min(n, (c + 1) * kChunk);
      for (size_t i = c * kChunk; i < end; ++i) v[i] = dist(r);
    }
  };
  std::vector<std::thread> threads(std::max(1u, std::thread::hardware_concurrency()) - 1);
  for (std::thread& t : threads) t = std::thread(fill);
  fill();
  for (std::thread& t : threads) t.join();
  return v;
}

/// Bytes of one cache row of head_dim values of `type` (CPU and GPU pools alike:
/// ggml_row_bytes, e.g. 34 per 32 values for Q8_0, 18 for Q4_0).
inline size_t kv_row_bytes(GgmlType type, int32_t head_dim) {
  return static_cast<size_t>(*ggml_row_bytes(type, static_cast<uint64_t>(head_dim)));
}

class AttentionHarness {
 public:
  AttentionHarness(const AttnGeometry& g, std::vector<SeqSpec> seqs, std::mt19937& rng)
      : g_(g), seqs_(std::move(seqs)) {
    shape_.n_head = g.n_head;
    shape_.n_head_kv = g.n_head_kv;
    shape_.head_dim = g.head_dim;
    shape_.scale = 1.0f / std::sqrt(static_cast<float>(g.head_dim));
    // Scattered tables: the pool's blocks (plus a few never used) in random order.
    int32_t pages = 0;
    for (const SeqSpec& s : seqs_)
      pages += s.padding ? 0 : ceil_div(s.pos0 + s.n_new, g.block_size);
    num_blocks_ = pages + 5;
    std::vector<int32_t> perm(num_blocks_);
    std::iota(perm.begin(), perm.end(), 0);
    std::shuffle(perm.begin(), perm.end(), rng);
    int32_t next = 0;
    for (const SeqSpec& s : seqs_) {
      const int32_t n = s.padding ? 0 : ceil_div(s.pos0 + s.n_new, g.block_size);
      tables_.emplace_back(perm.begin() + next, perm.begin() + next + n);
      next += n;
    }
    for (int stage = 0; stage < 2; ++stage) {
      csr_[stage] = make_csr(stage);
      const size_t n = static_cast<size_t>(csr_[stage].n_rows) * kv_dim();
      k_[stage] = harness_floats(n, rng);
      v_[stage] = harness_floats(n, rng);
    }
    q_ = random_floats(static_cast<size_t>(csr_[1].n_rows) * q_dim(), rng);
  }

  const AttentionShape& shape() const { return shape_; }
  const AttnGeometry& geometry() const { return g_; }
  const HostCsr& csr(int stage) const { return csr_[stage]; }
  const std::vector<float>& k(int stage) const { return k_[stage]; }
  const std::vector<float>& v(int stage) const { return v_[stage]; }
  const std::vector<float>& q() const { return q_; }
  /// K/V inputs of stage `stage`, for tests that plant special values (keep the sizes).
  std::vector<float>& mutable_k(int stage) { return k_[stage]; }
  std::vector<float>& mutable_v(int stage) { return v_[stage]; }
  int64_t kv_dim() const { return static_cast<int64_t>(g_.n_head_kv) * g_.head_dim; }
  int64_t q_dim() const { return static_cast<int64_t>(g_.n_head) * g_.head_dim; }
  /// Bytes of one K (or V) pool of `type`.
  size_t pool_bytes(GgmlType type) const {
    return static_cast<size_t>(num_blocks_) * g_.n_head_kv * g_.block_size *
           kv_row_bytes(type, g_.head_dim);
  }

  /// The CPU's view of stage `stage` (padding sequences left out; with `every` > 1, only
  /// sequences i with i % every == 0).
  std::vector<AttentionSeq> cpu_seqs(int stage, void* k_pool, void* v_pool, GgmlType type,
                                     int32_t every = 1) const {
    std::vector<AttentionSeq> out;
    for (size_t i = 0; i < seqs_.size(); ++i) {
      if (seqs_[i].padding || i % static_cast<size_t>(every) != 0) continue;
      AttentionSeq a;
      a.row_begin = csr_[stage].qo_indptr[i];
      a.n_new = stage == 0 ? seqs_[i].pos0 : seqs_[i].n_new;
      a.pos0 = stage == 0 ? 0 : seqs_[i].pos0;
      a.kv = KvLayerView{
          k_pool,        v_pool, tables_[i].data(), static_cast<int32_t>(tables_[i].size()),
          g_.block_size, type};
      out.push_back(a);
    }
    return out;
  }

  /// The CPU backend's plan of a step over `seqs` (layer 0 only).
  AttentionStep cpu_step(const std::vector<AttentionSeq>& seqs) const {
    AttentionStep step{seqs.data(), static_cast<int32_t>(seqs.size()), 0, 0, shape_};
    for (const AttentionSeq& s : seqs) {
      step.n_rows += s.n_new;
      step.max_new = std::max(step.max_new, s.n_new);
    }
    return step;
  }

  /// CPU reference: both stores, then attention of the new rows. Pools and output on the host.
  /// `every` > 1 computes only sequences i with i % every == 0 (the others' blocks and output
  /// rows stay zero), for batches too large to check whole on the CPU.
  struct CpuRun {
    std::vector<uint8_t> k_pool, v_pool;
    std::vector<float> out;
  };
  CpuRun run_cpu(CpuBackend& cpu, GgmlType type, int32_t every = 1) const {
    CpuRun r{std::vector<uint8_t>(pool_bytes(type)), std::vector<uint8_t>(pool_bytes(type)),
             std::vector<float>(static_cast<size_t>(csr_[1].n_rows) * q_dim(), 0.0f)};
    for (int stage = 0; stage < 2; ++stage) {
      const auto seqs = cpu_seqs(stage, r.k_pool.data(), r.v_pool.data(), type, every);
      EXPECT_TRUE(cpu.plan_attention(cpu_step(seqs)).ok());
      EXPECT_TRUE(cpu.store_kv(k_[stage].data(), v_[stage].data(), 0).ok());
      if (stage == 1) EXPECT_TRUE(cpu.attention(q_.data(), 0, r.out.data()).ok());
    }
    return r;
  }

  /// The device cache after both stores (gpu::store_kv), with the step's CSR and q uploaded.
  struct GpuRun {
    GpuRun(const AttentionHarness& h, GgmlType type)
        : k_pool(h.pool_bytes(type)), v_pool(h.pool_bytes(type)), csr(h.csr(1)), q(h.q()) {
      layer.k = k_pool.get();
      layer.v = v_pool.get();
      layer.type = type;
      layer.block_size = h.geometry().block_size;
    }
    DeviceBuffer<uint8_t> k_pool, v_pool;
    DeviceCsr csr;
    DeviceBuffer<float> q;
    PagedKvLayer layer;
  };
  std::unique_ptr<GpuRun> store_gpu(GgmlType type, cudaStream_t stream) const {
    auto run = std::make_unique<GpuRun>(*this, type);
    for (int stage = 0; stage < 2; ++stage) {
      DeviceCsr csr(csr_[stage]);
      DeviceBuffer<float> k(k_[stage]), v(v_[stage]);
      const Status st = store_kv(k.get(), v.get(), csr_[stage].n_rows, run->layer, csr.batch,
                                 shape_, nullptr, stream);
      EXPECT_TRUE(st.ok()) << st.error().message;
      EXPECT_EQ(cudaStreamSynchronize(stream), cudaSuccess);  // before the inputs are freed
    }
    return run;
  }

 private:
  static int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

  // Stage 0 holds the history rows (kv_len = pos0), stage 1 the new rows (kv_len = pos0 + n_new).
  HostCsr make_csr(int stage) const {
    HostCsr c;
    for (size_t i = 0; i < seqs_.size(); ++i) {
      const SeqSpec& s = seqs_[i];
      const int32_t kv_len = s.padding ? 0 : stage == 0 ? s.pos0 : s.pos0 + s.n_new;
      const int32_t n_new = s.padding ? (stage == 0 ? 0 : 1) : stage == 0 ? s.pos0 : s.n_new;
      const int32_t pages = ceil_div(kv_len, g_.block_size);
      c.indices.insert(c.indices.end(), tables_[i].begin(), tables_[i].begin() + pages);
      c.indptr.push_back(static_cast<int32_t>(c.indices.size()));
      // No pages: kv_len = -block_size + 0 < 0, a padding sequence.
      c.last_page_len.push_back(pages == 0 ? 0 : kv_len - (pages - 1) * g_.block_size);
      c.n_rows += n_new;
      c.qo_indptr.push_back(static_cast<int32_t>(c.n_rows));
      c.max_new = std::max(c.max_new, n_new);
    }
    return c;
  }

  AttnGeometry g_;
  std::vector<SeqSpec> seqs_;
  AttentionShape shape_;
  int32_t num_blocks_ = 0;
  std::vector<std::vector<int32_t>> tables_;
  HostCsr csr_[2];
  std::vector<float> k_[2], v_[2], q_;
};

}  // namespace novaserve::gpu::test
