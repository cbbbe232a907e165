// The CLI error contract shared by every subcommand: one line on stderr, then an exit code.
#pragma once

#include <cstdio>
#include <string>

namespace novaserve {

/// Prints "novaserve COMMAND: error: MESSAGE" as one line (newlines in the message become
/// spaces) and returns `code` (2, the usage/bad-input exit status, unless given).
inline int cli_error(const char* command, std::string message, int code = 2) {
  for (char& c : message) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  std::fprintf(stderr, "novaserve %s: error: %s\n", command, message.c_str());
  return code;
}

}  // namespace novaserve
