// A CLI11 validator for options stored in unsigned integers (sizes, seeds).
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace novaserve {

/// Rejects a value written with a leading minus ("-5", "-5MiB") with "must not be negative, got
/// VALUE". CLI11 converts "-5" into a uint64_t field as 2^64 - 5 without an error, so an unsigned
/// option adds this with ->transform(not_negative()) after its other transforms: CLI11 runs
/// transforms in the reverse order they were added, so this one sees the text first.
inline CLI::Validator not_negative() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const size_t first = value.find_first_not_of(" \t");
        if (first != std::string::npos && value[first] == '-') {
          return "must not be negative, got " + value;
        }
        return std::string();
      },
      "", "NOT_NEGATIVE");
}

}  // namespace novaserve
