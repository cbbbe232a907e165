#include "tokenizer/tokenizer.h"

#include <array>

#include "common/replace_all.h"
#include "gguf/gguf_file.h"
#include "tokenizer/bpe.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/special_tokens.h"
#include "tokenizer/spm.h"
#include "tokenizer/token_index.h"
#include "tokenizer/token_piece.h"

namespace novaserve {
namespace {

constexpr std::string_view kSpmSpace = "\xE2\x96\x81";  // U+2581, SentencePiece's space

// End-of-turn markers of common chat models whose metadata often names only EOS (the list
// llama.cpp's vocab loader uses).
constexpr std::array<std::string_view, 7> kEogTexts = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>"};

}  // namespace

Tokenizer::~Tokenizer() = default;

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_gguf(const GgufFile& gguf) {
  auto vocab = read_vocab(gguf);
  if (!vocab.ok()) return vocab.error();
  return from_vocab(std::move(vocab.value()));
}

Result<std::unique_ptr<Tokenizer>> Tokenizer::from_vocab(Vocab vocab) {
  NOVASERVE_RETURN_IF_ERROR(validate_vocab(vocab));
  std::unique_ptr<Tokenizer> t(new Tokenizer());
  t->vocab_ = std::move(vocab);
  const Vocab& v = t->vocab_;  // the index and models keep references into this
  t->index_ = std::make_unique<TokenIndex>(v.tokens);
  if (v.model == VocabModel::kSpm) {
    t->spm_ = std::make_unique<SpmModel>(v, *t->index_);
  } else {
    auto spec = pre_tokenizer_spec(v.pre);
    if (!spec.ok()) return spec.error();
    auto pre = PreTokenizer::create(*spec);
    if (!pre.ok()) return pre.error();
    t->pre_ = std::move(pre.value());
    auto bpe = BpeModel::create(v, *t->index_, t->pre_->ignore_merges());
    if (!bpe.ok()) return bpe.error();
    t->bpe_ = std::make_unique<BpeModel>(std::move(bpe.value()));
  }
  t->specials_ = std::make_unique<SpecialTokenMatcher>(v);

  const int32_t n = t->n_vocab();
  t->pieces_.resize(n);
  for (int32_t id = 0; id < n; ++id) t->pieces_[id] = vocab_token_piece(v, id);

  t->eog_.assign(n, false);
  for (int32_t id : {v.eos_id, v.eot_id, v.eom_id}) {
    if (id >= 0) t->eog_[id] = true;
  }
  for (std::string_view text : kEogTexts) {
    const int32_t id = t->index_->find(text);
    if (id >= 0) t->eog_[id] = true;
  }
  return t;
}

void Tokenizer::encode_text(std::string_view text, bool prefix_space,
                            std::vector<int32_t>& out) const {
  if (spm_) {
    std::string spaced;
    if (vocab_.add_space_prefix && prefix_space) spaced = " ";
    spaced.append(text);
    spm_->encode(replace_all(spaced, " ", kSpmSpace), out);
    return;
  }
  std::vector<std::string_view> pieces;
  pre_->split(text, pieces);
  bpe_->encode(pieces, out);
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special,
                                       bool parse_special) const {
  std::vector<int32_t> out;
  if (add_special && vocab_.add_bos) out.push_back(vocab_.bos_id);
  std::vector<Fragment> fragments;
  specials_->split(text, parse_special, fragments);
  // SPM's dummy prefix goes before the text at the start and after every special token.
  bool after_special = true;
  for (const Fragment& f : fragments) {
    if (f.token >= 0) {
      out.push_back(f.token);
      after_special = true;
    } else {
      encode_text(f.text, after_special, out);
      after_special = false;
    }
  }
  if (add_special && vocab_.add_eos) out.push_back(vocab_.eos_id);
  return out;
}

std::string Tokenizer::token_to_piece(int32_t id, bool special) const {
  if (id < 0 || id >= n_vocab()) return {};
  if (special && pieces_[id].empty()) {
    const TokenType t = token_type(id);
    if (t == TokenType::kControl || t == TokenType::kUnknown || t == TokenType::kUnused) {
      return vocab_.tokens[id];
    }
  }
  return pieces_[id];
}

std::string Tokenizer::sequence_piece(int32_t id, bool* at_text_start) const {
  std::string piece = token_to_piece(id);
  if (*at_text_start && token_type(id) != TokenType::kControl) {
    *at_text_start = false;
    if (spm_ && vocab_.add_space_prefix && !piece.empty() && piece[0] == ' ') piece.erase(0, 1);
  }
  return piece;
}

std::string Tokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string out;
  bool at_text_start = true;
  for (int32_t id : ids) out += sequence_piece(id, &at_text_start);
  return out;
}

bool Tokenizer::is_eog(int32_t id) const {
  return id >= 0 && id < n_vocab() && eog_[id];
}

std::optional<int32_t> Tokenizer::find_token(std::string_view text) const {
  const int32_t id = index_->find(text);
  if (id < 0) return std::nullopt;
  return id;
}

const std::string& Tokenizer::token_text(int32_t id) const {
  static const std::string kEmpty;
  return id >= 0 && id < n_vocab() ? vocab_.tokens[id] : kEmpty;
}

TokenType Tokenizer::token_type(int32_t id) const {
  if (id < 0 || id >= n_vocab()) return TokenType::kUndefined;
  return vocab_.types.empty() ? TokenType::kNormal : vocab_.types[id];
}

}  // namespace novaserve
