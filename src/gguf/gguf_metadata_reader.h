// Reading and validating the GGUF metadata key/value section (internal to src/gguf).
// Source: GGUF specification (ggml docs/gguf.md), "Standardized key-value pairs" and
// "gguf_metadata_value_type".
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "common/result.h"
#include "gguf/byte_cursor.h"
#include "gguf/gguf_value.h"

namespace novaserve {

/// Deepest array nesting accepted (an array of arrays is depth 2). Real files use depth 1; the
/// limit bounds recursion so hostile files cannot exhaust the stack.
inline constexpr int kGgufMaxArrayDepth = 8;

/// Most array items (summed over all arrays, nested ones included) one file may hold. Real
/// vocabularies hold about 1M (tokens + merges + scores + types of a 256k vocab). Items are
/// decoded into ~48-byte GgufValues, so without a cap a file of one-byte items would cost 48x its
/// size in memory.
inline constexpr uint64_t kGgufMaxArrayItems = uint64_t{1} << 24;

/// Longest key accepted; the spec limits keys to 2^16 - 1 bytes.
inline constexpr size_t kGgufMaxKeyBytes = 65535;

/// Smallest on-disk key/value pair: key length (8) + one key byte + value type (4) + one byte.
inline constexpr size_t kGgufMinKvBytes = 14;

/// Smallest on-disk encoding of a value of type `t` (string: its 8-byte length; array: type +
/// count). Used to reject counts that cannot fit in the bytes left. Precondition: t is known.
size_t gguf_value_min_bytes(GgufValueType t);

/// Maps an on-disk value type id into `out`; returns false for ids the spec does not define.
bool gguf_value_type_from_id(uint32_t id, GgufValueType& out);

/// Checks a metadata key: non-empty, at most kGgufMaxKeyBytes, valid UTF-8, and dot-separated
/// non-empty segments of [A-Za-z0-9_-] (the spec asks for lower_snake_case; we accept upper case
/// and '-' because real files use them). Error: kInvalidInput naming the problem (no offset).
Status validate_gguf_key(std::string_view key);

/// Reads `count` key/value pairs at the cursor into `out` (appending; each pair's byte offset goes
/// to `kv_offsets`). Rejects a count too large for the bytes left, invalid and
/// duplicate keys, unknown value types (kUnsupported), bool bytes other than 0/1, array and
/// string lengths past the end, array nesting deeper than kGgufMaxArrayDepth, and more than
/// kGgufMaxArrayItems array items in total (kUnsupported). Every message
/// names the key (or kv index) and the byte offset.
Status read_gguf_metadata(ByteCursor& cursor, uint64_t count, std::vector<GgufKv>& out,
                          std::vector<size_t>& kv_offsets);

}  // namespace novaserve
