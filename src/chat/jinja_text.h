// Python str semantics over UTF-8 strings, as jinja2 applies them to template values.
// Python strings index by code point; ours are UTF-8 bytes, so every length, index and slice goes
// through the code point helpers here. Functions that cannot reproduce Python exactly (case
// mapping of non-Latin-1 letters) fail with a TemplateError instead of guessing.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace novaserve::jinja {

/// Byte offsets of each code point of `s`, plus s.size() at the end (size = code points + 1).
/// Invalid UTF-8 bytes count as one code point each.
std::vector<size_t> code_point_offsets(std::string_view s);
/// Number of code points (Python len(str)).
size_t code_point_count(std::string_view s);
/// Decodes the code point at byte `pos`; sets `len` to its byte length (1 for invalid bytes).
std::uint32_t decode_code_point(std::string_view s, size_t pos, size_t* len);

/// Calls f(code_point) for each code point of s (invalid bytes count as one code point each).
template <typename F>
void for_each_code_point(std::string_view s, F&& f) {
  size_t pos = 0;
  while (pos < s.size()) {
    size_t len = 0;
    std::uint32_t cp = decode_code_point(s, pos, &len);
    f(cp);
    pos += len;
  }
}

/// Python str.isspace() for one code point.
bool is_py_space(std::uint32_t cp);

/// Python str.strip/lstrip/rstrip: `chars` absent strips whitespace, else any code point in it.
std::string py_strip(std::string_view s, const std::optional<std::string>& chars, bool left,
                     bool right);
/// Python str.split / str.rsplit. `sep` absent splits on whitespace runs. maxsplit < 0: no limit.
/// Fails on an empty separator (Python's ValueError).
std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep,
                                  std::int64_t maxsplit, bool from_right);
/// Python str.replace (count < 0: all). An empty `old` inserts `repl` around every code point.
std::string py_replace(std::string_view s, std::string_view old, std::string_view repl,
                       std::int64_t count);
/// Python str.splitlines(keepends=False), on \n, \r, \r\n and the other Unicode line breaks.
std::vector<std::string> py_splitlines(std::string_view s);

/// Python str.upper()/lower()/title()/capitalize()/swapcase(). ASCII and Latin-1 letters are
/// mapped exactly; any other cased letter (Greek, Cyrillic, Latin Extended ...) fails with a
/// TemplateError naming the code point, rather than produce a prompt that differs from Python.
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);
std::string py_capitalize(std::string_view s);
/// jinja2's `title` filter: each run of characters between separators (- whitespace ( { [ <)
/// gets its first character upper-cased and the rest lower-cased.
std::string jinja_title(std::string_view s);
/// Python str.islower()/isupper() (same Latin-1 limit as py_upper).
bool py_islower(std::string_view s);
bool py_isupper(std::string_view s);

/// Python repr(float) / str(float): shortest round-trip digits, exponent form when the decimal
/// exponent is < -4 or >= 16 ("1e-05", "1e+16"), otherwise fixed with at least one decimal
/// ("5.0"), "inf", "-inf", "nan". Source: Python's float_repr_style 'short' (PyOS_double_to_string
/// with mode 'r').
std::string py_float_repr(double d);
/// Python repr(str): single quotes unless the text has ' and no ", escapes \\ \n \r \t, the quote,
/// and non-printable code points (\xNN, \uNNNN).
std::string py_str_repr(std::string_view s);

/// Python int(s, base) for base 10 / 0 (prefixes) / 2..36; nullopt where Python raises ValueError
/// or the value does not fit in int64.
std::optional<std::int64_t> py_parse_int(std::string_view s, int base);
/// Python float(s); nullopt where Python raises ValueError.
std::optional<double> py_parse_float(std::string_view s);

}  // namespace novaserve::jinja
