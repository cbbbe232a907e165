// SPM and BPE behaviour on small hand-built vocabularies, where the expected ids follow from the
// algorithms' definitions (score/rank order, tie to the leftmost pair, byte fallback, special
// tokens), plus vocabulary validation errors.
#include <gtest/gtest.h>

#include <cstdio>

#include "tokenizer/byte_level.h"
#include "tokenizer/tokenizer.h"

namespace novaserve {
namespace {

using Ids = std::vector<int32_t>;

// SPM vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3..258 byte tokens <0x00>..<0xFF>, then `normal`
// pieces (ids from 259 in order) with the given scores.
struct SpmBuilder {
  Vocab v;
  SpmBuilder() {
    v.model = VocabModel::kSpm;
    add("<unk>", 0, TokenType::kUnknown);
    add("<s>", 0, TokenType::kControl);
    add("</s>", 0, TokenType::kControl);
    for (int b = 0; b < 256; ++b) {
      char text[8];
      std::snprintf(text, sizeof(text), "<0x%02X>", b);
      add(text, 0, TokenType::kByte);
    }
    v.unk_id = 0;
    v.bos_id = 1;
    v.eos_id = 2;
  }
  int32_t add(const std::string& text, float score, TokenType type = TokenType::kNormal) {
    v.tokens.push_back(text);
    v.scores.push_back(score);
    v.types.push_back(type);
    return static_cast<int32_t>(v.tokens.size() - 1);
  }
  std::unique_ptr<Tokenizer> build() {
    auto t = Tokenizer::from_vocab(v);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? std::move(t.value()) : nullptr;
  }
};

int32_t byte_token(uint8_t b) {
  return 3 + b;
}

TEST(SpmTokenizer, HigherScoreMergesFirst) {
  for (bool bc_wins : {true, false}) {
    SpmBuilder b;
    const int32_t a = b.add("a", -5), bb = b.add("b", -5), c = b.add("c", -5);
    const int32_t ab = b.add("ab", bc_wins ? -2 : -1);
    const int32_t bc = b.add("bc", bc_wins ? -1 : -2);
    auto tok = b.build();
    ASSERT_NE(tok, nullptr);
    (void)bb;
    EXPECT_EQ(tok->encode("abc", false, false), bc_wins ? (Ids{a, bc}) : (Ids{ab, c}));
  }
}

TEST(SpmTokenizer, EqualScoresMergeLeftmostFirst) {
  SpmBuilder b;
  b.add("a", -5);
  b.add("b", -5);
  const int32_t c = b.add("c", -5);
  const int32_t ab = b.add("ab", -1);
  b.add("bc", -1);
  auto tok = b.build();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("abc", false, false), (Ids{ab, c}));
}

TEST(SpmTokenizer, DummyPrefixEscapedSpacesAndByteFallback) {
  SpmBuilder b;
  b.v.add_space_prefix = true;
  b.v.add_bos = true;
  const int32_t space = b.add("\xE2\x96\x81", -1);  // ▁
  const int32_t a = b.add("a", -3);
  const int32_t sa = b.add(
      "\xE2\x96\x81"
      "a",
      -2);
  auto tok = b.build();
  ASSERT_NE(tok, nullptr);
  // "a é" -> "▁a▁é": é (C3 A9) has no piece, so it falls back to its two bytes.
  EXPECT_EQ(tok->encode("a \xC3\xA9", true, false),
            (Ids{1, sa, space, byte_token(0xC3), byte_token(0xA9)}));
  EXPECT_EQ(tok->encode("a", false, false), (Ids{sa}));
  // The dummy prefix also follows every special token (llama.cpp's SPM behaviour).
  EXPECT_EQ(tok->encode("a<s>a", false, true), (Ids{sa, 1, sa}));
  EXPECT_EQ(tok->encode("", true, false), (Ids{1}));
  EXPECT_TRUE(tok->encode("", false, false).empty());
  // Decoding drops the dummy-prefix space, with or without BOS.
  EXPECT_EQ(tok->decode(tok->encode("a \xC3\xA9", true, false)), "a \xC3\xA9");
  EXPECT_EQ(tok->decode(tok->encode("a \xC3\xA9", false, false)), "a \xC3\xA9");
  EXPECT_EQ(tok->token_to_piece(sa), " a");
  EXPECT_EQ(tok->token_to_piece(byte_token('A')), "A");
  (void)a;
}

TEST(SpmTokenizer, ControlTextIsPlainUnlessParseSpecial) {
  SpmBuilder b;
  const int32_t lt = b.add("<", -1), s = b.add("s", -1), gt = b.add(">", -1);
  b.add("<s", -0.5f);  // "<s" + ">" would spell the control token <s>: never produced from text
  auto tok = b.build();
  ASSERT_NE(tok, nullptr);
  const int32_t ls = *tok->find_token("<s");
  EXPECT_EQ(tok->encode("<s>", false, false), (Ids{ls, gt}));
  EXPECT_EQ(tok->encode("<s>", false, true), (Ids{1}));
  EXPECT_EQ(tok->encode("x<s>s", false, true), (Ids{byte_token('x'), 1, s}));
  EXPECT_EQ(tok->token_to_piece(1), "");
  EXPECT_EQ(tok->token_to_piece(1, /*special=*/true), "<s>");
  (void)lt;
}

TEST(SpmTokenizer, UnusedPieceIsSplitBackIntoItsParts) {
  SpmBuilder b;
  const int32_t x = b.add("x", -5), y = b.add("y", -5);
  b.add("xy", -1, TokenType::kUnused);
  const int32_t xyz = b.add("xyz", -0.5f);
  b.add("z", -5);
  auto tok = b.build();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("xy", false, false), (Ids{x, y}));
  EXPECT_EQ(tok->encode("xyz", false, false), (Ids{xyz}));  // the unused piece may still merge on
}

// Byte-level BPE vocabulary: ids 0..255 are the byte-level characters of bytes 0..255, then
// extra tokens; merges "left right" in rank order.
struct BpeBuilder {
  Vocab v;
  explicit BpeBuilder(std::string pre = "gpt-2") {
    v.model = VocabModel::kBpe;
    v.pre = std::move(pre);
    for (int b = 0; b < 256; ++b) add(bytes_to_byte_level(std::string(1, static_cast<char>(b))));
  }
  int32_t add(const std::string& text, TokenType type = TokenType::kNormal) {
    v.tokens.push_back(text);
    v.types.push_back(type);
    return static_cast<int32_t>(v.tokens.size() - 1);
  }
  int32_t merge(const std::string& left, const std::string& right) {
    v.merges.push_back(left + " " + right);
    return add(left + right);
  }
  std::unique_ptr<Tokenizer> build() {
    auto t = Tokenizer::from_vocab(v);
    EXPECT_TRUE(t.ok()) << (t.ok() ? "" : t.error().message);
    return t.ok() ? std::move(t.value()) : nullptr;
  }
};

TEST(BpeTokenizer, LowerRankMergesFirst) {
  {
    BpeBuilder b;
    const int32_t el = b.merge("e", "l");
    b.merge("h", "e");
    auto tok = b.build();
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->encode("hel", false, false), (Ids{'h', el}));
  }
  {
    BpeBuilder b;
    const int32_t he = b.merge("h", "e");
    b.merge("e", "l");
    auto tok = b.build();
    ASSERT_NE(tok, nullptr);
    EXPECT_EQ(tok->encode("hel", false, false), (Ids{he, 'l'}));
  }
}

TEST(BpeTokenizer, MergesChainAndSpacesBecomeG) {
  BpeBuilder b;
  b.merge("h", "e");
  b.merge("l", "l");
  const int32_t hell = b.merge("he", "ll");
  const int32_t gw = b.merge("\xC4\xA0", "w");  // "Ġw": space + w
  auto tok = b.build();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("hello w", false, false), (Ids{hell, 'o', gw}));
  EXPECT_EQ(tok->decode({hell, 'o', gw}), "hello w");
  EXPECT_EQ(tok->token_to_piece(gw), " w");
}

TEST(BpeTokenizer, IgnoreMergesTakesWholeWordTokens) {
  for (const char* pre : {"llama-bpe", "gpt-2"}) {
    BpeBuilder b(pre);
    const int32_t word = b.add("hey");  // reachable by no merge
    auto tok = b.build();
    ASSERT_NE(tok, nullptr);
    const Ids expected = std::string(pre) == "llama-bpe" ? Ids{word} : Ids{'h', 'e', 'y'};
    EXPECT_EQ(tok->encode("hey", false, false), expected) << pre;
  }
}

TEST(BpeTokenizer, UserDefinedTokensAlwaysMatchControlOnlyWhenParsed) {
  BpeBuilder b;
  const int32_t tool = b.add("<tool>", TokenType::kUserDefined);
  const int32_t eot = b.add("<|eot|>", TokenType::kControl);
  b.v.eos_id = eot;
  auto tok = b.build();
  ASSERT_NE(tok, nullptr);
  EXPECT_EQ(tok->encode("a<tool>b", false, false), (Ids{'a', tool, 'b'}));
  EXPECT_EQ(tok->encode("a<|eot|>", false, true), (Ids{'a', eot}));
  const Ids plain = tok->encode("a<|eot|>", false, false);
  EXPECT_EQ(std::count(plain.begin(), plain.end(), eot), 0);
  EXPECT_EQ(tok->decode(plain), "a<|eot|>");
  EXPECT_TRUE(tok->is_eog(eot));
  EXPECT_FALSE(tok->is_eog(tool));
  EXPECT_EQ(tok->token_to_piece(tool), "<tool>");
}

TEST(BpeTokenizer, InvalidUtf8IsEncodedAsBytes) {
  BpeBuilder b;
  auto tok = b.build();
  ASSERT_NE(tok, nullptr);
  const std::string text = "a\xFF\xC3(";
  EXPECT_EQ(tok->encode(text, false, false), (Ids{'a', 0xFF, 0xC3, '('}));
  EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
}

TEST(VocabValidation, InconsistentArraysAreInvalidInput) {
  BpeBuilder b;
  b.v.scores = {1.0f, 2.0f};  // 2 scores for 256 tokens
  auto r = Tokenizer::from_vocab(b.v);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("scores"), std::string::npos);

  BpeBuilder c;
  c.v.bos_id = 9999;
  r = Tokenizer::from_vocab(c.v);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("bos_token_id"), std::string::npos);

  BpeBuilder d;
  d.v.merges.push_back("q zz");  // "zz" is not a token
  r = Tokenizer::from_vocab(d.v);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  EXPECT_NE(r.error().message.find("merges[0]"), std::string::npos);

  BpeBuilder e;
  e.v.add_bos = true;  // without a BOS id
  r = Tokenizer::from_vocab(e.v);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
}

TEST(VocabValidation, UnknownPreTokenizerIsUnsupported) {
  BpeBuilder b("mystery-pre");
  auto r = Tokenizer::from_vocab(b.v);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, ErrorCode::kUnsupported);
  EXPECT_NE(r.error().message.find("mystery-pre"), std::string::npos);
}

}  // namespace
}  // namespace novaserve
