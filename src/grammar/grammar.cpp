// GrammarCompiler (front-end dispatch, spec cache) and GrammarMatcher (mask and advance).
#include "grammar/grammar.h"

#include <algorithm>
#include <functional>
#include <mutex>
#include <exception>
#include <new>
#include <unordered_map>

#include "grammar/compiled_grammar.h"
#include "grammar/gbnf_parser.h"
#include "grammar/json_schema_grammar.h"
#include "grammar/regex_ast.h"
#include "tokenizer/token_piece.h"

namespace novaserve::grammar {
namespace {

constexpr size_t kMaxCachedGrammars = 512;

uint64_t spec_hash(const GrammarSpec& s) {
  size_t h = std::hash<std::string>()(s.text) ^ (static_cast<size_t>(s.kind) * 0x9e3779b97f4a7c15) ^
             (s.allow_unlisted_properties ? 0x5bd1e995 : 0);
  for (const std::string& c : s.choices) h = h * 1099511628211ULL ^ std::hash<std::string>()(c);
  return h;
}

bool same_spec(const GrammarSpec& a, const GrammarSpec& b) {
  return a.kind == b.kind && a.text == b.text && a.choices == b.choices &&
         a.allow_unlisted_properties == b.allow_unlisted_properties;
}

Result<Grammar> choice_grammar(const std::vector<std::string>& choices) {
  if (choices.empty()) return Err(ErrorCode::kInvalidInput, "choice list is empty");
  GrammarBuilder b;
  const uint32_t root = b.new_rule("root");
  for (const std::string& c : choices) b.add_alt(root, GrammarBuilder::literal(c));
  if (b.overflow()) return Err(ErrorCode::kInvalidInput, "choice list too large");
  return finish_grammar(b.take_rules(), root);
}

Result<Grammar> build(const GrammarSpec& spec) {
  switch (spec.kind) {
    case GrammarSpec::Kind::kJsonObject:
      return json_object_grammar();
    case GrammarSpec::Kind::kJsonSchema:
      return json_schema_grammar(spec.text,
                                 {.allow_unlisted_properties = spec.allow_unlisted_properties});
    case GrammarSpec::Kind::kGbnf:
      return parse_gbnf(spec.text);
    case GrammarSpec::Kind::kRegex:
      return regex_grammar(spec.text);
    case GrammarSpec::Kind::kChoice:
      return choice_grammar(spec.choices);
  }
  return Err(ErrorCode::kInvalidInput, "unknown grammar kind");
}

}  // namespace

struct GrammarCompiler::Impl {
  std::shared_ptr<const VocabBytes> vocab;
  LexemeMaskCache lexeme_masks;
  std::mutex mu;
  std::unordered_map<uint64_t, std::vector<std::pair<GrammarSpec, CompiledGrammarPtr>>> cache;
  size_t cached = 0;
};

GrammarCompiler::GrammarCompiler(const Vocab& vocab, int32_t eos_id,
                                 std::vector<int32_t> extra_stop_ids)
    : impl_(std::make_unique<Impl>()) {
  auto v = std::make_shared<VocabBytes>();
  v->vocab_size = static_cast<int32_t>(vocab.tokens.size());
  std::vector<int32_t> stops = std::move(extra_stop_ids);
  for (int32_t id : {eos_id, vocab.eos_id, vocab.eot_id, vocab.eom_id}) stops.push_back(id);
  std::erase_if(stops, [&](int32_t id) { return id < 0 || id >= v->vocab_size; });
  std::sort(stops.begin(), stops.end());
  stops.erase(std::unique(stops.begin(), stops.end()), stops.end());
  v->stops = std::move(stops);
  v->is_stop.assign(v->vocab_size, false);
  for (int32_t id : v->stops) v->is_stop[id] = true;
  v->pieces.resize(v->vocab_size);
  std::vector<std::pair<std::string, int32_t>> entries;
  for (int32_t id = 0; id < v->vocab_size; ++id) {
    if (v->is_stop[id]) continue;
    v->pieces[id] = vocab_token_piece(vocab, id);
    if (v->pieces[id].size() > kMaxTokenBytes) v->pieces[id].clear();  // see kMaxTokenBytes
    if (!v->pieces[id].empty()) entries.push_back({v->pieces[id], id});
  }
  v->trie = TokenTrie(std::move(entries));
  impl_->vocab = std::move(v);
}

GrammarCompiler::~GrammarCompiler() = default;

int32_t GrammarCompiler::vocab_size() const {
  return impl_->vocab->vocab_size;
}

const std::vector<int32_t>& GrammarCompiler::stop_token_ids() const {
  return impl_->vocab->stops;
}

Result<CompiledGrammarPtr> GrammarCompiler::compile(const GrammarSpec& spec) {
  const uint64_t h = spec_hash(spec);
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    auto it = impl_->cache.find(h);
    if (it != impl_->cache.end()) {
      for (const auto& [s, g] : it->second) {
        if (same_spec(s, spec)) return g;
      }
    }
  }
  CompiledGrammarPtr compiled;
  try {
    auto g = build(spec);
    if (!g.ok()) return g.error();
    compiled =
        std::make_shared<const CompiledGrammar>(impl_->vocab, g.value(), &impl_->lexeme_masks);
  } catch (const std::bad_alloc&) {
    return Err(ErrorCode::kInvalidInput, "grammar too large (out of memory while compiling)");
  } catch (const std::exception& e) {  // a front end's library threw on odd input
    return Err(ErrorCode::kInvalidInput, std::string("grammar compilation failed: ") + e.what());
  }
  std::lock_guard<std::mutex> lock(impl_->mu);
  if (impl_->cached >= kMaxCachedGrammars) {  // simple bound: start over
    impl_->cache.clear();
    impl_->cached = 0;
  }
  impl_->cache[h].push_back({spec, compiled});
  ++impl_->cached;
  return compiled;
}

// A matcher's arena only grows (memoized states of this request); past this many states it is
// rebuilt from the output so far, which bounds its memory at an amortized O(1) cost per byte.
constexpr size_t kMaxMatcherStates = 200'000;

struct GrammarMatcher::State {
  explicit State(const CompiledGrammar& g) : arena(g.flat()) {}
  PdaArena arena;
  uint32_t current = kDeadState;
  bool stopped = false;  // a stop token was accepted
  std::string output;    // bytes accepted so far (to rebuild the arena)
  std::vector<uint32_t> path;
  std::vector<uint32_t> seen;
};

GrammarMatcher::GrammarMatcher(CompiledGrammarPtr grammar) : grammar_(std::move(grammar)) {
  reset();
}
GrammarMatcher::~GrammarMatcher() = default;
GrammarMatcher::GrammarMatcher(GrammarMatcher&&) noexcept = default;
GrammarMatcher& GrammarMatcher::operator=(GrammarMatcher&&) noexcept = default;

void GrammarMatcher::reset() {
  state_ = std::make_unique<State>(*grammar_);
  state_->current = state_->arena.rule_start(grammar_->flat().root);
}

bool GrammarMatcher::is_accepting() const {
  return state_->stopped || state_->arena.state(state_->current).bottom;
}

bool GrammarMatcher::is_terminated() const {
  return state_->stopped || (state_->arena.state(state_->current).bottom &&
                             state_->arena.state(state_->current).nodes.empty());
}

bool GrammarMatcher::accept_string(std::string_view bytes) {
  if (state_->stopped) return bytes.empty();
  if (state_->arena.state_count() > kMaxMatcherStates) {
    auto fresh = std::make_unique<State>(*grammar_);
    uint32_t r = fresh->arena.rule_start(grammar_->flat().root);
    for (unsigned char c : state_->output) r = fresh->arena.step(r, c);
    fresh->current = r;
    fresh->output = std::move(state_->output);
    state_ = std::move(fresh);
  }
  uint32_t s = state_->current;
  for (unsigned char c : bytes) {
    s = state_->arena.step(s, c);
    if (s == kDeadState) return false;
  }
  state_->current = s;
  state_->output.append(bytes);
  return true;
}

bool GrammarMatcher::accept_token(int32_t token) {
  const VocabBytes& v = grammar_->vocab();
  if (state_->stopped || token < 0 || token >= v.vocab_size) return false;
  if (v.is_stop[token]) {
    if (!is_accepting()) return false;
    state_->stopped = true;
    return true;
  }
  const std::string& piece = v.pieces[token];
  return !piece.empty() && accept_string(piece);
}

void GrammarMatcher::fill_next_token_mask(std::span<uint32_t> bitmask) {
  std::fill(bitmask.begin(), bitmask.end(), 0u);
  if (state_->stopped) return;
  const VocabBytes& v = grammar_->vocab();
  const size_t words = std::min(bitmask.size(), static_cast<size_t>((v.vocab_size + 31) / 32));
  auto allow = [&](int32_t t) {
    if (static_cast<size_t>(t >> 5) < words) bitmask[t >> 5] |= 1u << (t & 31);
  };
  PdaArena& arena = state_->arena;
  const std::vector<uint32_t> tops = arena.state(state_->current).nodes;  // copy: arena grows
  state_->seen.clear();
  for (uint32_t n : tops) {
    const PdaArena::Node node = arena.node(n);
    const PositionMask& pm = grammar_->position_mask(node.pos);
    if (std::find(state_->seen.begin(), state_->seen.end(), node.pos) == state_->seen.end()) {
      state_->seen.push_back(node.pos);
      if (!pm.bits.empty()) {
        for (size_t w = 0; w < words; ++w) bitmask[w] |= pm.bits[w];
      } else {
        for (int32_t t : pm.list) allow(t);
      }
    }
    if (pm.uncertain.empty() || node.parent == kBottom) continue;
    // Tokens that leave this frame mid-token: walk their remaining bytes from the stack below.
    const PdaArena::Node up = arena.node(node.parent);
    const auto& nodes = pm.uncertain.nodes();
    const auto& toks = pm.uncertain.tokens();
    std::vector<uint32_t>& path = state_->path;
    path.assign(1, arena.resume(up.pos, up.parent));
    for (uint32_t i = 1; i < nodes.size();) {
      const TokenTrie::Node& tn = nodes[i];
      const uint32_t s = arena.step(path[tn.depth - 1], tn.byte);
      if (s == kDeadState) {
        i = tn.end;
        continue;
      }
      if (path.size() <= tn.depth) path.resize(tn.depth + 1);
      path[tn.depth] = s;
      for (uint32_t t = tn.tok_begin; t < tn.tok_end; ++t) allow(toks[t]);
      ++i;
    }
  }
  if (arena.state(state_->current).bottom) {
    for (int32_t t : v.stops) allow(t);
  }
}

}  // namespace novaserve::grammar
