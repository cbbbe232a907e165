// The CLI error contract shared by every subcommand: one line on stderr, then an exit code.
#pragma once

#include <cstdio>
#include <string>

#include "common/result.h"

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

/// cli_error for an error of starting or running the model, once the flags and files were
/// checked: exit 2 when it blames the input (is_input_error: a --layer-split the model cannot
/// take), with `context` (the model path) before the message; exit 1 for a failure at run time (a
/// pipeline rank missing, refused or lost, a device error), with the message alone.
inline int cli_run_error(const char* command, const std::string& context, const Error& e) {
  if (is_input_error(e.code)) return cli_error(command, context + ": " + e.message, 2);
  return cli_error(command, e.message, 1);
}

}  // namespace novaserve
