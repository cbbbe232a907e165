#include "jinja_reference.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace novaserve::testing {
namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out.push_back(c);
    }
  }
  return out + "'";
}

}  // namespace

std::tm pinned_now() {
  std::tm tm{};
  tm.tm_year = 2025 - 1900;
  tm.tm_mon = 0;
  tm.tm_mday = 15;
  tm.tm_hour = 9;
  tm.tm_min = 30;
  tm.tm_sec = 0;
  std::tm normalized = tm;
  timegm(&normalized);  // fills tm_wday / tm_yday
  tm.tm_wday = normalized.tm_wday;
  tm.tm_yday = normalized.tm_yday;
  return tm;
}

std::string source_dir() {
  if (const char* env = std::getenv("NOVASERVE_SOURCE_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return NOVASERVE_SOURCE_DIR;
}

std::string shared_dir() {
  if (const char* env = std::getenv("NOVASERVE_SHARED_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return source_dir() + "/../shared";
}

std::optional<std::string> reference_python(std::string* why) {
  std::string python = source_dir() + "/.venv/bin/python";
  if (!std::filesystem::exists(python)) {
    *why = python + " not found (run tools/setup.sh)";
    return std::nullopt;
  }
  std::string cmd = shell_quote(python) + " -c 'import jinja2' >/dev/null 2>&1";
  if (std::system(cmd.c_str()) != 0) {
    *why = "jinja2 is not installed in " + python + " (pip install -r tools/requirements-test.txt)";
    return std::nullopt;
  }
  return python;
}

std::optional<std::map<std::string, ReferenceResult>> run_reference(
    const std::vector<ReferenceJob>& jobs, std::string* why) {
  auto python = reference_python(why);
  if (!python) return std::nullopt;
  std::string dir_template =
      (std::filesystem::temp_directory_path() / "novaserve-jinja-XXXXXX").string();
  if (mkdtemp(dir_template.data()) == nullptr) {
    *why = "mkdtemp failed";
    return std::nullopt;
  }
  std::filesystem::path dir(dir_template);
  nlohmann::ordered_json spec;
  spec["now"] = kPinnedNowIso;
  spec["jobs"] = nlohmann::ordered_json::array();
  for (const auto& j : jobs) {
    spec["jobs"].push_back({{"id", j.id}, {"template", j.source}, {"context", j.context}});
  }
  std::ofstream(dir / "jobs.json") << spec.dump();
  std::string script = source_dir() + "/tools/reference/render_templates.py";
  std::string cmd = shell_quote(*python) + " " + shell_quote(script) + " " +
                    shell_quote((dir / "jobs.json").string()) + " " +
                    shell_quote((dir / "out.json").string()) + " 2>" +
                    shell_quote((dir / "stderr.txt").string());
  int rc = std::system(cmd.c_str());
  std::ifstream out(dir / "out.json");
  if (rc != 0 || !out) {
    std::ifstream err(dir / "stderr.txt");
    std::stringstream ss;
    ss << err.rdbuf();
    *why = "reference renderer failed (rc " + std::to_string(rc) + "): " + ss.str();
    std::filesystem::remove_all(dir);
    return std::nullopt;
  }
  auto parsed = nlohmann::json::parse(out);
  std::map<std::string, ReferenceResult> results;
  for (const auto& [id, r] : parsed["results"].items()) {
    ReferenceResult rr;
    rr.ok = r["ok"].get<bool>();
    if (rr.ok) {
      rr.text = r["text"].get<std::string>();
    } else {
      rr.error = r["error"].get<std::string>();
    }
    results[id] = rr;
  }
  std::filesystem::remove_all(dir);
  return results;
}

}  // namespace novaserve::testing
