#include "loadgen/workload.h"

#include <algorithm>

namespace novaserve {
namespace {

// The fin-qa report is the same document in every run and with every --seed, so results of
// different runs and servers share one prefix.
constexpr uint64_t kReportSeed = 0x66696e2d7161ull;  // "fin-qa"
constexpr const char* kReportIntro =
    "You are a financial analyst. Answer the question using only the annual report below.\n\n"
    "Annual report\n\n";

}  // namespace

Result<WorkloadKind> parse_workload_kind(std::string_view name) {
  if (name == "fixed") return WorkloadKind::kFixed;
  if (name == "fin-qa") return WorkloadKind::kFinQa;
  if (name == "chat-mix") return WorkloadKind::kChatMix;
  return Err(ErrorCode::kInvalidInput,
             "unknown workload '" + std::string(name) + "' (use fixed, fin-qa or chat-mix)");
}

const char* workload_name(WorkloadKind kind) {
  switch (kind) {
    case WorkloadKind::kFixed:
      return "fixed";
    case WorkloadKind::kFinQa:
      return "fin-qa";
    case WorkloadKind::kChatMix:
      return "chat-mix";
  }
  return "?";
}

Result<Workload> Workload::create(const WorkloadOptions& options, const PromptText& text) {
  constexpr int32_t kMaxLen = 1000000;
  if (options.kind == WorkloadKind::kFixed) {
    if (options.prompt_tokens < 1 || options.prompt_tokens > kMaxLen) {
      return Err(ErrorCode::kInvalidInput, "--prompt-tokens must be in [1, 1000000]");
    }
    if (options.output_tokens < 1 || options.output_tokens > kMaxLen) {
      return Err(ErrorCode::kInvalidInput, "--output-tokens must be in [1, 1000000]");
    }
  }
  if (options.kind == WorkloadKind::kFinQa && (options.prefixes < 1 || options.prefixes > 64)) {
    return Err(ErrorCode::kInvalidInput, "--prefixes must be in [1, 64]");
  }
  Workload w(options, text);
  if (options.kind == WorkloadKind::kFinQa) {
    w.prefixes_.clear();
    for (int32_t k = 0; k < options.prefixes; ++k) {
      // Report 0 is the document of the one-report workload; the others name their company
      // first, so that they share no KV block with it.
      LoadgenRng rng(kReportSeed + static_cast<uint64_t>(k));
      std::string prefix =
          k == 0 ? std::string(kReportIntro)
                 : "Company " + std::to_string(k + 1) + ". " + std::string(kReportIntro);
      prefix += w.text_.prose(rng, kFinQaPrefixTokens - w.text_.count(prefix));
      w.prefixes_.push_back(std::move(prefix));
    }
    w.prefix_tokens_ = w.text_.count(w.prefixes_.front());
  }
  return w;
}

RequestSpec Workload::request(uint64_t index) const {
  LoadgenRng rng(options_.seed, index);
  RequestSpec r;
  switch (options_.kind) {
    case WorkloadKind::kFixed:
      r.prompt = text_.prose(rng, options_.prompt_tokens);
      r.max_tokens = options_.output_tokens;
      break;
    case WorkloadKind::kFinQa: {
      const auto question_tokens = static_cast<int32_t>(rng.uniform_int(64, 256));
      r.max_tokens = static_cast<int32_t>(rng.uniform_int(16, 128));
      // The request number makes every question unique even if two drew the same words.
      const std::string head = "\n\nQuestion " + std::to_string(index + 1) + ":";
      const std::string tail = "?\nAnswer:";
      const int32_t framing = text_.count(head) + text_.count(tail);
      const std::string& prefix = prefixes_[index % prefixes_.size()];
      r.prompt = prefix + head + text_.prose(rng, std::max(1, question_tokens - framing)) + tail;
      break;
    }
    case WorkloadKind::kChatMix:
      r.prompt = text_.prose(rng, static_cast<int32_t>(rng.log_uniform_int(16, 2048)));
      r.max_tokens = static_cast<int32_t>(rng.log_uniform_int(16, 512));
      break;
  }
  r.prompt_tokens = text_.count(r.prompt);
  return r;
}

std::string Workload::describe() const {
  std::string s = workload_name(options_.kind);
  switch (options_.kind) {
    case WorkloadKind::kFixed:
      s += ": " + std::to_string(options_.prompt_tokens) + "-token prompts, " +
           std::to_string(options_.output_tokens) + " output tokens";
      break;
    case WorkloadKind::kFinQa:
      s += ": shared " + std::to_string(prefix_tokens_) + "-token report prefix" +
           (prefixes_.size() > 1
                ? " (" + std::to_string(prefixes_.size()) + " distinct reports, round-robin)"
                : std::string()) +
           " + unique 64-256-token question, 16-128 output tokens";
      break;
    case WorkloadKind::kChatMix:
      s += ": prompts 16-2048 tokens, outputs 16-512 tokens (log-uniform)";
      break;
  }
  s += text_.exact() ? "; token counts exact (--tokenizer-model)"
                     : "; token counts estimated (~1 token per word)";
  return s;
}

}  // namespace novaserve
