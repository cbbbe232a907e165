#include "backend/cpu/matmul.h"

#include <algorithm>
#include <string>
#include <vector>

#include "backend/cpu/act_quant.h"
#include "backend/cpu/cpu_features.h"
#include "backend/cpu/matmul_kernels.h"
#include "common/check.h"

namespace novaserve {
namespace {

using cpu_detail::Kernel;
using cpu_detail::MatmulArgs;

Kernel select_kernel(GgmlType type, ActQuant mode, bool avx2) {
  if (avx2) {
    const Kernel k = mode == ActQuant::kQ8 ? cpu_detail::avx2_q8_kernel(type) : Kernel{};
    if (k.fn != nullptr) return k;
    const Kernel e = cpu_detail::avx2_exact_kernel(type);
    // kQ8 falls back to exact only for types without any integer kernel, so the choice depends
    // on (type, mode, ISA) alone.
    if (e.fn != nullptr && (mode == ActQuant::kNone || !cpu_detail::scalar_kernel(type, mode).q8)) {
      return e;
    }
  }
  return cpu_detail::scalar_kernel(type, mode);
}

// Grow-only scratch for the activation preprocessing of one matmul call. Thread-local because
// several engine replicas may call matmul concurrently with different pools.
struct Scratch {
  std::vector<int8_t> xq;
  std::vector<float> xd, xs, xsum;
};
thread_local Scratch t_scratch;

template <typename T>
T* grow(std::vector<T>& v, int64_t n) {
  if (static_cast<int64_t>(v.size()) < n) v.resize(static_cast<size_t>(n));
  return v.data();
}

}  // namespace

Status matmul_check(GgmlType wtype, int64_t in) {
  const auto traits = ggml_type_traits(static_cast<uint32_t>(wtype));
  if (!traits || cpu_detail::scalar_kernel(wtype, ActQuant::kNone).fn == nullptr) {
    return Err(
        ErrorCode::kUnsupported,
        "matmul: weight type " +
            (traits ? std::string(traits->name) : std::to_string(static_cast<uint32_t>(wtype))) +
            " is not supported on the CPU");
  }
  // Activation-side blocks are 32 wide, so plain float weights need in % 32 == 0 as well.
  const int64_t block = std::max<int64_t>(traits->block_elems, 32);
  if (in <= 0 || in % block != 0) {
    return Err(ErrorCode::kInvalidInput,
               "matmul: in=" + std::to_string(in) + " must be a positive multiple of " +
                   std::to_string(block) + " for " + std::string(traits->name) + " weights");
  }
  return {};
}

void matmul(const void* w, GgmlType wtype, int64_t in, int64_t out, const float* x, int64_t n_rows,
            float* y, ThreadPool& pool, ActQuant mode) {
  const Status st = matmul_check(wtype, in);
  NOVASERVE_CHECK(st.ok()) << st.error().message;
  NOVASERVE_CHECK(out >= 0 && n_rows >= 0) << "out=" << out << " n_rows=" << n_rows;
  if (out == 0 || n_rows == 0) return;

  const bool avx2 = cpu_use_avx2();
  const Kernel k = select_kernel(wtype, mode, avx2);
  NOVASERVE_CHECK(k.fn != nullptr);

  MatmulArgs a{};
  a.wtype = wtype;
  a.w = static_cast<const uint8_t*>(w);
  a.w_row_bytes = static_cast<size_t>(*ggml_row_bytes(wtype, static_cast<uint64_t>(in)));
  a.in = in;
  a.out = out;
  a.x = x;
  a.y = y;
  const int64_t nb32 = in / 32;
  Scratch& s = t_scratch;
  if (k.q8) {
    int8_t* xq = grow(s.xq, n_rows * in);
    float* xd = grow(s.xd, n_rows * nb32);
    float* xs = grow(s.xs, n_rows * nb32);
    // Each row is quantized on its own, so splitting rows over threads changes nothing.
    pool.parallel_for(n_rows, [&](int64_t r, int) {
      quantize_act_q8(x + r * in, in, xq + r * in, xd + r * nb32, xs + r * nb32, avx2);
    });
    a.xq = xq;
    a.xd = xd;
    a.xs = xs;
  }
  if (k.xsum) {
    float* xsum = grow(s.xsum, n_rows * nb32);
    pool.parallel_for(
        n_rows, [&](int64_t r, int) { block_sums_32(x + r * in, in, xsum + r * nb32, avx2); });
    a.xsum = xsum;
  }

  // Column chunks: a multiple of 8 columns (the widest kernel tile), about 4 chunks per thread
  // for load balance. Chunk boundaries only decide which thread computes a column, never how.
  const int64_t target_chunks = static_cast<int64_t>(pool.size()) * 4;
  int64_t chunk = (out + target_chunks - 1) / target_chunks;
  chunk = std::max<int64_t>(8, (chunk + 7) / 8 * 8);
  const int64_t n_chunks = (out + chunk - 1) / chunk;
  pool.parallel_for(n_chunks, [&](int64_t c, int) {
    const int64_t o0 = c * chunk;
    k.fn(a, o0, std::min(out, o0 + chunk), 0, n_rows);
  });
}

}  // namespace novaserve
