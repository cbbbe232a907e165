// Runs every ggml-vocab-*.gguf .inp/.out pair in $shared/testdata/tokenizers: each input piece
// must tokenize (add_special=false, parse_special=false) to exactly the expected ids, which were
// produced by the models' Hugging Face tokenizers. Decoding the ids must also give the input back
// (byte-level BPE and byte-fallback SPM can represent any text; SPM's dummy-prefix space is
// removed by decode()).
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"
#include "tokenizer_test_data.h"

namespace novaserve {
namespace {

namespace fs = std::filesystem;
using tokenizer_test::vocab_dir;

constexpr const char* kMissing = "no_vocab_files_found";

struct Case {
  std::string input;
  std::vector<int32_t> expected;
};

// Vocab files that have both vectors, found when the test binary starts (so test names follow
// the data); a single placeholder that skips when the directory is missing.
std::vector<std::string> vocab_names() {
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(vocab_dir(), ec)) {
    const std::string f = e.path().filename().string();
    if (!f.starts_with("ggml-vocab-") || !f.ends_with(".gguf")) continue;
    if (!fs::exists(e.path().string() + ".inp") || !fs::exists(e.path().string() + ".out"))
      continue;
    names.push_back(f.substr(11, f.size() - 11 - 5));
  }
  std::sort(names.begin(), names.end());
  if (names.empty()) names.push_back(kMissing);
  return names;
}

std::string escape(const std::string& s) {
  std::string out;
  for (unsigned char c : s) {
    if (c == '\n') {
      out += "\\n";
    } else if (c < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02x", c);
      out += buf;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

std::string ids_to_string(const std::vector<int32_t>& ids) {
  std::string s;
  for (int32_t id : ids) s += " " + std::to_string(id);
  return s;
}

// The .inp file holds inputs separated by "\n__ggml_vocab_test__\n" (one after the last input
// too); the .out file holds one line of space-separated ids per input.
std::vector<Case> load_cases(const fs::path& gguf) {
  const auto inputs = tokenizer_test::split(tokenizer_test::read_file(gguf.string() + ".inp"),
                                            "\n__ggml_vocab_test__\n");
  const auto lines = tokenizer_test::split(tokenizer_test::read_file(gguf.string() + ".out"), "\n");
  EXPECT_EQ(inputs.size(), lines.size()) << gguf << ": .inp and .out disagree on the case count";
  std::vector<Case> cases;
  for (size_t i = 0; i < inputs.size() && i < lines.size(); ++i) {
    Case c{inputs[i], {}};
    std::istringstream in(lines[i]);
    for (int32_t id; in >> id;) c.expected.push_back(id);
    cases.push_back(std::move(c));
  }
  return cases;
}

class VocabVectors : public ::testing::TestWithParam<std::string> {
 protected:
  const Tokenizer* tokenizer() {
    if (GetParam() == kMissing) return nullptr;
    return tokenizer_test::load_cached(vocab_dir() / ("ggml-vocab-" + GetParam() + ".gguf"));
  }
};

TEST_P(VocabVectors, EncodeMatchesReferenceIds) {
  if (GetParam() == kMissing)
    GTEST_SKIP() << "no ggml-vocab-*.gguf with .inp/.out in " << vocab_dir();
  const Tokenizer* tok = tokenizer();
  ASSERT_NE(tok, nullptr);
  const auto cases = load_cases(vocab_dir() / ("ggml-vocab-" + GetParam() + ".gguf"));
  ASSERT_FALSE(cases.empty());
  size_t passed = 0;
  for (const Case& c : cases) {
    const auto got = tok->encode(c.input, /*add_special=*/false, /*parse_special=*/false);
    if (got == c.expected) {
      ++passed;
    } else {
      ADD_FAILURE() << GetParam() << ": '" << escape(c.input)
                    << "'\n  expected:" << ids_to_string(c.expected)
                    << "\n  got:     " << ids_to_string(got);
    }
  }
  std::printf("[ vectors  ] %s: %zu/%zu pieces match\n", GetParam().c_str(), passed, cases.size());
  EXPECT_EQ(passed, cases.size());
}

TEST_P(VocabVectors, DecodeRoundTrips) {
  if (GetParam() == kMissing)
    GTEST_SKIP() << "no ggml-vocab-*.gguf with .inp/.out in " << vocab_dir();
  const Tokenizer* tok = tokenizer();
  ASSERT_NE(tok, nullptr);
  for (const Case& c : load_cases(vocab_dir() / ("ggml-vocab-" + GetParam() + ".gguf"))) {
    EXPECT_EQ(tok->decode(tok->encode(c.input, false, false)), c.input) << escape(c.input);
  }
}

INSTANTIATE_TEST_SUITE_P(AllVocabs, VocabVectors, ::testing::ValuesIn(vocab_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           std::string name;
                           for (char ch : info.param)
                             name += std::isalnum(static_cast<unsigned char>(ch)) ? ch : '_';
                           return name;
                         });

}  // namespace
}  // namespace novaserve
