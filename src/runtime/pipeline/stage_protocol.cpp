#include "runtime/pipeline/stage_protocol.h"

#include <cstring>

namespace novaserve {
namespace {

constexpr int kPlanFields = 9;  // PlanSeq's fields, in the header's per-sequence arrays

template <typename T>
void append_bytes(std::vector<uint8_t>& out, std::span<const T> values) {
  const auto* p = reinterpret_cast<const uint8_t*>(values.data());
  out.insert(out.end(), p, p + values.size_bytes());
}

template <typename T>
void take_bytes(const std::vector<uint8_t>& in, size_t& offset, std::vector<T>& out) {
  std::memcpy(out.data(), in.data() + offset, out.size() * sizeof(T));
  offset += out.size() * sizeof(T);
}

Error bad_plan(const std::string& why) {
  return Err(ErrorCode::kInvalidInput, "bad forward command: " + why);
}

}  // namespace

RankMessage encode_step(std::span<const ForwardSeq> seqs, std::span<const int32_t> pools,
                        ActQuant mode, std::span<const float> hidden, const char* op) {
  RankMessage m;
  nlohmann::json plan = nlohmann::json::array();
  int64_t rows = 0;
  for (size_t i = 0; i < seqs.size(); ++i) {
    const ForwardSeq& s = seqs[i];
    plan.push_back({static_cast<int64_t>(s.tokens.size()), s.pos0, pools[i], s.kv.n_blocks,
                    s.kv.block_size, static_cast<int32_t>(s.kv.type), s.kv.layer_stride,
                    s.all_logits, s.greedy});
    rows += static_cast<int64_t>(s.tokens.size());
  }
  m.header = {{"op", op}, {"mode", static_cast<int>(mode)}, {"rows", rows}, {"seqs", plan}};
  for (const ForwardSeq& s : seqs) append_bytes(m.payload, s.tokens);
  for (const ForwardSeq& s : seqs) {
    append_bytes(m.payload,
                 std::span<const int32_t>(s.kv.block_table, static_cast<size_t>(s.kv.n_blocks)));
  }
  append_bytes(m.payload, hidden);
  return m;
}

Result<StepPlan> decode_step(const RankMessage& m, int64_t n_embd) {
  const nlohmann::json& h = m.header;
  const std::optional<int64_t> mode = header_int(h, "mode");
  const std::optional<int64_t> rows = header_int(h, "rows");
  const auto seqs = h.find("seqs");
  if (!mode ||
      (*mode != static_cast<int>(ActQuant::kNone) && *mode != static_cast<int>(ActQuant::kQ8))) {
    return bad_plan("mode");
  }
  if (!rows || *rows < 1 || seqs == h.end() || !seqs->is_array() || seqs->empty()) {
    return bad_plan("no rows or no sequences");
  }
  StepPlan plan;
  plan.mode = static_cast<ActQuant>(*mode);
  int64_t n_rows = 0;
  int64_t n_blocks = 0;
  for (const nlohmann::json& s : *seqs) {
    if (!s.is_array() || s.size() != kPlanFields) return bad_plan("a sequence is not 9 fields");
    for (int f = 0; f < 7; ++f) {
      if (!s[f].is_number_integer()) return bad_plan("a sequence field is not an integer");
    }
    if (!s[7].is_boolean() || !s[8].is_boolean()) return bad_plan("a flag is not a boolean");
    PlanSeq p;
    const auto i32 = [&](int f, int32_t lo, int32_t& out) {
      const auto v = s[f].get<int64_t>();
      if (v < lo || v > INT32_MAX) return false;
      out = static_cast<int32_t>(v);
      return true;
    };
    if (!i32(0, 1, p.n_tokens) || !i32(1, 0, p.pos0) || !i32(2, 0, p.pool) ||
        !i32(3, 0, p.n_blocks) || !i32(4, 1, p.block_size) || !i32(5, 0, p.kv_type)) {
      return bad_plan("a sequence field is out of range");
    }
    p.layer_stride = s[6].get<int64_t>();
    if (p.layer_stride <= 0) return bad_plan("a layer stride is not positive");
    p.all_logits = s[7].get<bool>();
    p.greedy = s[8].get<bool>();
    n_rows += p.n_tokens;
    n_blocks += p.n_blocks;
    // Bounds the size arithmetic below; a real step is far smaller (the payload limit).
    if (n_rows > (int64_t{1} << 32) || n_blocks > (int64_t{1} << 32)) return bad_plan("too big");
    plan.seqs.push_back(p);
  }
  if (n_rows != *rows) return bad_plan("the sequences' tokens do not add up to rows");
  const bool with_hidden = header_string(h, "op") != kStepOp;
  const uint64_t want = static_cast<uint64_t>(n_rows + n_blocks) * sizeof(int32_t) +
                        (with_hidden ? static_cast<uint64_t>(n_rows * n_embd) * sizeof(float) : 0);
  if (m.payload.size() != want) {
    return bad_plan("payload of " + std::to_string(m.payload.size()) + " bytes, expected " +
                    std::to_string(want));
  }
  plan.tokens.resize(static_cast<size_t>(n_rows));
  plan.blocks.resize(static_cast<size_t>(n_blocks));
  if (with_hidden) plan.hidden.resize(static_cast<size_t>(n_rows * n_embd));
  size_t offset = 0;
  take_bytes(m.payload, offset, plan.tokens);
  take_bytes(m.payload, offset, plan.blocks);
  take_bytes(m.payload, offset, plan.hidden);
  return plan;
}

nlohmann::json error_answer(const Error& e) {
  return {{"op", "error"}, {"code", static_cast<int>(e.code)}, {"error", e.message}};
}

Status answer_status(const RankMessage& m, const std::string& who) {
  const std::string op = header_string(m.header, "op");
  if (op == "ok") return {};
  if (op == "error") {
    const int64_t code = header_int(m.header, "code").value_or(-1);
    const bool known = code >= 0 && code <= static_cast<int64_t>(ErrorCode::kInternal);
    return Err(known ? static_cast<ErrorCode>(code) : ErrorCode::kInternal,
               who + ": " + header_string(m.header, "error"));
  }
  return Err(ErrorCode::kIo, who + " answered '" + op + "', not ok or error");
}

}  // namespace novaserve
