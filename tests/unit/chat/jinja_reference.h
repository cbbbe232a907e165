// Test helper: renders templates with Python jinja2 through tools/reference/render_templates.py
// (Hugging Face's chat-template environment) using the project's .venv interpreter.
#pragma once

#include <ctime>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace novaserve::testing {

/// The time strftime_now is pinned to, in both renderers: 2025-01-15 09:30:00 (a Wednesday).
inline constexpr const char* kPinnedNowIso = "2025-01-15T09:30:00";
std::tm pinned_now();

struct ReferenceJob {
  std::string id;
  std::string source;
  nlohmann::ordered_json context;
};

struct ReferenceResult {
  bool ok = false;
  std::string text;   ///< rendered output when ok
  std::string error;  ///< "ExceptionType: message" when not ok
};

/// Path of the .venv python with jinja2 importable, or nullopt with `why` set.
std::optional<std::string> reference_python(std::string* why);

/// Renders all jobs with jinja2. Returns nullopt (with `why`) if the script could not run.
std::optional<std::map<std::string, ReferenceResult>> run_reference(
    const std::vector<ReferenceJob>& jobs, std::string* why);

/// Source tree root (env NOVASERVE_SOURCE_DIR, else the compile-time path).
std::string source_dir();
/// Shared data root (env NOVASERVE_SHARED_DIR, else source_dir()/../shared).
std::string shared_dir();

}  // namespace novaserve::testing
