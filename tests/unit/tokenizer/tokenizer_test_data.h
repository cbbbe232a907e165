// Shared helpers for tokenizer tests: locating ../shared test data and loading tokenizers once.
#pragma once

#include <filesystem>
#include <string>
#include <vector>

namespace novaserve {

class Tokenizer;

namespace tokenizer_test {

/// The shared data dir: $NOVASERVE_SHARED_DIR, else $NOVASERVE_SOURCE_DIR/../shared, else the
/// compile-time NOVASERVE_SOURCE_DIR/../shared.
std::filesystem::path shared_dir();

/// $shared/testdata/tokenizers.
std::filesystem::path vocab_dir();

/// The default model, NOVASERVE_SOURCE_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf.
std::filesystem::path default_model();

/// Tokenizer of a GGUF file, loaded once per path and cached for the test binary's lifetime;
/// nullptr when the file is absent. A load error fails the calling test (ADD_FAILURE).
const Tokenizer* load_cached(const std::filesystem::path& gguf);

/// Whole file as bytes (empty when unreadable).
std::string read_file(const std::filesystem::path& p);

/// Splits `s` on `sep`; a final empty piece after the last separator is dropped.
std::vector<std::string> split(const std::string& s, const std::string& sep);

}  // namespace tokenizer_test
}  // namespace novaserve
