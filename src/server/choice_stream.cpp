#include "server/choice_stream.h"

#include <algorithm>

#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

size_t count_code_points(std::string_view s) {
  size_t n = 0;
  for (char c : s) n += (static_cast<uint8_t>(c) & 0xC0) != 0x80;
  return n;
}

}  // namespace

ChoiceStream::ChoiceStream(const Tokenizer& tokenizer, const StopMatcher& stop, bool logprobs,
                           std::vector<int32_t> shown_controls)
    : tokenizer_(tokenizer),
      stop_(stop),
      detok_(tokenizer, DetokenizeFrom::kContinuation),
      shown_controls_(std::move(shown_controls)),
      logprobs_(logprobs) {}

void ChoiceStream::release(size_t end, ChoiceDelta& d) {
  if (end > released_) {
    d.text.assign(text_, released_, end - released_);
    released_text_ += d.text;
    released_ = end;
  }
  size_t n = 0;
  while (n < pending_.size() && pending_[n].text_end <= released_) ++n;
  for (size_t i = 0; i < n; ++i) {
    d.tokens.push_back(pending_[i].entry);
    released_tokens_.push_back(std::move(pending_[i].entry));
  }
  pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
}

ChoiceDelta ChoiceStream::push(const StepOutput& out) {
  ChoiceDelta d;
  if (finished_) return d;
  prompt_tokens_ = out.prompt_tokens;
  completion_tokens_ = out.generated_tokens;
  const bool terminator = out.finish == FinishReason::kStop;
  if (out.token >= 0 && !terminator) {
    TokenEntry e{out.token, out.logprob, out.top_logprobs, code_points_};
    const bool shown = std::find(shown_controls_.begin(), shown_controls_.end(), out.token) !=
                       shown_controls_.end();
    const std::string piece =
        shown ? detok_.flush() + tokenizer_.token_text(out.token) : detok_.push(out.token);
    text_ += piece;
    code_points_ += count_code_points(piece);
    if (logprobs_) pending_.push_back({std::move(e), text_.size()});
  }
  if (out.finish) {
    const std::string tail = detok_.flush();  // U+FFFD for a cut-off final character
    text_ += tail;
    code_points_ += count_code_points(tail);
  }
  const StopMatcher::Scan scan = stop_.scan(text_, released_);
  if (scan.match) {
    text_.resize(*scan.match);
    release(*scan.match, d);
    // The tokens that produced the stop string were generated; report them with the text.
    for (Pending& p : pending_) {
      d.tokens.push_back(p.entry);
      released_tokens_.push_back(std::move(p.entry));
    }
    pending_.clear();
    stop_matched_ = true;
    finished_ = true;
    finish_ = FinishReason::kStop;
    d.finish = finish_;
    return d;
  }
  if (out.finish) {
    release(text_.size(), d);
    finished_ = true;
    finish_ = *out.finish;
    error_ = out.error;
    error_code_ = out.error_code;
    d.finish = finish_;
    d.error = out.error;
    d.error_code = out.error_code;
    return d;
  }
  release(scan.safe_end, d);
  return d;
}

}  // namespace novaserve
