// GGUF writer (version 3 by default, v2 on request; the layouts are identical). Source: the GGUF
// specification (ggml docs/gguf.md), "File Structure".
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/result.h"
#include "gguf/gguf_value.h"
#include "quant/ggml_type.h"

namespace novaserve {

// Value constructors, so metadata reads `w.add("llama.block_count", gguf_u32(30))`.
GgufValue gguf_u8(uint8_t x);
GgufValue gguf_i8(int8_t x);
GgufValue gguf_u16(uint16_t x);
GgufValue gguf_i16(int16_t x);
GgufValue gguf_u32(uint32_t x);
GgufValue gguf_i32(int32_t x);
GgufValue gguf_u64(uint64_t x);
GgufValue gguf_i64(int64_t x);
GgufValue gguf_f32(float x);
GgufValue gguf_f64(double x);
GgufValue gguf_bool(bool x);
GgufValue gguf_string(std::string s);
/// An array of `elem_type` values; every item must have type `elem_type` (checked on write).
GgufValue gguf_array(GgufValueType elem_type, std::vector<GgufValue> items);
GgufValue gguf_string_array(const std::vector<std::string>& items);

/// Builds a GGUF file: metadata in insertion order, then tensor infos, then tensor data with each
/// tensor's offset a multiple of the alignment (general.alignment if set, else 32).
///
/// The writer encodes keys and values as given and does not re-check what the parser checks
/// (key syntax, duplicates), so tests can build malformed files; GgufFile::parse of the output
/// is the validation. Values whose variant does not match their `type` are programming errors
/// (NOVASERVE_CHECK).
class GgufWriter {
 public:
  explicit GgufWriter(uint32_t version = 3) : version_(version) {}

  /// Appends a key/value pair (a repeated key is written twice).
  void add(std::string key, GgufValue value);
  /// Sets general.alignment (uint32), replacing an earlier value. Precondition: power of two.
  void set_alignment(uint32_t alignment);

  /// Adds a tensor whose bytes are copied. `dims` are ggml ne[] (dims[0] innermost).
  /// Errors: kInvalidInput when dims are empty/over 4/zero, dims[0] is not a multiple of the
  /// type's block size, or data.size() differs from the size that dims and type imply.
  Status add_tensor(std::string name, GgmlType type, std::vector<uint64_t> dims,
                    std::vector<uint8_t> data);
  /// Like add_tensor but borrows `data` (nbytes implied by dims/type); it must stay valid until
  /// the last serialize()/write_file() call. Avoids copying large weights.
  Status add_tensor_ref(std::string name, GgmlType type, std::vector<uint64_t> dims,
                        const uint8_t* data);

  /// The alignment the output will use.
  uint64_t alignment() const;

  /// The whole file in memory.
  std::vector<uint8_t> serialize() const;
  /// Writes the file to `path` (streamed: tensor data is not copied into one buffer).
  /// Errors: kIo naming the path.
  Status write_file(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> dims;
    uint64_t nbytes = 0;
    std::vector<uint8_t> owned;
    const uint8_t* data = nullptr;  // owned.data() or the borrowed pointer
  };
  Result<uint64_t> check_tensor(const std::string& name, GgmlType type,
                                const std::vector<uint64_t>& dims) const;
  /// Header, metadata, tensor infos and padding up to the data section.
  std::vector<uint8_t> header() const;

  uint32_t version_;
  std::vector<GgufKv> kvs_;
  std::vector<Tensor> tensors_;
};

}  // namespace novaserve
