#include "doctor/finding.h"

#include <cstdio>

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

Finding not_checked(const std::string& id, const std::string& path, const std::string& fix) {
  return {id, Severity::kInfo, "not checked: " + path + " is missing", {{path, "missing"}}, fix};
}

std::string printable(const std::string& text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
    const auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f) {
      out += c;
      continue;
    }
    char esc[5];
    std::snprintf(esc, sizeof esc, "\\x%02x", b);
    out += esc;
  }
  return out;
}

void make_printable(Finding& f) {
  f.summary = printable(f.summary);
  f.fix = printable(f.fix);
  for (auto& e : f.evidence) {
    e.file = printable(e.file);
    e.value = printable(e.value);
  }
}

}  // namespace novaserve::doctor
