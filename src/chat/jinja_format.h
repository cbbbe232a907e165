// Python string formatting as templates use it: `"{} {}".format(a, b)` (str.format with the
// format-spec mini-language) and `"%s-%d" % (a, b)` (printf-style). Source: Python Language
// Reference, "Format Specification Mini-Language" and "printf-style String Formatting".
#pragma once

#include <string>
#include <string_view>

#include "chat/jinja_value.h"

namespace novaserve::jinja {

/// `fmt % args`: `args` is a tuple (positional), a dict (for %(name)s), or a single value.
/// Throws on malformed formats and on argument count/type mismatches, as Python does.
std::string percent_format(std::string_view fmt, const Value& args);

/// `fmt.format(*args, **kwargs)`: fields {}, {0}, {name}, with .attr / [key] lookups, !s / !r
/// conversions and a format spec ([[fill]align][sign][#][0][width][,|_][.precision][type]).
/// Nested fields inside a spec are not supported (TemplateError).
std::string str_format(std::string_view fmt, const CallArgs& args);

/// Python format(value, spec).
std::string format_value(const Value& v, std::string_view spec);

}  // namespace novaserve::jinja
