// The built-in request mixes of `novaserve loadgen`.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "loadgen/prompt_text.h"

namespace novaserve {

enum class WorkloadKind {
  kFixed,    ///< every prompt --prompt-tokens long, every output --output-tokens
  kFinQa,    ///< shared 1024-token report + unique 64-256-token question; 16-128 output tokens
  kChatMix,  ///< prompts 16-2048 and outputs 16-512 tokens, both log-uniform
};

/// "fixed", "fin-qa", "chat-mix". Errors: kInvalidInput naming the accepted names.
Result<WorkloadKind> parse_workload_kind(std::string_view name);
const char* workload_name(WorkloadKind kind);

struct WorkloadOptions {
  WorkloadKind kind = WorkloadKind::kFixed;
  int32_t prompt_tokens = 128;  ///< fixed only (>= 1)
  int32_t output_tokens = 128;  ///< fixed only (>= 1)
  /// fin-qa only (--prefixes, in [1, 64]): distinct shared reports; request i asks about report
  /// i mod prefixes. Report 0 is the one-report workload's document.
  int32_t prefixes = 1;
  uint64_t seed = 0;
};

/// One request of a workload.
struct RequestSpec {
  std::string prompt;
  int32_t prompt_tokens = 0;  ///< of `prompt`, exact or estimated (PromptText::exact)
  int32_t max_tokens = 0;     ///< sent with ignore_eos, so the server generates exactly this
};

/// A deterministic request generator: request(i) depends only on (options, i, tokenizer), never
/// on the order requests are made in or on how many there are.
class Workload {
 public:
  /// Fin-qa's shared report prefix: this many tokens (estimated or exact like the rest).
  static constexpr int32_t kFinQaPrefixTokens = 1024;

  /// `text` decides how token lengths are made (estimates or exact); it is copied.
  /// Errors: kInvalidInput for fixed lengths < 1 or > 1,000,000, or fin-qa prefixes outside
  /// [1, 64].
  static Result<Workload> create(const WorkloadOptions& options, const PromptText& text);

  RequestSpec request(uint64_t index) const;

  const WorkloadOptions& options() const { return options_; }
  /// One line for reports, e.g. "fin-qa: shared 1024-token prefix + 64-256-token question, ...".
  std::string describe() const;
  /// Fin-qa's shared prefix text of report `k` < options().prefixes (empty for other
  /// workloads).
  const std::string& shared_prefix(int32_t k = 0) const { return prefixes_[k]; }

 private:
  Workload(WorkloadOptions options, PromptText text) : options_(options), text_(text) {}

  WorkloadOptions options_;
  PromptText text_;
  std::vector<std::string> prefixes_{std::string()};  // fin-qa's reports
  int32_t prefix_tokens_ = 0;                         // of report 0
};

}  // namespace novaserve
