#include "grammar/gbnf_parser.h"

#include <algorithm>
#include <cctype>
#include <string>
#include <unordered_map>

#include "grammar/utf8_class.h"

namespace novaserve::grammar {
namespace {

constexpr int kMaxNesting = 200;  // parentheses; deeper input is refused, not recursed into

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view src) : src_(src) {}

  Result<Grammar> parse() {
    skip_space();
    while (pos_ < src_.size()) {
      NOVASERVE_RETURN_IF_ERROR(parse_rule());
      skip_space();
    }
    for (const auto& [name, info] : rules_) {
      if (!info.defined) return error_at(info.first_use, "undefined rule '" + name + "'");
    }
    auto root = rules_.find("root");
    if (root == rules_.end()) return error_at(src_.size(), "no 'root' rule");
    if (b_.overflow()) return error_at(src_.size(), "grammar too large");
    return finish_grammar(b_.take_rules(), root->second.id);
  }

 private:
  struct RuleInfo {
    uint32_t id;
    bool defined;
    size_t first_use;
  };

  Error error_at(size_t offset, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < offset && i < src_.size(); ++i) {
      if (src_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    return Err(ErrorCode::kInvalidInput, "GBNF line " + std::to_string(line) + ", column " +
                                             std::to_string(col) + ": " + what);
  }

  void skip_space() {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
        ++pos_;
      } else if (c == '#') {
        while (pos_ < src_.size() && src_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  size_t name_end(size_t p) const {
    while (p < src_.size() && is_name_char(src_[p])) ++p;
    return p;
  }

  // True when a `name ::=` starts at pos_ (the next rule's head).
  bool at_rule_head() {
    const size_t e = name_end(pos_);
    if (e == pos_) return false;
    const size_t save = pos_;
    pos_ = e;
    skip_space();
    const bool head = src_.substr(pos_, 3) == "::=";
    pos_ = save;
    return head;
  }

  uint32_t rule_id(const std::string& name, size_t at, bool define) {
    auto [it, fresh] = rules_.try_emplace(name, RuleInfo{0, false, at});
    if (fresh) it->second.id = b_.new_rule(name);
    if (define) it->second.defined = true;
    return it->second.id;
  }

  Status parse_rule() {
    const size_t start = pos_;
    const size_t e = name_end(pos_);
    if (e == pos_) return error_at(pos_, "expected a rule name");
    const std::string name(src_.substr(pos_, e - pos_));
    pos_ = e;
    skip_space();
    if (src_.substr(pos_, 3) != "::=") return error_at(pos_, "expected '::=' after rule name");
    pos_ += 3;
    auto it = rules_.find(name);
    if (it != rules_.end() && it->second.defined) {
      return error_at(start, "rule '" + name + "' defined twice");
    }
    const uint32_t id = rule_id(name, start, true);
    std::vector<Seq> alts;
    NOVASERVE_RETURN_IF_ERROR(parse_alternates(alts, 0));
    for (auto& a : alts) b_.add_alt(id, std::move(a));
    return {};
  }

  Status parse_alternates(std::vector<Seq>& alts, int depth) {
    while (true) {
      Seq seq;
      NOVASERVE_RETURN_IF_ERROR(parse_sequence(seq, depth));
      alts.push_back(std::move(seq));
      skip_space();
      if (pos_ < src_.size() && src_[pos_] == '|') {
        ++pos_;
        continue;
      }
      return {};
    }
  }

  Status parse_sequence(Seq& seq, int depth) {
    while (true) {
      skip_space();
      if (pos_ >= src_.size()) return {};
      const char c = src_[pos_];
      if (c == '|' || c == ')') return {};
      if (depth == 0 && at_rule_head()) return {};
      Seq item;
      NOVASERVE_RETURN_IF_ERROR(parse_primary(item, depth));
      NOVASERVE_RETURN_IF_ERROR(parse_postfix(item));
      append(seq, item);
      if (b_.overflow()) return error_at(pos_, "grammar too large");
    }
  }

  Status parse_postfix(Seq& item) {
    while (pos_ < src_.size()) {
      const char c = src_[pos_];
      if (c == '*') {
        item = b_.star(item);
      } else if (c == '+') {
        Seq s = item;
        append(s, b_.star(item));
        item = std::move(s);
      } else if (c == '?') {
        item = b_.optional(item);
      } else if (c == '{') {
        const size_t at = pos_;
        ++pos_;
        int64_t m = 0, n = -1;
        if (!read_int(&m)) return error_at(at, "expected a number after '{'");
        n = m;
        if (pos_ < src_.size() && src_[pos_] == ',') {
          ++pos_;
          n = -1;
          if (pos_ < src_.size() && src_[pos_] != '}' && !read_int(&n)) {
            return error_at(pos_, "expected a number or '}'");
          }
        }
        if (pos_ >= src_.size() || src_[pos_] != '}') return error_at(pos_, "expected '}'");
        if (n >= 0 && n < m) return error_at(at, "repetition {m,n} with n < m");
        if (m > kMaxRepeat || n > kMaxRepeat) return error_at(at, "repetition bound too large");
        item = b_.repeat(item, m, n);
      } else {
        return {};
      }
      ++pos_;
    }
    return {};
  }

  bool read_int(int64_t* out) {
    const size_t start = pos_;
    int64_t v = 0;
    while (pos_ < src_.size() && src_[pos_] >= '0' && src_[pos_] <= '9') {
      v = std::min<int64_t>(v * 10 + (src_[pos_] - '0'), int64_t{1} << 40);
      ++pos_;
    }
    *out = v;
    return pos_ > start;
  }

  // One character of a string or class body, with escapes. Returns -1 after setting err_.
  int32_t read_char() {
    const size_t at = pos_;
    if (src_[pos_] != '\\') {
      const int32_t cp = decode_utf8(src_, &pos_);
      if (cp < 0) err_ = error_at(at, "invalid UTF-8");
      return cp;
    }
    if (++pos_ >= src_.size()) {
      err_ = error_at(at, "unfinished escape");
      return -1;
    }
    const char e = src_[pos_++];
    switch (e) {
      case 'n':
        return '\n';
      case 'r':
        return '\r';
      case 't':
        return '\t';
      case '\\':
      case '"':
      case '[':
      case ']':
      case '-':
      case '^':
      case '/':
      case '\'':
        return e;
      case 'x':
        return read_hex(2, at);
      case 'u':
        return read_hex(4, at);
      case 'U':
        return read_hex(8, at);
      default:
        err_ = error_at(at, std::string("unknown escape '\\") + e + "'");
        return -1;
    }
  }

  int32_t read_hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int k = 0; k < digits; ++k) {
      if (pos_ >= src_.size() || !std::isxdigit(static_cast<unsigned char>(src_[pos_]))) {
        err_ = error_at(at, "bad hex escape");
        return -1;
      }
      const char c = src_[pos_++];
      v = v * 16 + (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
    }
    if (v > kMaxCodepoint || (v >= 0xD800 && v <= 0xDFFF)) {
      err_ = error_at(at, "escape is not a Unicode scalar value");
      return -1;
    }
    return static_cast<int32_t>(v);
  }

  Status parse_primary(Seq& out, int depth) {
    const size_t at = pos_;
    const char c = src_[pos_];
    if (c == '"') {
      ++pos_;
      std::string bytes;
      while (pos_ < src_.size() && src_[pos_] != '"') {
        if (src_[pos_] == '\n') return error_at(pos_, "newline in string literal");
        const int32_t cp = read_char();
        if (cp < 0) return err_;
        bytes += encode_utf8(static_cast<uint32_t>(cp));
      }
      if (pos_ >= src_.size()) return error_at(at, "unterminated string literal");
      ++pos_;
      out = GrammarBuilder::literal(bytes);
      return {};
    }
    if (c == '[') {
      ++pos_;
      const bool negate = pos_ < src_.size() && src_[pos_] == '^';
      if (negate) ++pos_;
      CodepointRanges ranges;
      while (pos_ < src_.size() && src_[pos_] != ']') {
        const int32_t lo = read_char();
        if (lo < 0) return err_;
        int32_t hi = lo;
        if (pos_ + 1 < src_.size() && src_[pos_] == '-' && src_[pos_ + 1] != ']') {
          ++pos_;
          hi = read_char();
          if (hi < 0) return err_;
          if (hi < lo) return error_at(at, "character range out of order");
        }
        ranges.push_back({static_cast<uint32_t>(lo), static_cast<uint32_t>(hi)});
      }
      if (pos_ >= src_.size()) return error_at(at, "unterminated character class");
      ++pos_;
      ranges = normalize_ranges(std::move(ranges));
      if (negate) ranges = complement_ranges(ranges);
      out = codepoint_class(b_, ranges);
      return {};
    }
    if (c == '.') {
      ++pos_;
      out = codepoint_class(b_, complement_ranges({}));
      return {};
    }
    if (c == '(') {
      if (depth >= kMaxNesting) return error_at(at, "groups nested too deeply");
      ++pos_;
      std::vector<Seq> alts;
      NOVASERVE_RETURN_IF_ERROR(parse_alternates(alts, depth + 1));
      skip_space();
      if (pos_ >= src_.size() || src_[pos_] != ')') return error_at(at, "unclosed '('");
      ++pos_;
      out = alts.size() == 1 ? std::move(alts[0]) : b_.alt(std::move(alts));
      return {};
    }
    const size_t e = name_end(pos_);
    if (e == pos_) return error_at(at, std::string("unexpected character '") + c + "'");
    const std::string name(src_.substr(pos_, e - pos_));
    pos_ = e;
    out = {Element::ref(rule_id(name, at, false))};
    return {};
  }

  std::string_view src_;
  size_t pos_ = 0;
  GrammarBuilder b_;
  std::unordered_map<std::string, RuleInfo> rules_;
  Error err_;
};

}  // namespace

Result<Grammar> parse_gbnf(std::string_view source) {
  return GbnfParser(source).parse();
}

}  // namespace novaserve::grammar
