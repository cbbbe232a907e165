// Reading the JSON files of a Hugging Face checkpoint (config.json, tokenizer.json, ...), with
// errors that name the file and the key.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>

#include "common/result.h"

namespace novaserve {

/// Whole file as bytes. Errors: kNotFound (missing), kIo (a directory or unreadable), naming it.
Result<std::string> read_text_file(const std::string& path);

/// Parses `text` as JSON. Error: kInvalidInput naming `name` and the parser's position.
Result<nlohmann::json> parse_json_text(std::string_view text, const std::string& name);

/// read_text_file + parse_json_text.
Result<nlohmann::json> read_json_file(const std::string& path);

/// `obj[key]` as an integer in [min, max]; `fallback` when the key is absent or null and
/// `fallback` is given (>= min). Errors: kNotFound (absent, no fallback), kInvalidInput (not an
/// integer or out of range), naming `name` and the key.
Result<int64_t> json_int(const nlohmann::json& obj, const char* key, const std::string& name,
                         int64_t min, int64_t max, std::optional<int64_t> fallback = {});

/// `obj[key]` as a finite number > 0; `fallback` when absent or null. Errors as json_int.
Result<double> json_positive(const nlohmann::json& obj, const char* key, const std::string& name,
                             std::optional<double> fallback = {});

/// `obj[key]` as a bool; `fallback` when absent or null. Errors as json_int.
Result<bool> json_bool(const nlohmann::json& obj, const char* key, const std::string& name,
                       std::optional<bool> fallback = {});

/// `obj[key]` when `obj` is an object and the value is a string, else `fallback` (never throws:
/// for optional settings of untrusted files, where a wrong type means "not this shape").
std::string json_string_or(const nlohmann::json& obj, const char* key, std::string fallback);

/// `obj[key]` when `obj` is an object and the value is a bool, else `fallback` (never throws).
bool json_bool_or(const nlohmann::json& obj, const char* key, bool fallback);

}  // namespace novaserve
