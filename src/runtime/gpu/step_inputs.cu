#include <algorithm>

#include "backend/gpu/platform/gpu_status.h"
#include "runtime/gpu/step_inputs.h"

namespace novaserve::gpu {

Result<bool> StepInputs::reserve(int64_t max_rows, int64_t max_seqs, int64_t max_pages) {
  if (max_rows <= max_rows_ && max_seqs <= max_seqs_ && max_pages <= max_pages_) return false;
  max_rows_ = std::max(max_rows, max_rows_);
  max_seqs_ = std::max(max_seqs, max_seqs_);
  max_pages_ = std::max(max_pages, max_pages_);
  // Layout: the arrays every step copies come first, the block-table indices (the only long,
  // variable-length one) last, so upload() copies up to the end of the indices in use.
  off_ids_ = 0;
  off_pos_ = off_ids_ + max_rows_;
  off_logit_rows_ = off_pos_ + max_rows_;
  off_qo_ = off_logit_rows_ + max_rows_;
  off_indptr_ = off_qo_ + max_seqs_ + 1;
  off_last_ = off_indptr_ + max_seqs_ + 1;
  off_seq_logit_row_ = off_last_ + max_seqs_;
  off_indices_ = off_seq_logit_row_ + max_seqs_;
  const auto bytes = static_cast<size_t>(off_indices_ + max_pages_) * sizeof(int32_t);
  NOVASERVE_RETURN_IF_ERROR(pinned_.reset(bytes, "step inputs (pinned)"));
  NOVASERVE_RETURN_IF_ERROR(device_.reset(bytes, "step inputs"));
  return true;
}

void StepInputs::build(std::span<const ForwardSeq> seqs, int32_t pad_to, int32_t block_size) {
  const auto n_real = static_cast<int32_t>(seqs.size());
  n_seqs_ = std::max(n_real, pad_to);
  int32_t* ids = host(off_ids_);
  int32_t* pos = host(off_pos_);
  int32_t* logit_rows = host(off_logit_rows_);
  int32_t* qo = host(off_qo_);
  int32_t* indptr = host(off_indptr_);
  int32_t* last = host(off_last_);
  int32_t* seq_logit_row = host(off_seq_logit_row_);
  int32_t* indices = host(off_indices_);
  int32_t row = 0, logit_row = 0, page = 0;
  max_new_ = 0;
  qo[0] = 0;
  indptr[0] = 0;
  for (int32_t s = 0; s < n_seqs_; ++s) {
    seq_logit_row[s] = logit_row;
    if (s >= n_real) {  // padding: one row of token 0 at position 0, no pages
      ids[row] = 0;
      pos[row] = 0;
      logit_rows[logit_row++] = row++;
      qo[s + 1] = row;
      indptr[s + 1] = page;
      last[s] = 0;  // kv_len = -block_size: skipped by the kernels
      max_new_ = std::max(max_new_, 1);
      continue;
    }
    const ForwardSeq& f = seqs[s];
    const auto n = static_cast<int32_t>(f.tokens.size());
    for (int32_t i = 0; i < n; ++i) {
      ids[row + i] = f.tokens[i];
      pos[row + i] = f.pos0 + i;
      if (f.all_logits || i == n - 1) logit_rows[logit_row++] = row + i;
    }
    row += n;
    qo[s + 1] = row;
    const int32_t kv_len = f.pos0 + n;
    const int32_t pages = (kv_len + block_size - 1) / block_size;
    for (int32_t p = 0; p < pages; ++p) indices[page + p] = f.kv.block_table[p];
    page += pages;
    indptr[s + 1] = page;
    last[s] = kv_len - (pages - 1) * block_size;
    max_new_ = std::max(max_new_, n);
  }
  n_rows_ = row;
  n_logit_rows_ = logit_row;
  n_pages_ = page;
}

Status StepInputs::upload(cudaStream_t stream) {
  const auto bytes = static_cast<size_t>(off_indices_ + n_pages_) * sizeof(int32_t);
  return gpu_status(
      cudaMemcpyAsync(device_.get(), pinned_.get(), bytes, cudaMemcpyHostToDevice, stream),
      "step inputs upload");
}

PagedKvBatch StepInputs::batch() const {
  return PagedKvBatch{n_seqs_, dev(off_qo_), dev(off_indptr_), dev(off_indices_), dev(off_last_)};
}

}  // namespace novaserve::gpu
