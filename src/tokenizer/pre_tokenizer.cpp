#include "tokenizer/pre_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <array>

#include "common/utf8.h"

namespace novaserve {
namespace {

// GPT-2's pattern (tokenizers' ByteLevel pre-tokenizer with use_regex=true).
constexpr const char* kGpt2 =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

// Llama 3 tokenizer.json Split pattern: case-insensitive contractions, up to 3 digits per piece.
constexpr const char* kLlama3 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// Qwen2 tokenizer.json Split pattern: as Llama 3 but one digit per piece.
constexpr const char* kQwen2 =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// DeepSeek LLM/Coder: CJK ranges (CJK unified ideographs up to U+9FA5, U+0800..U+4E00, Hangul).
constexpr const char* kDeepseekCjk = R"([\x{4E00}-\x{9FA5}\x{800}-\x{4E00}\x{AC00}-\x{D7FF}]+)";

// DeepSeek LLM's letter class: the Unicode cased letters (Lu/Ll/Lt) listed range by range in its
// tokenizer.json. Written with \x{} escapes because several (U+1FBE, U+2126, U+212A, ...) have
// canonical decompositions that editors and terminals silently normalize away.
constexpr const char* kDeepseekLetters =
    R"(\s?[A-Za-z\x{B5}\x{C0}-\x{D6}\x{D8}-\x{F6}\x{F8}-\x{1BA}\x{1BC}-\x{1BF}\x{1C4}-\x{293})"
    R"(\x{295}-\x{2AF}\x{370}-\x{373}\x{376}\x{377}\x{37B}-\x{37D}\x{37F}\x{386}\x{388}-\x{38A})"
    R"(\x{38C}\x{38E}-\x{3A1}\x{3A3}-\x{3F5}\x{3F7}-\x{481}\x{48A}-\x{52F}\x{531}-\x{556})"
    R"(\x{10A0}-\x{10C5}\x{13A0}-\x{13F5}\x{13F8}-\x{13FD}\x{1C90}-\x{1CBA}\x{1CBD}-\x{1CBF})"
    R"(\x{1D00}-\x{1D2B}\x{1D6B}-\x{1D77}\x{1D79}-\x{1D9A}\x{1E00}-\x{1F15}\x{1F18}-\x{1F1D})"
    R"(\x{1F20}-\x{1F45}\x{1F48}-\x{1F4D}\x{1F50}-\x{1F57}\x{1F59}\x{1F5B}\x{1F5D})"
    R"(\x{1F5F}-\x{1F7D}\x{1F80}-\x{1FB4}\x{1FB6}-\x{1FBC}\x{1FBE}\x{1FC2}-\x{1FC4})"
    R"(\x{1FC6}-\x{1FCC}\x{1FD0}-\x{1FD3}\x{1FD6}-\x{1FDB}\x{1FE0}-\x{1FEC}\x{1FF2}-\x{1FF4})"
    R"(\x{1FF6}-\x{1FFC}\x{2102}\x{2107}\x{210A}-\x{2113}\x{2115}\x{2119}-\x{211D}\x{2124})"
    R"(\x{2126}\x{2128}\x{212A}-\x{212D}\x{212F}-\x{2134}\x{2139}\x{213C}-\x{213F})"
    R"(\x{2145}-\x{2149}\x{214E}\x{2183}\x{2184}\x{2C00}-\x{2C7B}\x{2C7E}-\x{2CE4})"
    R"(\x{2CEB}-\x{2CEE}\x{2CF2}\x{2CF3}\x{A640}-\x{A66D}\x{A680}-\x{A69B}\x{A722}-\x{A76F})"
    R"(\x{A771}-\x{A787}\x{A78B}-\x{A78E}\x{AB70}-\x{ABBF}\x{FB00}-\x{FB06}\x{FB13}-\x{FB17})"
    R"(\x{FF21}-\x{FF3A}\x{FF41}-\x{FF5A}\x{10400}-\x{1044F}\x{104B0}-\x{104D3})"
    R"(\x{104D8}-\x{104FB}\x{10C80}-\x{10CB2}\x{10CC0}-\x{10CF2}\x{118A0}-\x{118DF})"
    R"(\x{1E900}-\x{1E943}]+)";

// DeepSeek LLM's punctuation class: ASCII punctuation plus full-width forms and quotes.
constexpr const char* kDeepseekPunct =
    R"(\s?[!-/:-~\x{FF01}-\x{FF0F}\x{FF1A}-\x{FF5E}\x{2018}-\x{201F}\x{3000}-\x{3002}]+)";

struct NamedSpec {
  std::array<const char*, 8> names;  // aliases, nullptr-terminated
  std::vector<std::string> patterns;
  bool ignore_merges;
  bool add_bos_default = false;
};

const std::vector<NamedSpec>& specs() {
  static const std::vector<NamedSpec> table = {
      // Old GGUFs without a pre name; the historic llama.cpp default sequence.
      {{"default"}, {R"([\p{P}\$\+<=>\^~\|]+)", kGpt2, R"(\p{N}+)", R"([0-9][0-9][0-9])"}, false},
      {{"llama3", "llama-v3", "llama-bpe", "falcon3"}, {kLlama3}, true, true},
      {{"dbrx", "smaug-bpe"}, {kLlama3}, false},
      {{"qwen2", "deepseek-r1-qwen", "stablelm2", "megrez"}, {kQwen2}, false},
      {{"gpt-2", "phi-2", "mpt", "olmo", "jais"}, {kGpt2}, false},
      // Falcon: Punctuation (ASCII punctuation counts even where Unicode calls it a symbol),
      // ByteLevel, then digits in groups of three.
      {{"falcon"}, {R"([\p{P}\$\+<=>\^~\|`]+)", kGpt2, R"([0-9][0-9][0-9])"}, false},
      // SmolLM/StarCoder family: Digits(individual_digits=true) then ByteLevel.
      {{"smollm", "starcoder", "refact", "command-r", "codeshell", "exaone", "minerva-7b"},
       {R"(\p{N})", kGpt2},
       false},
      {{"deepseek-llm"},
       {R"([\r\n])", kDeepseekLetters, kDeepseekPunct, R"(\s+$)", kDeepseekCjk, R"(\p{N}+)"},
       false},
      {{"deepseek-coder"},
       {R"([\r\n])", R"(\s?\p{L}+)", R"(\s?\p{P}+)", kDeepseekCjk, R"(\p{N})"},
       false},
  };
  return table;
}

}  // namespace

struct PreTokenizer::Regex {
  pcre2_code* code = nullptr;
  ~Regex() { pcre2_code_free(code); }
};

Result<PreTokenizerSpec> pre_tokenizer_spec(std::string_view pre) {
  for (const auto& spec : specs()) {
    for (const char* name : spec.names) {
      if (name != nullptr && pre == name)
        return PreTokenizerSpec{spec.patterns, spec.ignore_merges, spec.add_bos_default};
    }
  }
  return Err(ErrorCode::kUnsupported,
             "tokenizer.ggml.pre '" + std::string(pre) + "' is not a supported pre-tokenizer");
}

PreTokenizer::~PreTokenizer() = default;

Result<std::unique_ptr<PreTokenizer>> PreTokenizer::create(const PreTokenizerSpec& spec) {
  std::unique_ptr<PreTokenizer> pt(new PreTokenizer());
  pt->ignore_merges_ = spec.ignore_merges;
  for (const std::string& pattern : spec.patterns) {
    int err = 0;
    PCRE2_SIZE err_offset = 0;
    auto re = std::make_unique<Regex>();
    re->code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF, &err, &err_offset, nullptr);
    if (re->code == nullptr) {
      PCRE2_UCHAR msg[256];
      pcre2_get_error_message(err, msg, sizeof(msg));
      return Err(ErrorCode::kInternal,
                 "pre-tokenizer pattern '" + pattern + "' does not compile at offset " +
                     std::to_string(err_offset) + ": " + reinterpret_cast<const char*>(msg));
    }
    // JIT is only a speed-up; the interpreter gives the same matches where JIT is unavailable.
    pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);
    pt->regexes_.push_back(std::move(re));
  }
  return pt;
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  std::vector<std::string_view> pieces{text};
  std::vector<std::string_view> next;
  for (const auto& re : regexes_) {
    pcre2_match_data* md = pcre2_match_data_create_from_pattern(re->code, nullptr);
    next.clear();
    for (std::string_view piece : pieces) {
      const auto* subject = reinterpret_cast<PCRE2_SPTR>(piece.data());
      size_t pos = 0;   // where the next search starts
      size_t last = 0;  // end of the previous piece emitted
      while (pos < piece.size()) {
        const int rc = pcre2_match(re->code, subject, piece.size(), pos, 0, md, nullptr);
        if (rc < 0) break;  // no further match (or a match-limit error: keep the rest whole)
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(md);
        const size_t start = ov[0], end = ov[1];
        if (end == start) {
          // An empty match adds no piece; step over one character and search again.
          const utf8::Step st = utf8::next(piece.substr(start));
          pos = start + (st.kind == utf8::Step::kComplete ? st.length : 1);
          continue;
        }
        if (start > last) next.push_back(piece.substr(last, start - last));
        next.push_back(piece.substr(start, end - start));
        last = pos = end;
      }
      if (last < piece.size()) next.push_back(piece.substr(last));
    }
    pcre2_match_data_free(md);
    pieces.swap(next);
  }
  out.insert(out.end(), pieces.begin(), pieces.end());
}

}  // namespace novaserve
