// The per-step integer inputs of the GPU forward pass (token ids, positions, the paged-KV CSR
// arrays of paged_kv.h and the logit rows), built on the host in one pinned buffer and copied to
// a device mirror with one asynchronous copy. Every array sits at a fixed offset of both buffers,
// sized by reserve(), so the device addresses never change between steps: a captured decode
// graph reads the next step's inputs from the same places.
#pragma once

#include <cstdint>
#include <span>

#include "backend/gpu/kernels/paged_kv.h"
#include "backend/gpu/platform/device_buffer.h"
#include "backend/gpu/platform/vendor.h"
#include "common/result.h"
#include "model/model_runner.h"

namespace novaserve::gpu {

/// Host-built step inputs with a fixed-address device mirror.
class StepInputs {
 public:
  /// Sizes both buffers for steps of up to `max_rows` token rows, `max_seqs` sequences and
  /// `max_pages` block-table entries in total (reallocating only when a limit grows, which
  /// moves the device arrays: callers then drop graphs that captured the old addresses).
  /// Returns whether the buffers were reallocated. Errors: kInternal (out of memory).
  Result<bool> reserve(int64_t max_rows, int64_t max_seqs, int64_t max_pages);

  /// Fills the host arrays for `seqs` (already validated by check_forward), padded with
  /// `pad_to` - seqs.size() empty sequences (one row each, token 0, no pages: the kernels skip
  /// them) when pad_to > seqs.size(). Logit rows: every row of an all_logits sequence, else its
  /// last row. Requires the limits of reserve() to hold.
  void build(std::span<const ForwardSeq> seqs, int32_t pad_to, int32_t block_size);

  /// Copies the used prefix of the host buffer to the device on `stream`.
  Status upload(cudaStream_t stream);

  int32_t n_seqs() const { return n_seqs_; }  ///< sequences, padding included
  int64_t n_rows() const { return n_rows_; }  ///< token rows, padding included
  int64_t n_logit_rows() const { return n_logit_rows_; }
  int32_t max_new() const { return max_new_; }  ///< largest n_new of the step
  bool decode_only() const { return max_new_ == 1; }

  // Device arrays (fixed addresses until reserve() reallocates).
  const int32_t* ids() const { return dev(off_ids_); }
  const int32_t* pos() const { return dev(off_pos_); }
  const int32_t* logit_rows() const { return dev(off_logit_rows_); }
  /// The CSR view of paged_kv.h for this step.
  PagedKvBatch batch() const;

  // Host arrays of the last build (for the caller's bookkeeping).
  int64_t logit_row_of(int32_t seq) const { return host(off_seq_logit_row_)[seq]; }

 private:
  const int32_t* dev(int64_t off) const { return device_.get<int32_t>() + off; }
  int32_t* host(int64_t off) const { return pinned_.get<int32_t>() + off; }

  PinnedBuffer pinned_;
  DeviceBuffer device_;
  int64_t max_rows_ = 0, max_seqs_ = 0, max_pages_ = 0;
  // Offsets (in int32 elements) of each array in both buffers.
  int64_t off_ids_ = 0, off_pos_ = 0, off_logit_rows_ = 0, off_qo_ = 0, off_indptr_ = 0,
          off_last_ = 0, off_seq_logit_row_ = 0, off_indices_ = 0;
  int32_t n_seqs_ = 0;
  int64_t n_rows_ = 0;
  int64_t n_logit_rows_ = 0;
  int64_t n_pages_ = 0;
  int32_t max_new_ = 0;
};

}  // namespace novaserve::gpu
