// Causal prefill attention over the paged cache: the dispatch of gpu::prefill_attention between
// the tensor-core kernel (F16 caches, prefill_attention_mma_gpu.cu) and the f32 SIMT kernel below
// (every cache type), and the SIMT kernel itself, tiled as in FlashAttention (Dao et al. 2022)
// with the online softmax of Milakov & Gimelshein 2018.
//
// A thread block owns kRows query rows of one query head of one sequence. It walks the keys
// 0 .. (its last row's position) in tiles of kKeys positions gathered from the paged cache into
// shared memory (converted or dequantized to f32), first K, then V in the same buffer:
//   S = Q K^T for the tile (each thread: one row, kKeys / kThreadsPerRow columns), causal mask,
//   running max m and sum l per row (the row's kThreadsPerRow threads are adjacent lanes and
//   reduce with two shuffles), P = 2^(S - m) to shared memory, then O = O * 2^(m_old - m) + P V
//   (each thread: one row, D / kThreadsPerRow dims). Scores are in the log2 domain (q
//   pre-multiplied by scale * log2(e)).
// Quantized caches are dequantized with the CPU's arithmetic and every sum is in f32, so this
// kernel is the one that matches the CPU to f32 rounding on any cache type; it also serves HIP.
#include <cmath>

#include "backend/gpu/kernels/attention_ops.h"
#include "backend/gpu/kernels/kv_access.h"
#include "backend/gpu/kernels/prefill_attention_mma.h"
#include "backend/gpu/platform/gpu_status.h"

namespace novaserve::gpu {
namespace {

constexpr int kThreads = 128;
constexpr int kRows = 32;  // query rows per block
constexpr int kKeys = 32;  // key positions per tile
constexpr int kThreadsPerRow = kThreads / kRows;
constexpr int kColsPerThread = kKeys / kThreadsPerRow;
static_assert(kThreads % kRows == 0 && kKeys % kThreadsPerRow == 0, "tile shape");
// A row's threads must be adjacent lanes of one warp for the shuffle reductions.
static_assert(kWarpSize % kThreadsPerRow == 0 && (kThreadsPerRow & (kThreadsPerRow - 1)) == 0,
              "row teams");

struct PrefillArgs {
  const float* q;
  float* out;
  PagedKvLayer kv;
  PagedKvBatch b;
  int32_t n_head;
  int32_t n_head_kv;
  int32_t group;  // query heads per KV head
  float scale_log2;
};

// Gathers kKeys rows (positions j0 ..) of KV head kvh into tile[kKeys][D + 1] as f32; positions
// at or after `end` read as zero.
template <int D, GgmlType T>
__device__ void load_tile(const uint8_t* pool, const PrefillArgs& a, int32_t seq, int32_t kvh,
                          int32_t j0, int32_t end, float (*tile)[D + 1]) {
  constexpr int kVecsPerRow = D / 4;
  for (int e = threadIdx.x; e < kKeys * kVecsPerRow; e += kThreads) {
    const int c = e / kVecsPerRow, d = (e % kVecsPerRow) * 4;
    float x[4] = {};
    if (j0 + c < end) {
      const int64_t row = kv_row_index(a.b, seq, j0 + c, kvh, a.n_head_kv, a.kv.block_size);
      kv_load<T>(pool + row * kKvRowBytes<T, D>, d, x);
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) tile[c][d + i] = x[i];
  }
}

template <int D, GgmlType T>
__global__ void __launch_bounds__(kThreads) prefill_kernel(PrefillArgs a) {
  constexpr int kDimsPerThread = D / kThreadsPerRow;
  __shared__ float s_q[kRows][D + 1];  // +1: rows of a warp land in different banks
  __shared__ float s_kv[kKeys][D + 1];
  __shared__ float s_p[kRows][kKeys + 1];

  const int32_t seq = blockIdx.z;
  const int32_t h = blockIdx.y;
  const int32_t kvh = h / a.group;
  const int32_t n_new = a.b.n_new(seq);
  const int32_t kv_len = a.b.kv_len(seq, a.kv.block_size);
  const int32_t pos0 = kv_len - n_new;
  const int64_t q_dim = static_cast<int64_t>(a.n_head) * D;
  const int tid = threadIdx.x;
  const int r = tid / kThreadsPerRow;  // this thread's query row within the tile
  const int c4 = tid % kThreadsPerRow;
  const auto* k_pool = static_cast<const uint8_t*>(a.kv.k);
  const auto* v_pool = static_cast<const uint8_t*>(a.kv.v);

  for (int32_t tile = blockIdx.x; tile * kRows < n_new; tile += gridDim.x) {
    const int64_t row0 = a.b.qo_indptr[seq] + static_cast<int64_t>(tile) * kRows;
    const int32_t rows_here = min(kRows, n_new - tile * kRows);
    if (pos0 < 0) {  // padding, or more rows than cached positions: zeros, as documented
      for (int e = tid; e < rows_here * D; e += kThreads) {
        a.out[(row0 + e / D) * q_dim + h * D + e % D] = 0.0f;
      }
      continue;
    }
    __syncthreads();  // the previous row tile is done with s_q
    for (int e = tid; e < kRows * D; e += kThreads) {
      const int rr = e / D, d = e % D;
      s_q[rr][d] = rr < rows_here ? a.q[(row0 + rr) * q_dim + h * D + d] * a.scale_log2 : 0.0f;
    }
    // Rows past the end of the sequence reuse the last row's position, so every row sees key 0
    // and the running max is finite after the first tile; their outputs are not written.
    const int32_t my_pos = pos0 + tile * kRows + min(r, rows_here - 1);
    const int32_t end = pos0 + tile * kRows + rows_here;  // keys of the tile's last row + 1
    float m = -INFINITY, l = 0.0f;
    float acc[kDimsPerThread] = {};

    for (int32_t j0 = 0; j0 < end; j0 += kKeys) {
      __syncthreads();  // s_q written / the previous key tile's V and P consumed
      load_tile<D, T>(k_pool, a, seq, kvh, j0, end, s_kv);
      __syncthreads();
      float s[kColsPerThread];
      float mx = -INFINITY;
#pragma unroll
      for (int jj = 0; jj < kColsPerThread; ++jj) {
        const int c = c4 + kThreadsPerRow * jj;
        float dot = 0.0f;
#pragma unroll 16
        for (int d = 0; d < D; ++d) dot = fmaf(s_q[r][d], s_kv[c][d], dot);
        s[jj] = j0 + c <= my_pos ? dot : -INFINITY;
        mx = fmaxf(mx, s[jj]);
      }
#pragma unroll
      for (int msk = kThreadsPerRow / 2; msk > 0; msk /= 2) mx = fmaxf(mx, warp_shfl_xor(mx, msk));
      const float m_new = fmaxf(m, mx);
      float sum = 0.0f;
#pragma unroll
      for (int jj = 0; jj < kColsPerThread; ++jj) {
        const float p = exp2f(s[jj] - m_new);
        s_p[r][c4 + kThreadsPerRow * jj] = p;
        sum += p;
      }
#pragma unroll
      for (int msk = kThreadsPerRow / 2; msk > 0; msk /= 2) sum += warp_shfl_xor(sum, msk);
      const float alpha = exp2f(m - m_new);  // 0 on the first tile (m = -inf)
      l = l * alpha + sum;
      m = m_new;
      __syncthreads();  // all scores read K; P complete
      load_tile<D, T>(v_pool, a, seq, kvh, j0, end, s_kv);
      __syncthreads();
#pragma unroll
      for (int k = 0; k < kDimsPerThread; ++k) acc[k] *= alpha;
#pragma unroll 4
      for (int c = 0; c < kKeys; ++c) {
        const float p = s_p[r][c];
#pragma unroll
        for (int k = 0; k < kDimsPerThread; ++k) {
          acc[k] = fmaf(p, s_kv[c][c4 + kThreadsPerRow * k], acc[k]);
        }
      }
    }
    if (r < rows_here) {
      const float inv_l = 1.0f / l;
      float* o = a.out + (row0 + r) * q_dim + h * D;
#pragma unroll
      for (int k = 0; k < kDimsPerThread; ++k) o[c4 + kThreadsPerRow * k] = acc[k] * inv_l;
    }
  }
}

}  // namespace

Status check_prefill_attention(const PagedKvLayer& kv, const PagedKvBatch& batch,
                               const AttentionShape& shape, int32_t max_new_per_seq) {
  NOVASERVE_RETURN_IF_ERROR(check_paged_attention("prefill_attention", kv, batch, shape));
  if (max_new_per_seq < 1) {
    return Err(ErrorCode::kInvalidInput, "gpu::prefill_attention: max_new_per_seq must be >= 1");
  }
  if (shape.n_head > 65535) {
    return Err(ErrorCode::kInvalidInput, "gpu::prefill_attention: n_head over 65535");
  }
  return {};
}

Status prefill_attention_simt(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                              const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                              cudaStream_t stream) {
  NOVASERVE_RETURN_IF_ERROR(check_prefill_attention(kv, batch, shape, max_new_per_seq));
  if (batch.batch == 0) return {};
  const PrefillArgs args{q,
                         out,
                         kv,
                         batch,
                         shape.n_head,
                         shape.n_head_kv,
                         shape.n_head / shape.n_head_kv,
                         shape.scale * kLog2e};
  const int32_t row_tiles = (max_new_per_seq + kRows - 1) / kRows;
  const dim3 grid(static_cast<unsigned>(row_tiles), static_cast<unsigned>(shape.n_head),
                  static_cast<unsigned>(batch.batch));
  dispatch_kv(kv.type, shape.head_dim, [&](auto dim, auto type) {
    prefill_kernel<decltype(dim)::value, decltype(type)::value>
        <<<grid, kThreads, 0, stream>>>(args);
  });
  return launch_status("prefill_attention_kernel");
}

Status prefill_attention(const float* q, const PagedKvLayer& kv, const PagedKvBatch& batch,
                         const AttentionShape& shape, int32_t max_new_per_seq, float* out,
                         cudaStream_t stream) {
  // Checked before the device query, so bad arguments and empty batches need no GPU.
  NOVASERVE_RETURN_IF_ERROR(check_prefill_attention(kv, batch, shape, max_new_per_seq));
  if (batch.batch == 0) return {};
  if (attention_mma_enabled() && prefill_attention_mma_supported(kv.type, shape.head_dim)) {
    return prefill_attention_mma(q, kv, batch, shape, max_new_per_seq, out, stream);
  }
  return prefill_attention_simt(q, kv, batch, shape, max_new_per_seq, out, stream);
}

}  // namespace novaserve::gpu
