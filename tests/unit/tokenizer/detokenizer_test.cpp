// IncrementalDetokenizer: UTF-8 hold-back, U+FFFD for impossible bytes, and agreement with
// Tokenizer::decode(). Uses a byte-level vocabulary where token id b is the single byte b, so a
// test can feed any byte sequence one byte per token.
#include "tokenizer/detokenizer.h"

#include <gtest/gtest.h>

#include <random>

#include "common/utf8.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer_test_data.h"

namespace novaserve {
namespace {

const std::string kFffd(utf8::kReplacement);

std::unique_ptr<Tokenizer> byte_tokenizer() {
  Vocab v;
  v.model = VocabModel::kBpe;
  v.pre = "gpt-2";
  for (int b = 0; b < 256; ++b) v.tokens.push_back(bytes_to_byte_level(std::string(1, char(b))));
  v.tokens.push_back("<|end|>");
  v.types.assign(256, TokenType::kNormal);
  v.types.push_back(TokenType::kControl);
  auto t = Tokenizer::from_vocab(std::move(v));
  EXPECT_TRUE(t.ok());
  return t.ok() ? std::move(t.value()) : nullptr;
}

// Feeds `bytes` one token per byte; returns every chunk (flush() last).
std::vector<std::string> stream(const Tokenizer& tok, std::string_view bytes) {
  IncrementalDetokenizer d(tok, DetokenizeFrom::kContinuation);
  std::vector<std::string> chunks;
  for (char c : bytes) chunks.push_back(d.push(static_cast<uint8_t>(c)));
  chunks.push_back(d.flush());
  return chunks;
}

using Chunks = std::vector<std::string>;

TEST(IncrementalDetokenizer, HoldsMultiByteCharactersUntilComplete) {
  auto tok = byte_tokenizer();
  ASSERT_NE(tok, nullptr);
  // 🦙 is F0 9F A6 99; é is C3 A9.
  EXPECT_EQ(stream(*tok, "\xF0\x9F\xA6\x99"), (Chunks{"", "", "", "\xF0\x9F\xA6\x99", ""}));
  EXPECT_EQ(stream(*tok, "a\xC3\xA9"), (Chunks{"a", "", "\xC3\xA9", ""}));
  IncrementalDetokenizer d(*tok, DetokenizeFrom::kContinuation);
  EXPECT_EQ(d.push(0xF0), "");
  EXPECT_EQ(d.push(0x9F), "");
  EXPECT_EQ(d.pending_bytes(), 2u);
  EXPECT_EQ(d.flush(), kFffd);
  EXPECT_EQ(d.pending_bytes(), 0u);
}

TEST(IncrementalDetokenizer, ReplacesOnlyBytesThatCanNeverComplete) {
  auto tok = byte_tokenizer();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(stream(*tok,
                   "\xFF"
                   "a"),
            (Chunks{kFffd, "a", ""}));                   // invalid lead
  EXPECT_EQ(stream(*tok, "\x80"), (Chunks{kFffd, ""}));  // stray continuation
  EXPECT_EQ(stream(*tok,
                   "\xE2\x82"
                   "A"),
            (Chunks{"", "", kFffd + "A", ""}));                          // cut by ASCII
  EXPECT_EQ(stream(*tok, "\xED\xA0"), (Chunks{"", kFffd + kFffd, ""}));  // surrogate
  EXPECT_EQ(stream(*tok, "\xF0\x9F"), (Chunks{"", "", kFffd}));          // dangling at end
}

TEST(IncrementalDetokenizer, ChunksAreValidAndMatchSanitizedDecode) {
  auto tok = byte_tokenizer();
  ASSERT_NE(tok, nullptr);
  std::mt19937 rng(1234);
  // Bytes biased towards UTF-8 structure so that valid, truncated and broken sequences all occur.
  const uint8_t alphabet[] = {'a',  ' ',  0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0xA6,
                              0x99, 0x80, 0xBF, 0xFF, 0xC0, 0xED, 0xA0, 0xF4, 0x90};
  for (int trial = 0; trial < 500; ++trial) {
    std::string bytes;
    std::vector<int32_t> ids;
    const int n = 1 + static_cast<int>(rng() % 12);
    for (int i = 0; i < n; ++i) {
      const uint8_t b = alphabet[rng() % sizeof(alphabet)];
      bytes.push_back(static_cast<char>(b));
      ids.push_back(b);
    }
    std::string joined;
    for (const std::string& chunk : stream(*tok, bytes)) {
      EXPECT_TRUE(utf8::is_valid(chunk));
      joined += chunk;
    }
    EXPECT_EQ(joined, utf8::sanitize(tok->decode(ids)));
  }
}

TEST(IncrementalDetokenizer, ControlTokensProduceNoText) {
  auto tok = byte_tokenizer();
  ASSERT_NE(tok, nullptr);
  IncrementalDetokenizer d(*tok, DetokenizeFrom::kSequenceStart);
  EXPECT_EQ(d.push('h'), "h");
  EXPECT_EQ(d.push(256), "");
  EXPECT_EQ(d.push('i'), "i");
}

TEST(IncrementalDetokenizer, SpmDummyPrefixFollowsDecode) {
  const Tokenizer* tok =
      tokenizer_test::load_cached(tokenizer_test::vocab_dir() / "ggml-vocab-llama-spm.gguf");
  if (tok == nullptr)
    GTEST_SKIP() << "ggml-vocab-llama-spm.gguf not found in " << tokenizer_test::vocab_dir();
  const std::string text = "Hello world \xF0\x9F\xA6\x99 caf\xC3\xA9";  // emoji via byte tokens
  for (bool bos : {true, false}) {
    const auto ids = tok->encode(text, bos, false);
    ASSERT_EQ(tok->decode(ids), text);
    IncrementalDetokenizer from_start(*tok, DetokenizeFrom::kSequenceStart);
    IncrementalDetokenizer continued(*tok, DetokenizeFrom::kContinuation);
    std::string a, b;
    for (int32_t id : ids) {
      const std::string chunk = from_start.push(id);
      EXPECT_TRUE(utf8::is_valid(chunk));
      a += chunk;
      b += continued.push(id);
    }
    a += from_start.flush();
    b += continued.flush();
    EXPECT_EQ(a, text);
    EXPECT_EQ(b, " " + text);  // a continuation keeps the first piece's space
  }
}

}  // namespace
}  // namespace novaserve
