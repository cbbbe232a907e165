// Pre-tokenizer splits and the GPT-2 byte-level alphabet. Expected pieces follow from the
// published patterns by hand (e.g. GPT-2 keeps a leading space with the next word, Llama 3 groups
// digits by three, Qwen2 and SmolLM split every digit).
#include "tokenizer/pre_tokenizer.h"

#include <gtest/gtest.h>

#include "tokenizer/byte_level.h"

namespace novaserve {
namespace {

std::vector<std::string> split(std::string_view pre, std::string_view text) {
  auto spec = pre_tokenizer_spec(pre);
  EXPECT_TRUE(spec.ok()) << pre;
  if (!spec.ok()) return {};
  auto pt = PreTokenizer::create(*spec);
  EXPECT_TRUE(pt.ok()) << (pt.ok() ? "" : pt.error().message);
  if (!pt.ok()) return {};
  std::vector<std::string_view> pieces;
  (*pt)->split(text, pieces);
  return {pieces.begin(), pieces.end()};
}

using Pieces = std::vector<std::string>;

TEST(PreTokenizer, Gpt2KeepsLeadingSpaceWithWord) {
  EXPECT_EQ(split("gpt-2", "Hello world's 12345!!  x"),
            (Pieces{"Hello", " world", "'s", " 12345", "!!", " ", " x"}));
}

TEST(PreTokenizer, Llama3GroupsDigitsByThreeAndFoldsContractions) {
  EXPECT_EQ(split("llama-bpe", "I'LL pay 1234567"),
            (Pieces{"I", "'LL", " pay", " ", "123", "456", "7"}));
  EXPECT_EQ(split("llama3", "a\n\nb"), (Pieces{"a", "\n\n", "b"}));
}

TEST(PreTokenizer, Qwen2SplitsEveryDigit) {
  EXPECT_EQ(split("qwen2", "x 42"), (Pieces{"x", " ", "4", "2"}));
}

TEST(PreTokenizer, SmollmIsolatesDigitsBeforeGpt2Pattern) {
  EXPECT_EQ(split("smollm", "abc 123"), (Pieces{"abc", " ", "1", "2", "3"}));
}

TEST(PreTokenizer, FalconSplitsPunctuationAndDigitTriples) {
  // Punctuation runs are isolated first; then GPT-2's pattern; then runs of three ASCII digits.
  EXPECT_EQ(split("falcon", "x,y 1234"), (Pieces{"x", ",", "y", " ", "123", "4"}));
  EXPECT_EQ(split("falcon", "a+b 12345"), (Pieces{"a", "+", "b", " ", "123", "45"}));
}

TEST(PreTokenizer, DeepseekLlmUsesScriptClasses) {
  // Newlines are isolated, Latin letters keep one leading space, CJK runs and digit runs split.
  EXPECT_EQ(split("deepseek-llm", "Hi\n東京 99"), (Pieces{"Hi", "\n", "東京", " ", "99"}));
}

TEST(PreTokenizer, PiecesCoverInputEvenWithInvalidUtf8) {
  const std::string text = "ab\xFF\xC3 cd";
  std::string joined;
  for (const auto& p : split("llama-bpe", text)) joined += p;
  EXPECT_EQ(joined, text);
}

TEST(PreTokenizer, UnknownNameIsUnsupported) {
  auto spec = pre_tokenizer_spec("no-such-pre");
  ASSERT_FALSE(spec.ok());
  EXPECT_EQ(spec.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(spec.error().message.find("no-such-pre"), std::string::npos);
}

TEST(ByteLevel, Gpt2Alphabet) {
  // GPT-2 maps space to U+0120 ('Ġ'), newline to U+010A ('Ċ'), keeps printable ASCII.
  EXPECT_EQ(byte_to_unicode(' '), 0x120u);
  EXPECT_EQ(byte_to_unicode('\n'), 0x10Au);
  EXPECT_EQ(byte_to_unicode('A'), static_cast<uint32_t>('A'));
  EXPECT_EQ(byte_to_unicode(0xAD), 0x143u);  // the last remapped byte
  EXPECT_EQ(bytes_to_byte_level(" the"), "\xC4\xA0the");
  for (int b = 0; b < 256; ++b) EXPECT_EQ(unicode_to_byte(byte_to_unicode(b)), b);
  EXPECT_EQ(unicode_to_byte(0x4E00), -1);
}

TEST(ByteLevel, RoundTripsAllBytes) {
  std::string all;
  for (int b = 0; b < 256; ++b) all.push_back(static_cast<char>(b));
  EXPECT_EQ(byte_level_to_bytes(bytes_to_byte_level(all)), all);
  // Characters outside the alphabet pass through.
  EXPECT_EQ(byte_level_to_bytes("\xE6\x9D\xB1"), "\xE6\x9D\xB1");
}

}  // namespace
}  // namespace novaserve
