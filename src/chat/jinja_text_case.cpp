// Python's case mapping (str.upper/lower/title/capitalize, islower/isupper) for ASCII and
// Latin-1, and refusal for every other cased script (see jinja_text.h).
#include <cstdio>

#include "chat/jinja_error.h"
#include "chat/jinja_text.h"
#include "common/utf8.h"

namespace novaserve::jinja {
namespace {

// Code points outside ASCII/Latin-1 that have case mappings in Unicode (Latin Extended, IPA,
// Greek, Cyrillic, Armenian, Georgian, Cherokee, Glagolitic, fullwidth Latin, Deseret ...).
// Python maps them; we refuse them rather than get them wrong.
bool is_unsupported_cased(std::uint32_t cp) {
  static constexpr std::uint32_t kRanges[][2] = {
      {0x0100, 0x02AF},   {0x0345, 0x0345},   {0x0370, 0x03FF},   {0x0400, 0x052F},
      {0x0531, 0x0587},   {0x10A0, 0x10FF},   {0x13A0, 0x13FF},   {0x1C80, 0x1CBF},
      {0x1D00, 0x1DBF},   {0x1E00, 0x1FFF},   {0x2126, 0x2126},   {0x212A, 0x212B},
      {0x2132, 0x2132},   {0x214E, 0x214E},   {0x2160, 0x2188},   {0x24B6, 0x24E9},
      {0x2C00, 0x2D2F},   {0xA640, 0xA69F},   {0xA720, 0xA7FF},   {0xAB30, 0xABBF},
      {0xFB00, 0xFB17},   {0xFF21, 0xFF3A},   {0xFF41, 0xFF5A},   {0x10400, 0x104FF},
      {0x10570, 0x105BF}, {0x10C80, 0x10CFF}, {0x118A0, 0x118FF}, {0x16E40, 0x16E9F},
      {0x1E900, 0x1E95F},
  };
  for (const auto& r : kRanges) {
    if (cp >= r[0] && cp <= r[1]) return true;
  }
  return false;
}

void check_case_supported(std::uint32_t cp) {
  if (is_unsupported_cased(cp)) {
    char buf[128];
    std::snprintf(buf, sizeof(buf),
                  "case mapping of U+%04X is not supported (only ASCII and "
                  "Latin-1 letters)",
                  static_cast<unsigned>(cp));
    fail_unsupported(buf);
  }
}

bool is_lower_cp(std::uint32_t cp) {
  check_case_supported(cp);
  return (cp >= 'a' && cp <= 'z') || cp == 0xB5 || cp == 0xAA || cp == 0xBA ||
         (cp >= 0xDF && cp <= 0xFF && cp != 0xF7);
}

bool is_upper_cp(std::uint32_t cp) {
  check_case_supported(cp);
  return (cp >= 'A' && cp <= 'Z') || (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7);
}

// Python treats ª and º as lowercase letters without an uppercase form.
bool is_cased_cp(std::uint32_t cp) {
  return is_lower_cp(cp) || is_upper_cp(cp);
}

void append_upper(std::string& out, std::uint32_t cp, bool title) {
  check_case_supported(cp);
  if (cp >= 'a' && cp <= 'z') {
    out.push_back(static_cast<char>(cp - 32));
  } else if (cp == 0xDF) {
    out += title ? "Ss" : "SS";
  } else if (cp == 0xFF) {
    utf8::append_codepoint(out, 0x178);
  } else if (cp == 0xB5) {
    utf8::append_codepoint(out, 0x39C);
  } else if (cp >= 0xE0 && cp <= 0xFE && cp != 0xF7) {
    utf8::append_codepoint(out, cp - 32);
  } else {
    utf8::append_codepoint(out, cp);
  }
}

void append_lower(std::string& out, std::uint32_t cp) {
  check_case_supported(cp);
  if (cp >= 'A' && cp <= 'Z') {
    out.push_back(static_cast<char>(cp + 32));
  } else if (cp >= 0xC0 && cp <= 0xDE && cp != 0xD7) {
    utf8::append_codepoint(out, cp + 32);
  } else {
    utf8::append_codepoint(out, cp);
  }
}

}  // namespace

std::string py_upper(std::string_view s) {
  std::string out;
  for_each_code_point(s, [&](std::uint32_t cp) { append_upper(out, cp, false); });
  return out;
}

std::string py_lower(std::string_view s) {
  std::string out;
  for_each_code_point(s, [&](std::uint32_t cp) { append_lower(out, cp); });
  return out;
}

std::string py_title(std::string_view s) {
  std::string out;
  bool prev_cased = false;
  for_each_code_point(s, [&](std::uint32_t cp) {
    if (prev_cased) {
      append_lower(out, cp);
    } else {
      append_upper(out, cp, true);
    }
    prev_cased = is_cased_cp(cp);
  });
  return out;
}

std::string py_capitalize(std::string_view s) {
  std::string out;
  bool first = true;
  for_each_code_point(s, [&](std::uint32_t cp) {
    if (first) {
      append_upper(out, cp, true);
    } else {
      append_lower(out, cp);
    }
    first = false;
  });
  return out;
}

std::string jinja_title(std::string_view s) {
  std::string out;
  bool word_start = true;
  for_each_code_point(s, [&](std::uint32_t cp) {
    bool sep = cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' || is_py_space(cp);
    if (sep) {
      utf8::append_codepoint(out, cp);
      word_start = true;
    } else if (word_start) {
      append_upper(out, cp, false);
      word_start = false;
    } else {
      append_lower(out, cp);
    }
  });
  return out;
}

bool py_islower(std::string_view s) {
  bool any_cased = false, ok = true;
  for_each_code_point(s, [&](std::uint32_t cp) {
    if (is_upper_cp(cp)) ok = false;
    if (is_lower_cp(cp)) any_cased = true;
  });
  return ok && any_cased;
}

bool py_isupper(std::string_view s) {
  bool any_cased = false, ok = true;
  for_each_code_point(s, [&](std::uint32_t cp) {
    if (is_lower_cp(cp)) ok = false;
    if (is_upper_cp(cp)) any_cased = true;
  });
  return ok && any_cased;
}

}  // namespace novaserve::jinja
