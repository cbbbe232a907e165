#include "doctor/finding.h"

namespace novaserve::doctor {

const char* severity_name(Severity s) {
  switch (s) {
    case Severity::kError:
      return "error";
    case Severity::kWarning:
      return "warning";
    case Severity::kInfo:
      return "info";
  }
  return "info";
}

}  // namespace novaserve::doctor
