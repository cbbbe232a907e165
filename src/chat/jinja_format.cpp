#include "chat/jinja_format.h"

#include <cmath>
#include <cstdio>
#include <optional>

#include "chat/jinja_error.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_text.h"
#include "common/utf8.h"

namespace novaserve::jinja {
namespace {

struct Spec {
  std::string fill = " ";
  char align = 0;  // < > ^ =
  char sign = '-';
  bool alt = false;
  bool zero = false;
  int width = -1;
  char grouping = 0;
  int precision = -1;
  char type = 0;
};

int parse_digits(std::string_view s, size_t* pos) {
  int n = 0;
  bool any = false;
  while (*pos < s.size() && std::isdigit(static_cast<unsigned char>(s[*pos]))) {
    n = n * 10 + (s[*pos] - '0');
    if (n > 100000) fail("format width/precision too large");
    ++*pos;
    any = true;
  }
  return any ? n : -1;
}

bool is_align(char c) {
  return c == '<' || c == '>' || c == '^' || c == '=';
}

Spec parse_spec(std::string_view s) {
  Spec spec;
  size_t pos = 0;
  size_t first_len = 0;
  if (!s.empty()) decode_code_point(s, 0, &first_len);
  if (first_len > 0 && first_len < s.size() && is_align(s[first_len])) {
    spec.fill = std::string(s.substr(0, first_len));
    spec.align = s[first_len];
    pos = first_len + 1;
  } else if (!s.empty() && is_align(s[0])) {
    spec.align = s[0];
    pos = 1;
  }
  if (pos < s.size() && (s[pos] == '+' || s[pos] == '-' || s[pos] == ' ')) spec.sign = s[pos++];
  if (pos < s.size() && s[pos] == '#') {
    spec.alt = true;
    ++pos;
  }
  if (pos < s.size() && s[pos] == '0') {
    spec.zero = true;
    ++pos;
  }
  spec.width = parse_digits(s, &pos);
  if (pos < s.size() && (s[pos] == ',' || s[pos] == '_')) spec.grouping = s[pos++];
  if (pos < s.size() && s[pos] == '.') {
    ++pos;
    spec.precision = parse_digits(s, &pos);
    if (spec.precision < 0) fail("format specifier missing precision");
  }
  if (pos < s.size()) spec.type = s[pos++];
  if (pos != s.size()) fail("invalid format specifier '" + std::string(s) + "'");
  return spec;
}

std::string group_digits(const std::string& digits, char sep) {
  if (sep == 0) return digits;
  size_t dot = digits.find_first_not_of("0123456789");
  std::string int_part = digits.substr(0, dot);
  std::string rest = dot == std::string::npos ? "" : digits.substr(dot);
  std::string out;
  for (size_t i = 0; i < int_part.size(); ++i) {
    if (i > 0 && (int_part.size() - i) % 3 == 0) out.push_back(sep);
    out.push_back(int_part[i]);
  }
  return out + rest;
}

std::string pad(const std::string& sign, const std::string& body, const Spec& spec,
                char default_align) {
  char align = spec.align != 0 ? spec.align : (spec.zero ? '=' : default_align);
  std::string fill = spec.align == 0 && spec.zero ? "0" : spec.fill;
  size_t len = code_point_count(sign) + code_point_count(body);
  size_t n = spec.width > static_cast<int>(len) ? static_cast<size_t>(spec.width) - len : 0;
  auto repeat = [&](size_t k) {
    std::string r;
    for (size_t i = 0; i < k; ++i) r += fill;
    return r;
  };
  switch (align) {
    case '<':
      return sign + body + repeat(n);
    case '^':
      return repeat(n / 2) + sign + body + repeat(n - n / 2);
    case '=':
      return sign + repeat(n) + body;
    default:
      return repeat(n) + sign + body;
  }
}

std::string sign_of(bool negative, char sign_mode) {
  if (negative) return "-";
  if (sign_mode == '+') return "+";
  if (sign_mode == ' ') return " ";
  return "";
}

std::string format_int(std::int64_t v, const Spec& spec) {
  bool neg = v < 0;
  std::uint64_t mag = neg ? 0 - static_cast<std::uint64_t>(v) : static_cast<std::uint64_t>(v);
  std::string digits, prefix;
  int base = 10;
  switch (spec.type) {
    case 'b':
      base = 2;
      prefix = "0b";
      break;
    case 'o':
      base = 8;
      prefix = "0o";
      break;
    case 'x':
      base = 16;
      prefix = "0x";
      break;
    case 'X':
      base = 16;
      prefix = "0X";
      break;
    case 'c': {
      std::string ch;
      utf8::append_codepoint(ch, static_cast<std::uint32_t>(v));
      return pad("", ch, spec, '<');
    }
    default:
      break;
  }
  do {
    int d = static_cast<int>(mag % static_cast<std::uint64_t>(base));
    digits.insert(digits.begin(), static_cast<char>(d < 10 ? '0' + d : 'a' + d - 10));
    mag /= static_cast<std::uint64_t>(base);
  } while (mag > 0);
  if (spec.type == 'X') {
    for (char& c : digits) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  }
  if (!spec.alt) prefix.clear();
  return pad(sign_of(neg, spec.sign) + prefix, group_digits(digits, spec.grouping), spec, '>');
}

std::string c_format_double(char type, int precision, bool alt, double v) {
  char fmt[16];
  std::snprintf(fmt, sizeof(fmt), "%%%s.%d%c", alt ? "#" : "", precision, type);
  char buf[512];
  int n = std::snprintf(buf, sizeof(buf), fmt, v);
  if (n < 0 || n >= static_cast<int>(sizeof(buf))) fail("formatted number too long");
  return std::string(buf, static_cast<size_t>(n));
}

std::string format_float(double v, const Spec& spec) {
  bool neg = std::signbit(v) && !std::isnan(v);
  double mag = std::fabs(v);
  std::string body;
  if (spec.type == 0 && spec.precision < 0) {
    body = py_float_repr(mag);
  } else if (spec.type == 0) {
    body = c_format_double('g', spec.precision == 0 ? 1 : spec.precision, spec.alt, mag);
    if (std::isfinite(mag) && body.find_first_of(".e") == std::string::npos) body += ".0";
  } else if (spec.type == '%') {
    body = c_format_double('f', spec.precision < 0 ? 6 : spec.precision, spec.alt, mag * 100) + "%";
  } else if (std::string_view("eEfFgG").find(spec.type) != std::string_view::npos) {
    int p = spec.precision < 0 ? 6 : spec.precision;
    if ((spec.type == 'g' || spec.type == 'G') && p == 0) p = 1;
    body = c_format_double(spec.type, p, spec.alt, mag);
  } else {
    fail(std::string("unknown format code '") + spec.type + "' for object of type 'float'");
  }
  return pad(sign_of(neg, spec.sign), group_digits(body, spec.grouping), spec, '>');
}

std::string truncate_code_points(const std::string& s, int precision) {
  if (precision < 0) return s;
  std::vector<size_t> off = code_point_offsets(s);
  if (static_cast<size_t>(precision) + 1 >= off.size()) return s;
  return s.substr(0, off[static_cast<size_t>(precision)]);
}

// Resolves "name.attr[key]" against the call arguments (positional index or keyword name).
Value resolve_field(std::string_view field, const CallArgs& args, size_t* auto_index) {
  size_t end = field.find_first_of(".[");
  std::string_view head = field.substr(0, end);
  Value v;
  if (head.empty()) {
    if (*auto_index >= args.positional.size()) fail("Replacement index out of range for format");
    v = args.positional[(*auto_index)++];
  } else if (std::isdigit(static_cast<unsigned char>(head[0]))) {
    auto idx = py_parse_int(head, 10);
    if (!idx || *idx < 0 || static_cast<size_t>(*idx) >= args.positional.size()) {
      fail("Replacement index " + std::string(head) + " out of range for format");
    }
    v = args.positional[static_cast<size_t>(*idx)];
  } else {
    bool found = false;
    for (const auto& [k, val] : args.keyword) {
      if (k == head) {
        v = val;
        found = true;
      }
    }
    if (!found) fail("format() has no argument named '" + std::string(head) + "'");
  }
  size_t pos = end == std::string_view::npos ? field.size() : end;
  while (pos < field.size()) {
    if (field[pos] == '.') {
      size_t next = field.find_first_of(".[", pos + 1);
      std::string name(field.substr(pos + 1, next - pos - 1));
      const Value* found = v.is_dict() ? v.dict().find(name) : nullptr;
      if (found == nullptr) fail("format field attribute '" + name + "' is not supported");
      v = *found;
      pos = next == std::string_view::npos ? field.size() : next;
    } else {
      size_t close = field.find(']', pos);
      if (close == std::string_view::npos) fail("Missing ']' in format string");
      std::string key(field.substr(pos + 1, close - pos - 1));
      const Value* found = nullptr;
      if (v.is_dict()) {
        found = v.dict().find(key);
      } else if (v.is_list()) {
        auto idx = py_parse_int(key, 10);
        if (idx && *idx >= 0 && static_cast<size_t>(*idx) < v.items().size()) {
          found = &v.items()[static_cast<size_t>(*idx)];
        }
      }
      if (found == nullptr) fail("format field key '" + key + "' not found");
      v = *found;
      pos = close + 1;
    }
  }
  return v;
}

}  // namespace

std::string format_value(const Value& v, std::string_view spec_text) {
  if (spec_text.empty()) return to_str(v);
  Spec spec = parse_spec(spec_text);
  if (v.is_int() || v.is_bool()) {
    if (spec.type == 0 && v.is_bool()) return pad("", to_str(v), spec, '<');
    if (std::string_view("eEfFgG%").find(spec.type) != std::string_view::npos && spec.type != 0) {
      return format_float(v.as_double(), spec);
    }
    if (spec.type != 0 && std::string_view("bcdoxXn").find(spec.type) == std::string_view::npos) {
      fail(std::string("unknown format code '") + spec.type + "' for object of type 'int'");
    }
    return format_int(v.as_int(), spec);
  }
  if (v.is_float()) return format_float(v.as_double(), spec);
  if (v.is_string()) {
    if (spec.type != 0 && spec.type != 's') {
      fail(std::string("unknown format code '") + spec.type + "' for object of type 'str'");
    }
    return pad("", truncate_code_points(v.str(), spec.precision), spec, '<');
  }
  fail("unsupported format string passed to " + std::string(type_name(v)) + ".__format__");
}

std::string str_format(std::string_view fmt, const CallArgs& args) {
  std::string out;
  size_t auto_index = 0;
  size_t i = 0;
  while (i < fmt.size()) {
    char c = fmt[i];
    if (c == '}') {
      if (i + 1 < fmt.size() && fmt[i + 1] == '}') {
        out.push_back('}');
        i += 2;
        continue;
      }
      fail("Single '}' encountered in format string");
    }
    if (c != '{') {
      out.push_back(c);
      ++i;
      continue;
    }
    if (i + 1 < fmt.size() && fmt[i + 1] == '{') {
      out.push_back('{');
      i += 2;
      continue;
    }
    size_t close = fmt.find('}', i + 1);
    if (close == std::string_view::npos) fail("Single '{' encountered in format string");
    std::string_view field = fmt.substr(i + 1, close - i - 1);
    if (field.find('{') != std::string_view::npos) {
      fail("nested replacement fields in str.format are not supported");
    }
    std::string_view spec;
    size_t colon = field.find(':');
    if (colon != std::string_view::npos) {
      spec = field.substr(colon + 1);
      field = field.substr(0, colon);
    }
    char conversion = 0;
    size_t bang = field.find('!');
    if (bang != std::string_view::npos) {
      if (bang + 2 != field.size()) fail("invalid conversion in format string");
      conversion = field[bang + 1];
      field = field.substr(0, bang);
    }
    Value v = resolve_field(field, args, &auto_index);
    if (conversion == 'r' || conversion == 'a') {
      v = Value(repr(v));
    } else if (conversion == 's') {
      v = Value(to_str(v));
    } else if (conversion != 0) {
      fail(std::string("Unknown conversion specifier ") + conversion);
    }
    out += format_value(v, spec);
    check_size(out.size());
    i = close + 1;
  }
  return out;
}

std::string percent_format(std::string_view fmt, const Value& args) {
  std::vector<Value> positional;
  const Dict* mapping = args.is_dict() ? &args.dict() : nullptr;
  if (args.is_tuple()) {
    positional = args.items();
  } else if (mapping == nullptr) {
    positional.push_back(args);
  }
  size_t next = 0;
  auto take = [&]() -> const Value& {
    if (next >= positional.size()) fail("not enough arguments for format string");
    return positional[next++];
  };
  std::string out;
  size_t i = 0;
  while (i < fmt.size()) {
    if (fmt[i] != '%') {
      out.push_back(fmt[i++]);
      continue;
    }
    ++i;
    const Value* named = nullptr;
    if (i < fmt.size() && fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string_view::npos || mapping == nullptr) fail("format requires a mapping");
      named = mapping->find(fmt.substr(i + 1, close - i - 1));
      if (named == nullptr) fail("key '" + std::string(fmt.substr(i + 1, close - i - 1)) + "'");
      i = close + 1;
    }
    Spec spec;
    spec.align = '>';
    for (; i < fmt.size() && std::string_view("-+ #0").find(fmt[i]) != std::string_view::npos;
         ++i) {
      if (fmt[i] == '-') spec.align = '<';
      if (fmt[i] == '+' || (fmt[i] == ' ' && spec.sign != '+')) spec.sign = fmt[i];
      if (fmt[i] == '#') spec.alt = true;
      if (fmt[i] == '0') spec.zero = true;
    }
    if (spec.align == '<') spec.zero = false;
    if (spec.zero) spec.align = '=', spec.fill = "0";
    spec.width = parse_digits(fmt, &i);
    if (i < fmt.size() && fmt[i] == '.') {
      ++i;
      spec.precision = std::max(0, parse_digits(fmt, &i));
    }
    while (i < fmt.size() && (fmt[i] == 'h' || fmt[i] == 'l' || fmt[i] == 'L')) ++i;
    if (i >= fmt.size()) fail("incomplete format");
    char conv = fmt[i++];
    if (conv == '%') {
      out.push_back('%');
      continue;
    }
    const Value& v = named != nullptr ? *named : take();
    switch (conv) {
      case 's':
      case 'r':
      case 'a': {
        std::string s = conv == 's' ? to_str(v) : repr(v);
        spec.zero = false;
        if (spec.align == '=') spec.align = '>', spec.fill = " ";
        out += pad("", truncate_code_points(s, spec.precision), spec, '>');
        break;
      }
      case 'd':
      case 'i':
      case 'u':
      case 'x':
      case 'X':
      case 'o': {
        if (!v.is_number() || (v.is_float() && conv != 'd' && conv != 'i' && conv != 'u')) {
          fail(std::string("%") + conv + " format: a real number is required, not " +
               std::string(type_name(v)));
        }
        spec.type = (conv == 'x' || conv == 'X' || conv == 'o') ? conv : 'd';
        std::int64_t n =
            v.is_float() ? static_cast<std::int64_t>(std::trunc(v.as_double())) : v.as_int();
        out += format_int(n, spec);
        break;
      }
      case 'e':
      case 'E':
      case 'f':
      case 'F':
      case 'g':
      case 'G': {
        if (!v.is_number()) {
          fail("must be real number, not " + std::string(type_name(v)));
        }
        spec.type = conv;
        out += format_float(v.as_double(), spec);
        break;
      }
      case 'c': {
        spec.type = 'c';
        if (v.is_string()) {
          out += pad("", v.str(), spec, '>');
        } else if (v.is_int()) {
          out += format_int(v.as_int(), spec);
        } else {
          fail("%c requires int or char");
        }
        break;
      }
      default:
        fail(std::string("unsupported format character '") + conv + "'");
    }
    check_size(out.size());
  }
  // Python skips this check when the argument supports indexing (PyMapping_Check: dicts, and
  // lists too), so `"abc" % [1]` is "abc".
  bool indexable_arg = args.is_dict() || (args.is_indexable_sequence() && !args.is_tuple());
  if (!indexable_arg && next < positional.size()) {
    fail("not all arguments converted during string formatting");
  }
  return out;
}

}  // namespace novaserve::jinja
