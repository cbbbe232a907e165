// ChoiceStream: engine outputs -> UTF-8-safe deltas, stop-string truncation and hold-back,
// logprobs released with their text, terminator tokens.
#include "server/choice_stream.h"

#include <gtest/gtest.h>

#include "common/utf8.h"
#include "server_test_util.h"

namespace novaserve {
namespace {

using testing::byte_tokenizer;
using testing::kEndToken;

StepOutput token_out(int32_t token, int32_t n, std::optional<FinishReason> finish = {}) {
  StepOutput o;
  o.token = token;
  o.logprob = -1.0f * n;
  o.generated_tokens = n;
  o.prompt_tokens = 3;
  o.finish = finish;
  return o;
}

// Feeds `bytes` one byte token each (the last one with `finish`); returns every delta.
std::vector<ChoiceDelta> feed(ChoiceStream& cs, const std::string& bytes,
                              FinishReason finish = FinishReason::kLength) {
  std::vector<ChoiceDelta> out;
  for (size_t i = 0; i < bytes.size(); ++i) {
    const bool last = i + 1 == bytes.size();
    out.push_back(cs.push(token_out(static_cast<uint8_t>(bytes[i]), static_cast<int32_t>(i + 1),
                                    last ? std::optional<FinishReason>(finish) : std::nullopt)));
    if (cs.finished()) break;
  }
  return out;
}

TEST(ChoiceStream, DeltasNeverEndInsideACharacter) {
  auto tok = byte_tokenizer();
  const StopMatcher none({});
  ChoiceStream cs(*tok, none, false);
  const std::string text = "a\xE4\xBD\xA0\xF0\x9F\xA6\x99z";  // a你🦙z
  std::string joined;
  for (const ChoiceDelta& d : feed(cs, text)) {
    EXPECT_TRUE(utf8::is_valid(d.text)) << "delta ends mid-character";
    joined += d.text;
  }
  EXPECT_EQ(joined, text);
  EXPECT_EQ(cs.text(), text);
  EXPECT_EQ(cs.finish_reason(), FinishReason::kLength);
  EXPECT_EQ(cs.completion_tokens(), static_cast<int32_t>(text.size()));
}

TEST(ChoiceStream, CutOffCharacterAtTheEndBecomesReplacement) {
  auto tok = byte_tokenizer();
  const StopMatcher none({});
  ChoiceStream cs(*tok, none, false);
  feed(cs, "ok\xE4\xBD");
  EXPECT_EQ(cs.text(), "ok" + std::string(utf8::kReplacement));
}

TEST(ChoiceStream, StopStringTruncatesAndIsHeldBackMeanwhile) {
  auto tok = byte_tokenizer();
  const StopMatcher stop({"END"});
  ChoiceStream cs(*tok, stop, false);
  const auto deltas = feed(cs, "abEND-more");
  std::string joined;
  for (const auto& d : deltas) joined += d.text;
  EXPECT_EQ(joined, "ab");
  EXPECT_EQ(cs.text(), "ab");
  EXPECT_TRUE(cs.stop_string_matched());
  EXPECT_EQ(cs.finish_reason(), FinishReason::kStop);
  // "E" and "EN" were held back: after "abE" only "ab" had been released.
  EXPECT_EQ(deltas[2].text, "");
  EXPECT_EQ(deltas[3].text, "");
  ASSERT_TRUE(deltas[4].finish.has_value());
  EXPECT_EQ(cs.completion_tokens(), 5);  // tokens up to the one completing the stop string
  // Later outputs (the engine had not seen the cancel flag yet) change nothing.
  EXPECT_TRUE(cs.push(token_out('x', 6)).empty());
  EXPECT_EQ(cs.text(), "ab");
}

TEST(ChoiceStream, HeldBackPrefixIsReleasedWhenItDoesNotComplete) {
  auto tok = byte_tokenizer();
  const StopMatcher stop({"END"});
  ChoiceStream cs(*tok, stop, false);
  const auto deltas = feed(cs, "aENx");
  EXPECT_EQ(deltas[1].text, "");
  EXPECT_EQ(deltas[2].text, "");
  EXPECT_EQ(deltas[3].text, "ENx");
  EXPECT_EQ(cs.text(), "aENx");
  EXPECT_FALSE(cs.stop_string_matched());
}

TEST(ChoiceStream, PartialStopIsReleasedAtTheEnd) {
  auto tok = byte_tokenizer();
  const StopMatcher stop({"END"});
  ChoiceStream cs(*tok, stop, false);
  feed(cs, "aEN");
  EXPECT_EQ(cs.text(), "aEN");
  EXPECT_EQ(cs.finish_reason(), FinishReason::kLength);
}

TEST(ChoiceStream, MultiByteStopStringMatchesAcrossTokens) {
  auto tok = byte_tokenizer();
  const StopMatcher stop({"\xE5\xA5\xBD"});  // 好
  ChoiceStream cs(*tok, stop, false);
  feed(cs, "\xE4\xBD\xA0\xE5\xA5\xBD!");  // 你好!
  EXPECT_EQ(cs.text(), "\xE4\xBD\xA0");
  EXPECT_TRUE(cs.stop_string_matched());
}

TEST(ChoiceStream, TerminatorTokenAddsNoTextButCounts) {
  auto tok = byte_tokenizer();
  const StopMatcher none({});
  ChoiceStream cs(*tok, none, true);
  cs.push(token_out('h', 1));
  cs.push(token_out('i', 2));
  const ChoiceDelta d = cs.push(token_out(kEndToken, 3, FinishReason::kStop));
  EXPECT_EQ(cs.text(), "hi");
  EXPECT_EQ(cs.completion_tokens(), 3);
  EXPECT_EQ(cs.tokens().size(), 2u);  // no logprobs entry for the EOG token
  EXPECT_EQ(d.finish, FinishReason::kStop);
}

TEST(ChoiceStream, LogprobsAreReleasedWithTheirTextAndOffsetsCountCodePoints) {
  auto tok = byte_tokenizer();
  const StopMatcher stop({"ZZ"});
  ChoiceStream cs(*tok, stop, true);
  // "é" is two tokens; "Z" is held back until "x" resolves it.
  auto d1 = cs.push(token_out('a', 1));
  auto d2 = cs.push(token_out(0xC3, 2));
  auto d3 = cs.push(token_out(0xA9, 3));
  auto d4 = cs.push(token_out('Z', 4));
  auto d5 = cs.push(token_out('x', 5, FinishReason::kLength));
  EXPECT_EQ(d1.tokens.size(), 1u);
  EXPECT_EQ(d4.tokens.size(), 0u);  // held back with its text
  EXPECT_EQ(d5.tokens.size(), 2u);
  ASSERT_EQ(cs.tokens().size(), 5u);
  EXPECT_EQ(cs.tokens()[0].text_offset, 0u);
  EXPECT_EQ(cs.tokens()[1].text_offset, 1u);
  EXPECT_EQ(cs.tokens()[3].text_offset, 2u);  // "aé" is 2 code points
  EXPECT_EQ(cs.tokens()[4].text_offset, 3u);
  EXPECT_FLOAT_EQ(cs.tokens()[4].logprob, -5.0f);
  (void)d2;
  (void)d3;
}

TEST(ChoiceStream, AbortWithoutTokenFinishes) {
  auto tok = byte_tokenizer();
  const StopMatcher none({});
  ChoiceStream cs(*tok, none, false);
  cs.push(token_out('a', 1));
  StepOutput abort;
  abort.finish = FinishReason::kAbort;
  abort.generated_tokens = 1;
  const ChoiceDelta d = cs.push(abort);
  EXPECT_EQ(d.finish, FinishReason::kAbort);
  EXPECT_EQ(cs.text(), "a");
  EXPECT_TRUE(cs.finished());
}

}  // namespace
}  // namespace novaserve
