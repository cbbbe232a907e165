#include <algorithm>
#include <cctype>
#include <string>

#include "grammar/regex_ast.h"
#include "grammar/utf8_class.h"

namespace novaserve::grammar {
namespace {

constexpr int kMaxNesting = 200;
constexpr size_t kMaxNodes = 200000;

// ECMA-262 WhiteSpace and LineTerminator code points (\s).
const CodepointRanges kSpace = {
    {0x09, 0x0D},     {0x20, 0x20},     {0xA0, 0xA0},     {0x1680, 0x1680}, {0x2000, 0x200A},
    {0x2028, 0x2029}, {0x202F, 0x202F}, {0x205F, 0x205F}, {0x3000, 0x3000}, {0xFEFF, 0xFEFF}};
const CodepointRanges kDigit = {{'0', '9'}};
const CodepointRanges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};

// Negated shorthands (\D \W \S, [^\d]) are limited to ASCII: Python's re (used by common
// validators) gives \d and \w Unicode meanings, so only the ASCII part of their complements is
// outside them under both readings.
CodepointRanges ascii_complement(const CodepointRanges& r) {
  return subtract_ranges({{0, 0x7F}}, normalize_ranges(r));
}

// Upper bound on the rules lowering creates (repeats are unrolled), saturating.
size_t cost(const Rx& rx) {
  size_t c = 1;
  for (const Rx& k : rx.kids) c = std::min(c + cost(k), kMaxNodes + 1);
  if (rx.kind == Rx::kRepeat) {
    c = std::min(c * static_cast<size_t>(std::max<int64_t>({1, rx.min, rx.max})), kMaxNodes + 1);
  }
  return c;
}

class RegexParser {
 public:
  RegexParser(std::string_view re, const RegexOptions& opt) : re_(re), opt_(opt) {}

  Result<Rx> parse() {
    std::vector<Rx> alts;
    while (true) {
      bool start = false, end = false;
      if (pos_ < re_.size() && re_[pos_] == '^') {
        start = true;
        ++pos_;
      }
      Rx seq = Rx::seq({});
      NOVASERVE_RETURN_IF_ERROR(parse_concat(seq, 0, &end));
      if (opt_.search) {
        Rx wrapped = Rx::seq({});
        if (!start) wrapped.kids.push_back(any_star());
        wrapped.kids.push_back(std::move(seq));
        if (!end) wrapped.kids.push_back(any_star());
        seq = std::move(wrapped);
      }
      alts.push_back(std::move(seq));
      if (pos_ < re_.size() && re_[pos_] == '|') {
        ++pos_;
        continue;
      }
      break;
    }
    if (pos_ < re_.size()) return error(pos_, "unbalanced ')'");
    Rx out = alts.size() == 1 ? std::move(alts[0]) : Rx::alt(std::move(alts));
    if (cost(out) > kMaxNodes) return error(0, "pattern too large after expanding repetitions");
    return out;
  }

 private:
  Error error(size_t at, const std::string& what) const {
    return Err(ErrorCode::kInvalidInput, "regex offset " + std::to_string(at) + ": " + what +
                                             " in '" + std::string(re_.substr(0, 200)) + "'");
  }

  CodepointRanges filter(CodepointRanges r) const {
    r = normalize_ranges(std::move(r));
    if (opt_.json_string_content) r = subtract_ranges(r, {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}});
    return r;
  }

  Rx cls(const CodepointRanges& r) {
    ++size_;
    return Rx::cls(filter(r));
  }

  Rx any_star() { return Rx::star(cls({{0, kMaxCodepoint}})); }

  // A sequence of quantified atoms, up to '|' or ')' or the end. `*end` is set by a final '$'
  // (only allowed at depth 0, before '|' or the end).
  Status parse_concat(Rx& seq, int depth, bool* end) {
    while (pos_ < re_.size()) {
      const char c = re_[pos_];
      if (c == '|' || c == ')') return {};
      if (c == '$') {
        ++pos_;
        if (depth != 0 || (pos_ < re_.size() && re_[pos_] != '|')) {
          return error(pos_ - 1, "'$' only supported at the end");
        }
        *end = true;
        return {};
      }
      Rx atom;
      NOVASERVE_RETURN_IF_ERROR(parse_atom(atom, depth));
      NOVASERVE_RETURN_IF_ERROR(parse_quantifier(atom));
      seq.kids.push_back(std::move(atom));
    }
    return {};
  }

  bool read_int(int64_t* out) {
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < re_.size() && std::isdigit(static_cast<unsigned char>(re_[pos_]))) {
      v = std::min<int64_t>(v * 10 + (re_[pos_] - '0'), int64_t{1} << 40);
      ++pos_;
    }
    *out = v;
    return pos_ > start;
  }

  Status parse_quantifier(Rx& atom) {
    while (pos_ < re_.size()) {
      const char c = re_[pos_];
      const size_t at = pos_;
      int64_t m, n;
      if (c == '*') {
        m = 0, n = -1, ++pos_;
      } else if (c == '+') {
        m = 1, n = -1, ++pos_;
      } else if (c == '?') {
        m = 0, n = 1, ++pos_;
      } else if (c == '{') {
        ++pos_;
        if (!read_int(&m)) {  // not a quantifier: a literal '{' (ECMA-262 Annex B)
          pos_ = at;
          return {};
        }
        n = m;
        if (pos_ < re_.size() && re_[pos_] == ',') {
          ++pos_;
          n = -1;
          if (pos_ < re_.size() && re_[pos_] != '}' && !read_int(&n)) {
            return error(pos_, "bad quantifier");
          }
        }
        if (pos_ >= re_.size() || re_[pos_] != '}') return error(at, "bad quantifier");
        ++pos_;
        if (n >= 0 && n < m) return error(at, "quantifier {m,n} with n < m");
        if (m > 10000 || n > 10000) return error(at, "repetition bound over 10000");
      } else {
        return {};
      }
      if (pos_ < re_.size() && re_[pos_] == '?') ++pos_;  // lazy: same language
      if (pos_ < re_.size() && re_[pos_] == '+') return error(pos_, "possessive quantifier");
      atom = Rx::rep(std::move(atom), m, n);
      if (pos_ < re_.size() && (re_[pos_] == '*' || re_[pos_] == '+' || re_[pos_] == '?' ||
                                (re_[pos_] == '{' && pos_ + 1 < re_.size() &&
                                 std::isdigit(static_cast<unsigned char>(re_[pos_ + 1]))))) {
        return error(pos_, "nothing to repeat");
      }
      return {};
    }
    return {};
  }

  // An escape after '\' inside or outside a class; fills `r` with its code points.
  Status parse_escape(CodepointRanges& r, bool in_class, bool* negated_shorthand) {
    const size_t at = pos_ - 1;
    if (pos_ >= re_.size()) return error(at, "trailing backslash");
    const char e = re_[pos_++];
    switch (e) {
      case 'd':
        r = kDigit;
        return {};
      case 'w':
        r = kWord;
        return {};
      case 's':
        r = kSpace;
        return {};
      case 'D':
        r = ascii_complement(kDigit);
        *negated_shorthand = true;
        return {};
      case 'W':
        r = ascii_complement(kWord);
        *negated_shorthand = true;
        return {};
      case 'S':
        r = ascii_complement(kSpace);
        *negated_shorthand = true;
        return {};
      case 't':
        r = {{'\t', '\t'}};
        return {};
      case 'n':
        r = {{'\n', '\n'}};
        return {};
      case 'r':
        r = {{'\r', '\r'}};
        return {};
      case 'f':
        r = {{'\f', '\f'}};
        return {};
      case 'v':
        r = {{'\v', '\v'}};
        return {};
      case '0':
        r = {{0, 0}};
        return {};
      case 'x':
      case 'u': {
        const int digits = e == 'x' ? 2 : 4;
        uint32_t v = 0;
        for (int k = 0; k < digits; ++k, ++pos_) {
          if (pos_ >= re_.size() || !std::isxdigit(static_cast<unsigned char>(re_[pos_]))) {
            return error(at, "bad \\x or \\u escape");
          }
          const char c = re_[pos_];
          v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
        }
        r = {{v, v}};
        return {};
      }
      case 'b':
        if (in_class) {
          r = {{8, 8}};
          return {};
        }
        return error(at, "word boundary \\b not supported");
      default:
        if (std::isalnum(static_cast<unsigned char>(e))) {
          return error(at, std::string("escape \\") + e + " not supported");
        }
        r = {{static_cast<uint32_t>(static_cast<unsigned char>(e)),
              static_cast<uint32_t>(static_cast<unsigned char>(e))}};
        return {};
    }
  }

  Status read_literal(uint32_t* cp) {
    const size_t at = pos_;
    const int32_t v = decode_utf8(re_, &pos_);
    if (v < 0) return error(at, "invalid UTF-8");
    *cp = static_cast<uint32_t>(v);
    return {};
  }

  Status parse_class(Rx& out) {
    const size_t at = pos_ - 1;
    const bool negate = pos_ < re_.size() && re_[pos_] == '^';
    if (negate) ++pos_;
    CodepointRanges r;
    bool shorthand = false;
    bool first = true;
    while (pos_ < re_.size() && (re_[pos_] != ']' || (first && false))) {
      first = false;
      CodepointRanges item;
      uint32_t lo = 0;
      bool single = true;
      if (re_[pos_] == '\\') {
        ++pos_;
        bool neg = false;
        NOVASERVE_RETURN_IF_ERROR(parse_escape(item, true, &neg));
        shorthand = shorthand || neg || item.size() != 1 || item[0].first != item[0].second;
        single = item.size() == 1 && item[0].first == item[0].second;
        lo = item[0].first;
      } else {
        NOVASERVE_RETURN_IF_ERROR(read_literal(&lo));
        item = {{lo, lo}};
      }
      if (single && pos_ + 1 < re_.size() && re_[pos_] == '-' && re_[pos_ + 1] != ']') {
        ++pos_;
        uint32_t hi = 0;
        if (re_[pos_] == '\\') {
          ++pos_;
          CodepointRanges h;
          bool neg = false;
          NOVASERVE_RETURN_IF_ERROR(parse_escape(h, true, &neg));
          if (h.size() != 1 || h[0].first != h[0].second) return error(at, "bad class range");
          hi = h[0].first;
        } else {
          NOVASERVE_RETURN_IF_ERROR(read_literal(&hi));
        }
        if (hi < lo) return error(at, "class range out of order");
        item = {{lo, hi}};
      }
      r.insert(r.end(), item.begin(), item.end());
    }
    if (pos_ >= re_.size()) return error(at, "unterminated class");
    ++pos_;
    r = normalize_ranges(std::move(r));
    if (negate) r = shorthand ? ascii_complement(r) : complement_ranges(r);
    out = cls(r);
    return {};
  }

  Status parse_atom(Rx& out, int depth) {
    const size_t at = pos_;
    const char c = re_[pos_++];
    switch (c) {
      case '(': {
        if (depth >= kMaxNesting) return error(at, "groups nested too deeply");
        if (pos_ < re_.size() && re_[pos_] == '?') {
          if (re_.substr(pos_, 2) == "?:") {
            pos_ += 2;
          } else if (re_.substr(pos_, 2) == "?<" && pos_ + 2 < re_.size() && re_[pos_ + 2] != '=' &&
                     re_[pos_ + 2] != '!') {
            const size_t close = re_.find('>', pos_);
            if (close == std::string_view::npos) return error(at, "bad group name");
            pos_ = close + 1;
          } else {
            return error(at, "lookaround and group flags are not supported");
          }
        }
        std::vector<Rx> alts;
        while (true) {
          Rx seq = Rx::seq({});
          bool end = false;
          NOVASERVE_RETURN_IF_ERROR(parse_concat(seq, depth + 1, &end));
          alts.push_back(std::move(seq));
          if (pos_ < re_.size() && re_[pos_] == '|') {
            ++pos_;
            continue;
          }
          break;
        }
        if (pos_ >= re_.size() || re_[pos_] != ')') return error(at, "unclosed '('");
        ++pos_;
        out = alts.size() == 1 ? std::move(alts[0]) : Rx::alt(std::move(alts));
        return {};
      }
      case '[':
        return parse_class(out);
      case '.':
        out = cls(complement_ranges({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}}));
        return {};
      case '\\': {
        if (pos_ < re_.size() && re_[pos_] >= '1' && re_[pos_] <= '9') {
          return error(at, "backreferences are not supported");
        }
        CodepointRanges r;
        bool neg = false;
        NOVASERVE_RETURN_IF_ERROR(parse_escape(r, false, &neg));
        out = cls(r);
        return {};
      }
      case '^':
        return error(at, "'^' only supported at the start");
      case '*':
      case '+':
      case '?':
        return error(at, "quantifier without an atom");
      default: {
        --pos_;
        uint32_t cp = 0;
        NOVASERVE_RETURN_IF_ERROR(read_literal(&cp));
        out = cls({{cp, cp}});
        return {};
      }
    }
  }

  std::string_view re_;
  RegexOptions opt_;
  size_t pos_ = 0;
  size_t size_ = 0;  // classes parsed
};

}  // namespace

Result<Rx> parse_regex(std::string_view re, const RegexOptions& opt) {
  return RegexParser(re, opt).parse();
}

}  // namespace novaserve::grammar
