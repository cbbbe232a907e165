#include "chat/jinja_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/jinja_error.h"
#include "common/utf8.h"

namespace novaserve::jinja {
namespace {

bool is_line_break(std::uint32_t cp) {
  return cp == '\n' || cp == '\r' || cp == 0x0B || cp == 0x0C || cp == 0x1C || cp == 0x1D ||
         cp == 0x1E || cp == 0x85 || cp == 0x2028 || cp == 0x2029;
}

// Python's repr() escapes code points that str.isprintable() rejects. This covers the
// non-printable ones that occur in text: C0/C1 controls, non-ASCII spaces, format characters,
// surrogates and private use.
bool is_printable_cp(std::uint32_t cp) {
  if (cp < 0x20 || cp == 0x7F) return false;
  if (cp >= 0x80 && cp <= 0xA0) return false;
  if (cp == 0xAD || cp == 0x61C || cp == 0x1680 || cp == 0x180E) return false;
  if ((cp >= 0x2000 && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202F)) return false;
  if ((cp >= 0x205F && cp <= 0x206F) || cp == 0x3000 || cp == 0xFEFF) return false;
  if ((cp >= 0xD800 && cp <= 0xF8FF) || (cp >= 0xFFF9 && cp <= 0xFFFB)) return false;
  if (cp >= 0xF0000) return false;
  return true;
}

std::string_view trim_py_space(std::string_view s) {
  size_t b = 0;
  while (b < s.size() && (s[b] == ' ' || (s[b] >= '\t' && s[b] <= '\r'))) ++b;
  size_t e = s.size();
  while (e > b && (s[e - 1] == ' ' || (s[e - 1] >= '\t' && s[e - 1] <= '\r'))) --e;
  return s.substr(b, e - b);
}

// Python int()/float() accept '_' only between digits; returns the text without them, or
// nullopt when an underscore is misplaced.
std::optional<std::string> remove_digit_underscores(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      bool ok = i > 0 && i + 1 < s.size() && std::isalnum(static_cast<unsigned char>(s[i - 1])) &&
                std::isalnum(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

std::uint32_t decode_code_point(std::string_view s, size_t pos, size_t* len) {
  auto b0 = static_cast<unsigned char>(s[pos]);
  int n = b0 < 0x80 ? 1 : (b0 >> 5) == 0x6 ? 2 : (b0 >> 4) == 0xE ? 3 : (b0 >> 3) == 0x1E ? 4 : 0;
  if (n <= 1 || pos + n > s.size()) {
    *len = 1;
    return b0;
  }
  std::uint32_t cp = b0 & (0x7F >> n);
  for (int i = 1; i < n; ++i) {
    auto b = static_cast<unsigned char>(s[pos + i]);
    if ((b & 0xC0) != 0x80) {
      *len = 1;
      return b0;
    }
    cp = (cp << 6) | (b & 0x3F);
  }
  *len = static_cast<size_t>(n);
  return cp;
}

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  offsets.reserve(s.size() + 1);
  size_t pos = 0;
  while (pos < s.size()) {
    offsets.push_back(pos);
    size_t len = 0;
    decode_code_point(s, pos, &len);
    pos += len;
  }
  offsets.push_back(s.size());
  return offsets;
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for_each_code_point(s, [&](std::uint32_t) { ++n; });
  return n;
}

bool is_py_space(std::uint32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x1F) || cp == 0x85 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
         cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right) {
  std::vector<std::uint32_t> set;
  if (chars) for_each_code_point(*chars, [&](std::uint32_t cp) { set.push_back(cp); });
  auto strippable = [&](std::uint32_t cp) {
    return chars ? std::find(set.begin(), set.end(), cp) != set.end() : is_py_space(cp);
  };
  std::vector<size_t> off = code_point_offsets(s);
  size_t b = 0, e = off.size() - 1;
  size_t len = 0;
  while (left && b < e && strippable(decode_code_point(s, off[b], &len))) ++b;
  while (right && e > b && strippable(decode_code_point(s, off[e - 1], &len))) --e;
  return std::string(s.substr(off[b], off[e] - off[b]));
}

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  std::int64_t maxsplit, bool from_right) {
  std::vector<std::string> parts;
  if (sep && sep->empty()) fail("empty separator in split()");
  if (maxsplit < 0) maxsplit = INT64_MAX;
  if (sep) {
    if (!from_right) {
      size_t pos = 0;
      while (maxsplit-- > 0) {
        size_t hit = s.find(*sep, pos);
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(pos, hit - pos));
        pos = hit + sep->size();
      }
      parts.emplace_back(s.substr(pos));
    } else {
      size_t end = s.size();
      while (maxsplit-- > 0 && end >= sep->size()) {
        size_t hit = s.rfind(*sep, end - sep->size());
        if (hit == std::string_view::npos) break;
        parts.emplace_back(s.substr(hit + sep->size(), end - hit - sep->size()));
        end = hit;
      }
      parts.emplace_back(s.substr(0, end));
      std::reverse(parts.begin(), parts.end());
    }
    return parts;
  }
  // Whitespace split: runs of whitespace separate words; leading/trailing runs are dropped.
  std::vector<size_t> off = code_point_offsets(s);
  size_t n = off.size() - 1;
  size_t len = 0;
  auto space_at = [&](size_t i) { return is_py_space(decode_code_point(s, off[i], &len)); };
  if (!from_right) {
    size_t i = 0;
    while (true) {
      while (i < n && space_at(i)) ++i;
      if (i == n) break;
      if (maxsplit-- <= 0) {
        size_t e = n;
        while (e > i && space_at(e - 1)) --e;
        parts.emplace_back(s.substr(off[i], off[e] - off[i]));
        break;
      }
      size_t j = i;
      while (j < n && !space_at(j)) ++j;
      parts.emplace_back(s.substr(off[i], off[j] - off[i]));
      i = j;
    }
  } else {
    size_t i = n;
    while (true) {
      while (i > 0 && space_at(i - 1)) --i;
      if (i == 0) break;
      if (maxsplit-- <= 0) {
        size_t b = 0;
        while (b < i && space_at(b)) ++b;
        parts.emplace_back(s.substr(off[b], off[i] - off[b]));
        break;
      }
      size_t j = i;
      while (j > 0 && !space_at(j - 1)) --j;
      parts.emplace_back(s.substr(off[j], off[i] - off[j]));
      i = j;
    }
    std::reverse(parts.begin(), parts.end());
  }
  return parts;
}

std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       std::int64_t count) {
  if (count < 0) count = INT64_MAX;
  std::string out;
  if (old.empty()) {
    std::vector<size_t> off = code_point_offsets(s);
    for (size_t i = 0; i + 1 < off.size(); ++i) {
      if (count-- > 0) out += repl;
      out += s.substr(off[i], off[i + 1] - off[i]);
    }
    if (count > 0) out += repl;
    return out;
  }
  size_t pos = 0;
  while (count-- > 0) {
    size_t hit = s.find(old, pos);
    if (hit == std::string_view::npos) break;
    out += s.substr(pos, hit - pos);
    out += repl;
    pos = hit + old.size();
  }
  out += s.substr(pos);
  return out;
}

std::vector<std::string> py_splitlines(std::string_view s) {
  std::vector<std::string> lines;
  std::vector<size_t> off = code_point_offsets(s);
  size_t start = 0, len = 0;
  for (size_t i = 0; i + 1 < off.size(); ++i) {
    std::uint32_t cp = decode_code_point(s, off[i], &len);
    if (!is_line_break(cp)) continue;
    lines.emplace_back(s.substr(start, off[i] - start));
    start = off[i + 1];
    if (cp == '\r' && i + 2 < off.size() && s[off[i + 1]] == '\n') {
      ++i;
      start = off[i + 1];
    }
  }
  if (start < s.size()) lines.emplace_back(s.substr(start));
  return lines;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof(buf), d, std::chars_format::scientific);
  std::string sci(buf, res.ptr);  // "-1.2345e+02": shortest round-trip digits
  bool neg = sci[0] == '-';
  if (neg) sci.erase(0, 1);
  size_t e = sci.find('e');
  std::string digits;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] != '.') digits.push_back(sci[i]);
  }
  int exp10 = std::atoi(sci.c_str() + e + 1);
  int decpt = exp10 + 1;  // value = 0.<digits> * 10^decpt
  std::string out = neg ? "-" : "";
  if (decpt > -4 && decpt <= 16) {
    if (decpt <= 0) {
      out += "0." + std::string(static_cast<size_t>(-decpt), '0') + digits;
    } else if (static_cast<size_t>(decpt) >= digits.size()) {
      out += digits + std::string(static_cast<size_t>(decpt) - digits.size(), '0') + ".0";
    } else {
      out += digits.substr(0, static_cast<size_t>(decpt)) + "." +
             digits.substr(static_cast<size_t>(decpt));
    }
    return out;
  }
  out += digits.substr(0, 1);
  if (digits.size() > 1) out += "." + digits.substr(1);
  char ebuf[16];
  std::snprintf(ebuf, sizeof(ebuf), "e%c%02d", exp10 < 0 ? '-' : '+', std::abs(exp10));
  return out + ebuf;
}

std::string py_str_repr(std::string_view s) {
  bool has_single = s.find('\'') != std::string_view::npos;
  bool has_double = s.find('"') != std::string_view::npos;
  char quote = has_single && !has_double ? '"' : '\'';
  std::string out(1, quote);
  for_each_code_point(s, [&](std::uint32_t cp) {
    char buf[16];
    if (cp == '\\') {
      out += "\\\\";
    } else if (cp == static_cast<std::uint32_t>(quote)) {
      out += '\\';
      out += quote;
    } else if (cp == '\n') {
      out += "\\n";
    } else if (cp == '\r') {
      out += "\\r";
    } else if (cp == '\t') {
      out += "\\t";
    } else if (is_printable_cp(cp)) {
      utf8::append_codepoint(out, cp);
    } else {
      const char* fmt = cp < 0x100 ? "\\x%02x" : cp < 0x10000 ? "\\u%04x" : "\\U%08x";
      std::snprintf(buf, sizeof(buf), fmt, static_cast<unsigned>(cp));
      out += buf;
    }
  });
  out += quote;
  return out;
}

std::optional<std::int64_t> py_parse_int(std::string_view s, int base) {
  std::string_view t = trim_py_space(s);
  bool neg = false;
  if (!t.empty() && (t[0] == '+' || t[0] == '-')) {
    neg = t[0] == '-';
    t.remove_prefix(1);
  }
  if (base == 0 || base == 16 || base == 8 || base == 2) {
    if (t.size() > 2 && t[0] == '0') {
      char p = static_cast<char>(std::tolower(static_cast<unsigned char>(t[1])));
      int pb = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
      if (pb != 0 && (base == 0 || base == pb)) {
        base = pb;
        t.remove_prefix(t.size() > 3 && t[2] == '_' ? 3 : 2);
      }
    }
    if (base == 0) base = 10;
  }
  auto digits = remove_digit_underscores(t);
  if (!digits || digits->empty()) return std::nullopt;
  std::uint64_t mag = 0;
  auto res = std::from_chars(digits->data(), digits->data() + digits->size(), mag, base);
  if (res.ec != std::errc() || res.ptr != digits->data() + digits->size()) return std::nullopt;
  if (mag > static_cast<std::uint64_t>(INT64_MAX) + (neg ? 1 : 0)) return std::nullopt;
  return neg ? static_cast<std::int64_t>(0 - mag) : static_cast<std::int64_t>(mag);
}

std::optional<double> py_parse_float(std::string_view s) {
  std::string_view t = trim_py_space(s);
  std::string lower;
  for (char c : t) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
  std::string_view body = lower;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (body == "inf" || body == "infinity") return neg ? -HUGE_VAL : HUGE_VAL;
  if (body == "nan") return std::nan("");
  auto clean = remove_digit_underscores(t);
  if (!clean || clean->empty()) return std::nullopt;
  for (char c : *clean) {
    if (!std::isdigit(static_cast<unsigned char>(c)) && c != '.' && c != 'e' && c != 'E' &&
        c != '+' && c != '-') {
      return std::nullopt;  // strtod would also accept hex floats, Python does not
    }
  }
  char* end = nullptr;
  double d = std::strtod(clean->c_str(), &end);
  if (end != clean->c_str() + clean->size()) return std::nullopt;
  return d;
}

}  // namespace novaserve::jinja
