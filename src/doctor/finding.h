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

}  // namespace novaserve::doctor
