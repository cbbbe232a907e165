// The template engine's internal error. A tree-walking interpreter reports runtime errors from
// dozens of nested evaluation frames; an internal exception keeps each step readable. It never
// crosses the public API: ChatTemplate::parse and ChatTemplate::render catch it and return a
// Result error carrying the message and the template line.
#pragma once

#include <string>
#include <utility>

namespace novaserve::jinja {

struct TemplateError {
  std::string message;
  int line = 0;              ///< 1-based template line; 0 until the enclosing node fills it in
  bool unsupported = false;  ///< valid Jinja that this engine does not implement
};

/// Throws a TemplateError whose line the enclosing node will fill in.
[[noreturn]] inline void fail(std::string message) {
  throw TemplateError{std::move(message), 0};
}

/// Throws a TemplateError for a construct jinja2 supports and this engine does not.
[[noreturn]] inline void fail_unsupported(std::string message) {
  throw TemplateError{std::move(message), 0, true};
}

}  // namespace novaserve::jinja
