// The JSON tokens a schema constrains, as regular expressions (regex_ast.h): strings with length
// bounds, numbers and integers with exact ranges, and string formats as strict subsets of their
// RFC definitions. Source for the syntax: RFC 8259 (JSON), RFC 3339 (date/time), RFC 4122 (UUID),
// RFC 3986 (URI), RFC 5321/5322 (e-mail, dot-atom subset), RFC 1123 (host names).
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "common/result.h"
#include "grammar/regex_ast.h"

namespace novaserve::grammar::json_rx {

/// One JSON string character as it appears between quotes: a raw scalar value other than ",
/// \ and U+0000..U+001F, or an escape (\" \\ \/ \b \f \n \r \t, \uXXXX for a non-surrogate,
/// a \uD8xx\uDCxx surrogate pair). Counts as one character for minLength/maxLength.
Rx string_char();
/// A quoted JSON string of min..max characters (max < 0: unbounded). Bounded strings accept the
/// spellings compact serializers produce: raw characters, short escapes and \u00XX for control
/// characters (not \uXXXX for others), a subset.
Rx string(int64_t min, int64_t max);
/// `content` between quotes.
Rx quoted(Rx content);
/// JSON number (RFC 8259 grammar) and integer (-?(0|[1-9][0-9]*)).
Rx number();
Rx integer();
/// Integers in [lo, hi] (either side open when absent), exactly, without leading zeros or "-0".
/// Error (kInvalidInput): lo > hi ("unsatisfiable").
Result<Rx> integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi);
/// Numbers in the range given by integral bounds (each inclusive or exclusive, or absent),
/// written without exponent (a subset of the JSON spellings; every value in range has one).
Result<Rx> number_range(std::optional<int64_t> lo, bool lo_exclusive, std::optional<int64_t> hi,
                        bool hi_exclusive);

/// The string content (without quotes) for a JSON Schema `format`: date, time, date-time,
/// uuid, email, uri, ipv4, hostname (strict subsets, see the header comment). std::nullopt for
/// formats that are annotations only here (unknown names). Error (kInvalidInput): formats that
/// validators check but this engine cannot generate exactly (ipv6, uri-reference, iri, ...).
Result<std::optional<Rx>> format(std::string_view name);

}  // namespace novaserve::grammar::json_rx
