// The default model's tokenizer (SmolLM2-135M-Instruct, pre "smollm") against ids from Hugging
// Face transformers' GGUF tokenizer loader, produced by smollm2_reference.py into
// smollm2_reference.json next to this file.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_data.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;

const Tokenizer* smollm2() {
  return tokenizer_test::load_cached(tokenizer_test::default_model());
}

fs::path reference_file() {
  const char* s = std::getenv("NOVASERVE_SOURCE_DIR");
  const fs::path root = (s != nullptr && *s != '\0') ? fs::path(s) : fs::path(NOVASERVE_SOURCE_DIR);
  return root / "tests" / "unit" / "tokenizer" / "smollm2_reference.json";
}

TEST(DefaultModelTokenizer, MatchesTransformersReference) {
  const Tokenizer* tok = smollm2();
  if (tok == nullptr) GTEST_SKIP() << "default model missing: " << tokenizer_test::default_model();
  const auto ref =
      nlohmann::json::parse(tokenizer_test::read_file(reference_file()), nullptr, false);
  ASSERT_FALSE(ref.is_discarded()) << reference_file();
  ASSERT_GE(ref["cases"].size(), 10u);
  for (const auto& c : ref["cases"]) {
    const std::string text = c["text"];
    const bool parse_special = c["parse_special"];
    const auto expected = c["ids"].get<std::vector<int32_t>>();
    EXPECT_EQ(tok->encode(text, false, parse_special), expected)
        << "text: " << text << " parse_special: " << parse_special;
    if (!parse_special) {
      EXPECT_EQ(tok->decode(tok->encode(text, false, false)), text);
    }
  }
}

TEST(DefaultModelTokenizer, SpecialTokensAndFlags) {
  const Tokenizer* tok = smollm2();
  if (tok == nullptr) GTEST_SKIP() << "default model missing: " << tokenizer_test::default_model();
  EXPECT_EQ(tok->n_vocab(), 49152);
  // The file's metadata: bos 1 <|im_start|>, eos 2 <|im_end|>, add_bos_token false.
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_FALSE(tok->add_bos());
  EXPECT_EQ(tok->find_token("<|im_start|>"), 1);
  EXPECT_EQ(tok->token_text(2), "<|im_end|>");
  EXPECT_FALSE(tok->find_token("no such token text").has_value());
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_TRUE(tok->is_eog(0));  // <|endoftext|>
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_EQ(tok->encode("Hi", true, false), tok->encode("Hi", false, false));  // no BOS added
  EXPECT_EQ(tok->token_to_piece(1), "");
  EXPECT_EQ(tok->token_to_piece(1, true), "<|im_start|>");
  EXPECT_EQ(tok->token_to_piece(-1), "");
  EXPECT_EQ(tok->token_to_piece(49152), "");
}

}  // namespace
}  // namespace novaserve
