// Writes a step's new K/V rows into the paged cache, optionally rotating K by RoPE on the way
// (one pass over K instead of a rope kernel plus a copy).
#include "backend/gpu/attention_ops.h"
#include "backend/gpu/gpu_status.h"
#include "backend/gpu/kv_access.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int64_t kMaxBlocks = 65535;  // grid-stride beyond this many rows

struct StoreArgs {
  const float* k;
  const float* v;
  int64_t n_rows;
  PagedKvLayer kv;
  PagedKvBatch b;
  int32_t n_head_kv;
  int32_t head_dim;
  StoreKvRope rope;  // table == nullptr: no rotation
};

// Sequence of row r: the largest i with qo_indptr[i] <= r. Empty sequences share their
// qo_indptr value with the next one, so the largest such i is the one that owns r.
__device__ int32_t sequence_of_row(const PagedKvBatch& b, int64_t r) {
  int32_t lo = 0, hi = b.batch - 1;
  while (lo < hi) {
    const int32_t mid = (lo + hi + 1) / 2;
    if (b.qo_indptr[mid] <= r) {
      lo = mid;
    } else {
      hi = mid - 1;
    }
  }
  return lo;
}

// Element d of a K head after RoPE (cpu::rope_row: a = x0 c - x1 s, b = x0 s + x1 c for the pair
// (2i, 2i+1) or (i, i + n_rot/2)), with the CPU's roundings made explicit.
__device__ float rope_element(const float* head, int32_t d, const float* table,
                              const StoreKvRope& rope) {
  if (d >= rope.n_rot) return head[d];
  const int32_t half = rope.n_rot / 2;
  const bool neox = rope.ordering == RopeOrdering::kNeox;
  const int32_t i = neox ? d % half : d / 2;
  const bool first = neox ? d < half : d % 2 == 0;
  const int32_t partner = neox ? (first ? d + half : d - half) : (first ? d + 1 : d - 1);
  const float x0 = first ? head[d] : head[partner];
  const float x1 = first ? head[partner] : head[d];
  const float c = table[i], s = table[half + i];
  return first ? __fsub_rn(__fmul_rn(x0, c), __fmul_rn(x1, s))
               : __fadd_rn(__fmul_rn(x0, s), __fmul_rn(x1, c));
}

template <typename T>
__global__ void store_kv_kernel(StoreArgs a) {
  const int32_t kv_dim = a.n_head_kv * a.head_dim;
  T* k_pool = static_cast<T*>(a.kv.k);
  T* v_pool = static_cast<T*>(a.kv.v);
  for (int64_t r = blockIdx.x; r < a.n_rows; r += gridDim.x) {
    const int32_t seq = sequence_of_row(a.b, r);
    const int32_t kv_len = a.b.kv_len(seq, a.kv.block_size);
    const int32_t pos = kv_len - a.b.n_new(seq) + static_cast<int32_t>(r - a.b.qo_indptr[seq]);
    if (kv_len <= 0 || pos < 0) continue;  // padding, or more rows than positions
    const float* k_row = a.k + r * kv_dim;
    const float* v_row = a.v + r * kv_dim;
    const float* table = a.rope.table != nullptr ? a.rope.table + r * a.rope.n_rot : nullptr;
    for (int32_t e = threadIdx.x; e < kv_dim; e += blockDim.x) {
      const int32_t h = e / a.head_dim, d = e % a.head_dim;
      const int64_t dst =
          kv_row_offset(a.b, seq, pos, h, a.n_head_kv, a.kv.block_size, a.head_dim) + d;
      const float kx =
          table != nullptr ? rope_element(k_row + h * a.head_dim, d, table, a.rope) : k_row[e];
      kv_store(k_pool + dst, kx);
      kv_store(v_pool + dst, v_row[e]);
    }
  }
}

}  // namespace

Status store_kv(const float* k, const float* v, int64_t n_rows, const PagedKvLayer& kv,
                const PagedKvBatch& batch, const AttentionShape& shape, const StoreKvRope* rope,
                cudaStream_t stream) {
  NOVASERVE_RETURN_IF_ERROR(check_paged_attention("store_kv", kv, batch, shape));
  if (n_rows < 0) return Err(ErrorCode::kInvalidInput, "gpu::store_kv: negative row count");
  if (rope != nullptr && (rope->table == nullptr || rope->n_rot < 0 || rope->n_rot % 2 != 0 ||
                          rope->n_rot > shape.head_dim)) {
    return Err(ErrorCode::kInvalidInput,
               "gpu::store_kv: RoPE needs a table and an even n_rot <= head_dim");
  }
  if (n_rows == 0 || batch.batch == 0) return {};
  StoreArgs args{k, v, n_rows, kv, batch, shape.n_head_kv, shape.head_dim, StoreKvRope{}};
  if (rope != nullptr && rope->n_rot > 0) args.rope = *rope;
  const unsigned blocks = static_cast<unsigned>(n_rows < kMaxBlocks ? n_rows : kMaxBlocks);
  if (kv.type == GgmlType::kF32) {
    store_kv_kernel<float><<<blocks, kThreads, 0, stream>>>(args);
  } else {
    store_kv_kernel<__half><<<blocks, kThreads, 0, stream>>>(args);
  }
  return launch_status("store_kv_kernel");
}

}  // namespace novaserve::gpu
