#include "chat/jinja_lexer.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "chat/jinja_text.h"
#include "common/utf8.h"

namespace novaserve::jinja {
namespace {

// jinja2's lexer normalises every newline sequence to "\n" and drops one trailing newline.
std::string normalize_source(std::string_view src) {
  std::string out;
  out.reserve(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (src[i] == '\r') {
      out.push_back('\n');
      if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
    } else {
      out.push_back(src[i]);
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// Python str.rstrip() with no argument.
std::string_view rstrip_space(std::string_view s) {
  std::vector<size_t> off = code_point_offsets(s);
  size_t e = off.size() - 1;
  size_t len = 0;
  while (e > 0 && is_py_space(decode_code_point(s, off[e - 1], &len))) --e;
  return s.substr(0, off[e]);
}

// Length of the whitespace run (regex \s*) at `pos`.
size_t space_run(std::string_view s, size_t pos) {
  size_t p = pos, len = 0;
  while (p < s.size() && is_py_space(decode_code_point(s, p, &len))) p += len;
  return p - pos;
}

bool is_hex(char c) {
  return std::isxdigit(static_cast<unsigned char>(c)) != 0;
}

// Python's "unicode-escape" decoding, which jinja2 applies to string literals.
std::string decode_string_literal(std::string_view body) {
  std::string out;
  for (size_t i = 0; i < body.size(); ++i) {
    char c = body[i];
    if (c != '\\' || i + 1 >= body.size()) {
      out.push_back(c);
      continue;
    }
    char e = body[++i];
    switch (e) {
      case '\n':
        break;
      case '\\':
        out.push_back('\\');
        break;
      case '\'':
        out.push_back('\'');
        break;
      case '"':
        out.push_back('"');
        break;
      case 'a':
        out.push_back('\a');
        break;
      case 'b':
        out.push_back('\b');
        break;
      case 'f':
        out.push_back('\f');
        break;
      case 'n':
        out.push_back('\n');
        break;
      case 'r':
        out.push_back('\r');
        break;
      case 't':
        out.push_back('\t');
        break;
      case 'v':
        out.push_back('\v');
        break;
      case 'x':
      case 'u':
      case 'U': {
        size_t n = e == 'x' ? 2 : e == 'u' ? 4 : 8;
        std::string hex(body.substr(i + 1, n));
        if (hex.size() != n || !std::all_of(hex.begin(), hex.end(), is_hex)) {
          fail("truncated \\" + std::string(1, e) + " escape in string literal");
        }
        auto cp = static_cast<std::uint32_t>(std::strtoul(hex.c_str(), nullptr, 16));
        if (cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) {
          fail("string literal escape \\" + std::string(1, e) + hex +
               " is not a valid Unicode scalar value");
        }
        utf8::append_codepoint(out, cp);
        i += n;
        break;
      }
      case 'N':
        fail("\\N{...} escapes in string literals are not supported");
      default:
        if (e >= '0' && e <= '7') {
          std::uint32_t cp = static_cast<std::uint32_t>(e - '0');
          for (int k = 0; k < 2 && i + 1 < body.size() && body[i + 1] >= '0' && body[i + 1] <= '7';
               ++k) {
            cp = cp * 8 + static_cast<std::uint32_t>(body[++i] - '0');
          }
          utf8::append_codepoint(out, cp);
        } else {
          out.push_back('\\');
          out.push_back(e);
        }
    }
  }
  return out;
}

class Lexer {
 public:
  explicit Lexer(std::string_view source) : src_(normalize_source(source)) {}

  std::vector<Token> run() {
    while (pos_ < src_.size()) {
      size_t start = find_tag_start(pos_);
      if (start == std::string::npos) {
        emit_data(std::string_view(src_).substr(pos_));
        advance_to(src_.size());
        break;
      }
      char kind = src_[start + 1];
      char sign = start + 2 < src_.size() && (src_[start + 2] == '-' || src_[start + 2] == '+')
                      ? src_[start + 2]
                      : 0;
      std::string_view text = std::string_view(src_).substr(pos_, start - pos_);
      size_t raw_end = kind == '%' ? match_raw_begin(start) : 0;
      emit_data(strip_before_tag(text, sign, kind != '{'));
      advance_to(start);
      if (raw_end != 0) {
        advance_to(raw_end);
        lex_raw_body();
      } else if (kind == '#') {
        lex_comment(start + 2 + (sign ? 1 : 0));
      } else {
        lex_tag(kind, start + 2 + (sign ? 1 : 0));
      }
    }
    push(TokenType::kEof, "");
    return std::move(tokens_);
  }

 private:
  size_t find_tag_start(size_t from) const {
    for (size_t p = src_.find('{', from); p != std::string::npos; p = src_.find('{', p + 1)) {
      if (p + 1 < src_.size() && (src_[p + 1] == '{' || src_[p + 1] == '%' || src_[p + 1] == '#')) {
        return p;
      }
    }
    return std::string::npos;
  }

  // Applies `-` (strip all) or lstrip_blocks to the data before a tag.
  std::string_view strip_before_tag(std::string_view text, char sign, bool is_block) const {
    if (sign == '-') return rstrip_space(text);
    if (sign == '+' || !is_block) return text;
    size_t nl = text.rfind('\n');
    size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
    if (l_pos == 0 && !line_starting_) return text;
    for (size_t i = l_pos; i < text.size(); ++i) {
      if (text[i] != ' ' && text[i] != '\t') return text;
    }
    return text.substr(0, l_pos);
  }

  // {%(-|+)?\s*raw\s*(-%}\s*|%})  -> returns the end offset, or 0 when this is no raw tag.
  size_t match_raw_begin(size_t start) const {
    size_t p = start + 2;
    if (p < src_.size() && (src_[p] == '-' || src_[p] == '+')) ++p;
    p += space_run(src_, p);
    if (src_.compare(p, 3, "raw") != 0) return 0;
    p += 3;
    size_t ws = space_run(src_, p);
    p += ws;
    if (src_.compare(p, 3, "-%}") == 0) return p + 3 + space_run(src_, p + 3);
    if (src_.compare(p, 2, "%}") == 0) return p + 2;
    return 0;
  }

  void lex_raw_body() {
    for (size_t p = src_.find("{%", pos_); p != std::string::npos; p = src_.find("{%", p + 1)) {
      size_t q = p + 2;
      char sign = q < src_.size() && (src_[q] == '-' || src_[q] == '+') ? src_[q] : 0;
      if (sign) ++q;
      q += space_run(src_, q);
      if (src_.compare(q, 6, "endraw") != 0) continue;
      q += 6;
      q += space_run(src_, q);
      size_t end = end_of_block_close(q);
      if (end == 0) continue;
      emit_data(strip_before_tag(std::string_view(src_).substr(pos_, p - pos_), sign, true));
      advance_to(end);
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail_at(line_, "missing end of raw directive");
  }

  // Matches `+%}`, `-%}\s*` or `%}\n?` at p; returns the end offset or 0.
  size_t end_of_block_close(size_t p) const {
    if (src_.compare(p, 3, "+%}") == 0) return p + 3;
    if (src_.compare(p, 3, "-%}") == 0) return p + 3 + space_run(src_, p + 3);
    if (src_.compare(p, 2, "%}") == 0) {
      return p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n' ? 1 : 0);
    }
    return 0;
  }

  void lex_comment(size_t body_start) {
    for (size_t p = src_.find("#}", body_start); p != std::string::npos;
         p = src_.find("#}", p + 1)) {
      size_t end;
      if (p > body_start && src_[p - 1] == '-') {
        end = p + 2 + space_run(src_, p + 2);
      } else if (p > body_start && src_[p - 1] == '+') {
        end = p + 2;
      } else {
        end = p + 2 + (p + 2 < src_.size() && src_[p + 2] == '\n' ? 1 : 0);
      }
      advance_to(end);
      line_starting_ = src_[end - 1] == '\n';
      return;
    }
    fail_at(line_, "missing end of comment tag");
  }

  void lex_tag(char kind, size_t p) {
    bool block = kind == '%';
    int open_line = line_;
    push(block ? TokenType::kBlockBegin : TokenType::kVariableBegin, "");
    advance_to(p);
    std::string balance;
    while (true) {
      if (pos_ >= src_.size()) {
        fail_at(open_line,
                std::string("unexpected end of template: missing '") + (block ? "%}" : "}}") + "'");
      }
      if (balance.empty()) {
        size_t end = block ? end_of_block_close(pos_) : end_of_variable_close(pos_);
        if (end != 0) {
          push(block ? TokenType::kBlockEnd : TokenType::kVariableEnd, "");
          advance_to(end);
          line_starting_ = src_[end - 1] == '\n';
          return;
        }
      }
      size_t ws = space_run(src_, pos_);
      if (ws > 0) {
        advance_to(pos_ + ws);
        continue;
      }
      lex_expression_token(&balance);
    }
  }

  size_t end_of_variable_close(size_t p) const {
    if (src_.compare(p, 3, "-}}") == 0) return p + 3 + space_run(src_, p + 3);
    if (src_.compare(p, 2, "}}") == 0) return p + 2;
    return 0;
  }

  void lex_expression_token(std::string* balance) {
    char c = src_[pos_];
    if (std::isdigit(static_cast<unsigned char>(c))) {
      lex_number();
    } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t e = pos_;
      while (e < src_.size() &&
             (std::isalnum(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
        ++e;
      }
      push(TokenType::kName, src_.substr(pos_, e - pos_));
      advance_to(e);
    } else if (c == '\'' || c == '"') {
      size_t e = pos_ + 1;
      while (e < src_.size() && src_[e] != c) e += src_[e] == '\\' ? 2 : 1;
      if (e >= src_.size()) fail_at(line_, "unterminated string literal");
      Token t;
      t.type = TokenType::kString;
      t.line = line_;
      try {
        t.text = decode_string_literal(std::string_view(src_).substr(pos_ + 1, e - pos_ - 1));
      } catch (TemplateError& err) {
        err.line = line_;
        throw;
      }
      tokens_.push_back(std::move(t));
      advance_to(e + 1);
    } else {
      lex_operator(balance);
    }
  }

  void lex_number() {
    if (lex_prefixed_integer()) return;
    auto digits_end = [&](size_t p) {
      while (p < src_.size() && (std::isdigit(static_cast<unsigned char>(src_[p])) ||
                                 (src_[p] == '_' && p + 1 < src_.size() &&
                                  std::isdigit(static_cast<unsigned char>(src_[p + 1]))))) {
        ++p;
      }
      return p;
    };
    size_t e = digits_end(pos_);
    bool after_dot = pos_ > 0 && src_[pos_ - 1] == '.';
    bool is_float = false;
    if (!after_dot && e + 1 < src_.size() && src_[e] == '.' &&
        std::isdigit(static_cast<unsigned char>(src_[e + 1]))) {
      e = digits_end(e + 1);
      is_float = true;
    }
    if (!after_dot && e < src_.size() && (src_[e] == 'e' || src_[e] == 'E')) {
      size_t q = e + 1;
      if (q < src_.size() && (src_[q] == '+' || src_[q] == '-')) ++q;
      if (q < src_.size() && std::isdigit(static_cast<unsigned char>(src_[q]))) {
        e = digits_end(q);
        is_float = true;
      }
    }
    std::string text;
    for (size_t i = pos_; i < e; ++i) {
      if (src_[i] != '_') text.push_back(src_[i]);
    }
    Token t;
    t.line = line_;
    t.text = text;
    if (is_float) {
      t.type = TokenType::kFloat;
      t.float_value = std::strtod(text.c_str(), nullptr);
    } else {
      if (text.size() > 1 && text[0] == '0' && text.find_first_not_of('0') != std::string::npos) {
        fail_at(line_, "leading zeros in decimal integer literals are not permitted: " + text);
      }
      auto v = py_parse_int(text, 10);
      if (!v) fail_at(line_, "integer literal " + text + " does not fit in 64 bits");
      t.type = TokenType::kInteger;
      t.int_value = *v;
    }
    tokens_.push_back(std::move(t));
    advance_to(e);
  }

  // 0x1F, 0o17, 0b101 (with optional '_' between digits), as jinja2's integer rule allows.
  bool lex_prefixed_integer() {
    if (src_[pos_] != '0' || pos_ + 2 >= src_.size()) return false;
    char p = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[pos_ + 1])));
    int base = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
    if (base == 0) return false;
    size_t e = pos_ + 2;
    while (e < src_.size() &&
           (std::isxdigit(static_cast<unsigned char>(src_[e])) || src_[e] == '_')) {
      ++e;
    }
    auto v = py_parse_int(std::string_view(src_).substr(pos_, e - pos_), 0);
    if (!v) fail_at(line_, "invalid integer literal " + src_.substr(pos_, e - pos_));
    Token t;
    t.type = TokenType::kInteger;
    t.line = line_;
    t.text = src_.substr(pos_, e - pos_);
    t.int_value = *v;
    tokens_.push_back(std::move(t));
    advance_to(e);
    return true;
  }

  void lex_operator(std::string* balance) {
    static const char* kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    for (const char* op : kTwo) {
      if (src_.compare(pos_, 2, op) == 0) {
        push(TokenType::kOperator, op);
        advance_to(pos_ + 2);
        return;
      }
    }
    char c = src_[pos_];
    if (static_cast<unsigned char>(c) >= 0x80) {
      throw TemplateError{"non-ASCII identifiers in tags are not supported", line_, true};
    }
    if (std::string_view("+-/*%~[](){}<>=.:|,;").find(c) == std::string_view::npos) {
      fail_at(line_, "unexpected character '" + std::string(1, c) + "' in tag");
    }
    if (c == '(' || c == '[' || c == '{') {
      balance->push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
    } else if (c == ')' || c == ']' || c == '}') {
      if (balance->empty() || balance->back() != c) {
        fail_at(line_, "unexpected '" + std::string(1, c) + "'");
      }
      balance->pop_back();
    }
    push(TokenType::kOperator, std::string(1, c));
    advance_to(pos_ + 1);
  }

  void emit_data(std::string_view text) {
    if (!text.empty()) push(TokenType::kData, std::string(text));
  }

  void push(TokenType type, std::string text) {
    Token t;
    t.type = type;
    t.text = std::move(text);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }

  void advance_to(size_t p) {
    for (; pos_ < p; ++pos_) {
      if (src_[pos_] == '\n') ++line_;
    }
  }

  [[noreturn]] static void fail_at(int line, std::string message) {
    throw TemplateError{std::move(message), line};
  }

  std::string src_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source) {
  return Lexer(source).run();
}

}  // namespace novaserve::jinja
