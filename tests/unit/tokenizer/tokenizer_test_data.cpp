#include "tokenizer_test_data.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>

#include "gguf/gguf_file.h"
#include "tokenizer/tokenizer.h"

namespace novaserve::tokenizer_test {
namespace fs = std::filesystem;

fs::path shared_dir() {
  if (const char* e = std::getenv("NOVASERVE_SHARED_DIR"); e != nullptr && *e != '\0') return e;
  if (const char* s = std::getenv("NOVASERVE_SOURCE_DIR"); s != nullptr && *s != '\0') {
    return fs::path(s) / ".." / "shared";
  }
  return fs::path(NOVASERVE_SOURCE_DIR) / ".." / "shared";
}

fs::path vocab_dir() {
  return shared_dir() / "testdata" / "tokenizers";
}

fs::path default_model() {
  const char* s = std::getenv("NOVASERVE_SOURCE_DIR");
  const fs::path root = (s != nullptr && *s != '\0') ? fs::path(s) : fs::path(NOVASERVE_SOURCE_DIR);
  return root / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf";
}

const Tokenizer* load_cached(const fs::path& gguf) {
  static std::mutex mu;
  static std::map<std::string, std::unique_ptr<Tokenizer>> cache;
  std::lock_guard<std::mutex> lock(mu);
  auto it = cache.find(gguf.string());
  if (it != cache.end()) return it->second.get();
  if (!fs::exists(gguf)) return nullptr;
  auto file = GgufFile::open(gguf.string());
  if (!file.ok()) {
    ADD_FAILURE() << gguf << ": " << file.error().message;
    return nullptr;
  }
  auto tok = Tokenizer::from_gguf(**file);
  if (!tok.ok()) {
    ADD_FAILURE() << gguf << ": " << tok.error().message;
    return nullptr;
  }
  return (cache[gguf.string()] = std::move(tok.value())).get();
}

std::string read_file(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t pos = 0;
  for (size_t hit; (hit = s.find(sep, pos)) != std::string::npos; pos = hit + sep.size()) {
    out.push_back(s.substr(pos, hit - pos));
  }
  if (pos < s.size()) out.push_back(s.substr(pos));
  return out;
}

}  // namespace novaserve::tokenizer_test
