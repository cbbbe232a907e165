#include "tokenizer/detokenizer.h"

#include "common/utf8.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {

IncrementalDetokenizer::IncrementalDetokenizer(const Tokenizer& tokenizer, DetokenizeFrom from)
    : tokenizer_(tokenizer), at_text_start_(from == DetokenizeFrom::kSequenceStart) {}

std::string IncrementalDetokenizer::push(int32_t id) {
  pending_ += tokenizer_.sequence_piece(id, &at_text_start_);
  std::string out;
  std::string_view rest = pending_;
  while (!rest.empty()) {
    const utf8::Step st = utf8::next(rest);
    if (st.kind == utf8::Step::kIncomplete) break;
    if (st.kind == utf8::Step::kComplete) {
      out.append(rest.substr(0, st.length));
    } else {
      out.append(utf8::kReplacement);
    }
    rest.remove_prefix(st.length);
  }
  pending_ = std::string(rest);
  return out;
}

std::string IncrementalDetokenizer::flush() {
  if (pending_.empty()) return {};
  pending_.clear();
  return std::string(utf8::kReplacement);
}

}  // namespace novaserve
