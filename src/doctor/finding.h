// One result of `novaserve doctor`: what is wrong, the file and value that show it, and the fix.
#pragma once

#include <string>
#include <vector>

namespace novaserve::doctor {

/// error: the GPU or the server cannot work (doctor exits 1); warning: it works, but slower or
/// less reliably than it should; info: a tunable worth knowing, or a check that could not run.
enum class Severity { kError, kWarning, kInfo };

/// "error", "warning" or "info".
const char* severity_name(Severity s);

/// One file read and the value found there ("missing" when it was absent).
struct Evidence {
  std::string file;
  std::string value;
};

/// A finding. `id` is stable (docs/operations.md documents each one), `fix` is one short
/// command or setting.
struct Finding {
  std::string id;
  Severity severity = Severity::kInfo;
  std::string summary;
  std::vector<Evidence> evidence;
  std::string fix;
};

/// The [info] finding `id` saying that its check could not run because `path` is missing
/// (evidence: `path`, "missing").
Finding not_checked(const std::string& id, const std::string& path, const std::string& fix);

/// `text` with every byte outside printable ASCII (below 0x20, 0x7f and above) written as
/// \xNN, so that a garbage file's bytes cannot make the report binary to grep or a terminal.
std::string printable(const std::string& text);

/// printable() applied to every string of `f`.
void make_printable(Finding& f);

}  // namespace novaserve::doctor
