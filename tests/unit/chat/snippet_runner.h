// Test helper: small templates whose expected output was produced by Python jinja2 in Hugging
// Face's environment (tools/reference/render_templates.py). Each table is checked twice: our
// engine against the expected text, and (when the .venv has jinja2) jinja2 against the same
// text, so an expectation cannot drift from what jinja2 really does.
#pragma once

#include <vector>

namespace novaserve::testing {

struct Snippet {
  const char* name;
  const char* source;
  const char* context_json;  ///< render context (JSON object)
  const char* expected;      ///< nullptr: rendering must fail (jinja2 raises)
};

/// Renders each snippet with our engine (strftime_now pinned) and compares.
void expect_engine_matches(const std::vector<Snippet>& snippets);
/// Renders each snippet with jinja2 and compares; GTEST_SKIPs when jinja2 is unavailable.
void expect_jinja2_matches(const std::vector<Snippet>& snippets);

}  // namespace novaserve::testing
