// One choice's output pipeline: engine tokens -> incremental detokenizer (UTF-8 safe) -> stop
// strings (hold-back, truncation) -> text deltas plus the tokens' logprobs, released together.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "engine/request.h"
#include "server/stop_matcher.h"
#include "tokenizer/detokenizer.h"

namespace novaserve {

class Tokenizer;

/// A generated token with its log-probabilities, for the logprobs part of a response.
struct TokenEntry {
  int32_t token = 0;
  float logprob = 0.0f;
  std::vector<TokenLogprob> top;
  /// Offset of the token's text in the choice's text, in Unicode code points (what OpenAI's and
  /// vLLM's text_offset count, as Python string indices).
  size_t text_offset = 0;
};

/// What one engine output makes sendable.
struct ChoiceDelta {
  std::string text;                    ///< newly released text; always whole UTF-8 characters
  std::vector<TokenEntry> tokens;      ///< tokens released with it (only when logprobs are on)
  std::optional<FinishReason> finish;  ///< set on the choice's last delta
  std::string error;                   ///< engine message when finish == kError
  std::string error_code;              ///< StepOutput::error_code ("queue_timeout" or empty)
  bool empty() const { return text.empty() && tokens.empty() && !finish; }
};

class ChoiceStream {
 public:
  /// `tokenizer` and `stop` must outlive the stream. `logprobs`: keep TokenEntry records.
  /// `shown_controls`: control tokens whose text is kept in the output (tool-call markers such
  /// as [TOOL_CALLS] or <|python_tag|>, which the tool-call parser reads and removes); other
  /// control tokens produce no text.
  ChoiceStream(const Tokenizer& tokenizer, const StopMatcher& stop, bool logprobs,
               std::vector<int32_t> shown_controls = {});

  /// Feeds one engine output (in order). A token arriving with finish == kStop is the EOG or
  /// stop id that ended the request: it is counted but adds no text and no logprobs entry.
  /// Outputs after the choice finished (the engine has not yet seen a cancel flag) are ignored.
  ChoiceDelta push(const StepOutput& out);

  bool finished() const { return finished_; }
  /// True once a stop string ended the choice: the caller cancels the engine request.
  bool stop_string_matched() const { return stop_matched_; }
  /// All released text, and all released tokens (for non-streamed responses).
  const std::string& text() const { return released_text_; }
  const std::vector<TokenEntry>& tokens() const { return released_tokens_; }
  std::optional<FinishReason> finish_reason() const { return finish_; }
  const std::string& error() const { return error_; }
  /// StepOutput::error_code of the final output ("queue_timeout": refused, not failed).
  const std::string& error_code() const { return error_code_; }
  int32_t prompt_tokens() const { return prompt_tokens_; }
  int32_t completion_tokens() const { return completion_tokens_; }

 private:
  void release(size_t end, ChoiceDelta& d);

  const Tokenizer& tokenizer_;
  const StopMatcher& stop_;
  IncrementalDetokenizer detok_;
  std::vector<int32_t> shown_controls_;
  bool logprobs_;
  std::string text_;        // detokenized text so far (complete characters only)
  size_t code_points_ = 0;  // in text_
  size_t released_ = 0;     // bytes of text_ sent
  struct Pending {
    TokenEntry entry;
    size_t text_end;  // bytes of text_ once this token's text was appended
  };
  std::vector<Pending> pending_;
  std::string released_text_;
  std::vector<TokenEntry> released_tokens_;
  bool finished_ = false;
  bool stop_matched_ = false;
  std::optional<FinishReason> finish_;
  std::string error_;
  std::string error_code_;
  int32_t prompt_tokens_ = 0;
  int32_t completion_tokens_ = 0;
};

}  // namespace novaserve
