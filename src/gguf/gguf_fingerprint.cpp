#include "gguf/gguf_fingerprint.h"

#include <algorithm>
#include <cstring>
#include <string_view>
#include <vector>

#include "common/splitmix64.h"

// FNV-1a rather than xxHash: the project already has it (common/splitmix64.h), libxxhash-dev is
// not one of the build's packages (tools/setup.sh) and a new build dependency would have to reach
// every build machine, the GPU ones included, while the few MiB hashed here take milliseconds
// even at FNV-1a's byte-at-a-time pace (docs/multi-gpu.md has the measurement).

namespace novaserve {
namespace {

// Feeds the bytes of trivially copyable values and of byte ranges into one running hash.
struct Hasher {
  uint64_t h = kFnv1a64Basis;
  void bytes(const void* p, size_t n) {
    h = fnv1a64(std::string_view(static_cast<const char*>(p), n), h);
  }
  template <typename T>
  void value(const T& v) {
    bytes(&v, sizeof v);
  }
  void text(const std::string& s) {
    value(static_cast<uint64_t>(s.size()));
    bytes(s.data(), s.size());
  }
};

// The value's on-disk type and its exact bits (floats as their double's bytes).
void hash_value(Hasher& hs, const GgufValue& v) {
  hs.value(static_cast<uint32_t>(v.type));
  if (const auto* u = std::get_if<uint64_t>(&v.v)) hs.value(*u);
  if (const auto* i = std::get_if<int64_t>(&v.v)) hs.value(*i);
  if (const auto* d = std::get_if<double>(&v.v)) hs.value(*d);
  if (const auto* b = std::get_if<bool>(&v.v)) hs.value(static_cast<uint8_t>(*b));
  if (const auto* s = std::get_if<std::string>(&v.v)) hs.text(*s);
  if (const auto* a = std::get_if<GgufArray>(&v.v)) {
    hs.value(static_cast<uint32_t>(a->elem_type));
    hs.value(static_cast<uint64_t>(a->items.size()));
    for (const GgufValue& item : a->items) hash_value(hs, item);
  }
}

void hash_tensor_sample(Hasher& hs, const uint8_t* data, uint64_t n) {
  const uint64_t sampled =
      2 * kFingerprintEdgeBytes + kFingerprintWindows * kFingerprintWindowBytes;
  if (n <= sampled) {
    hs.bytes(data, n);
    return;
  }
  hs.bytes(data, kFingerprintEdgeBytes);
  // Windows evenly spaced over the middle part, [edge, n - edge).
  const uint64_t middle = n - 2 * kFingerprintEdgeBytes;
  for (int w = 1; w <= kFingerprintWindows; ++w) {
    const uint64_t at = kFingerprintEdgeBytes + (middle - kFingerprintWindowBytes) *
                                                    static_cast<uint64_t>(w) /
                                                    static_cast<uint64_t>(kFingerprintWindows + 1);
    hs.bytes(data + at, kFingerprintWindowBytes);
  }
  hs.bytes(data + n - kFingerprintEdgeBytes, kFingerprintEdgeBytes);
}

}  // namespace

uint64_t gguf_fingerprint(const GgufFile& file) {
  Hasher hs;
  std::string prefix;
  if (const GgufValue* arch = file.find("general.architecture");
      arch != nullptr && arch->type == GgufValueType::kString) {
    prefix = arch->as_string() + ".";
  }
  std::vector<const GgufKv*> kvs;
  for (const GgufKv& kv : file.metadata()) {
    if (!prefix.empty() && kv.key.starts_with(prefix)) kvs.push_back(&kv);
  }
  std::sort(kvs.begin(), kvs.end(), [](const auto* a, const auto* b) { return a->key < b->key; });
  for (const GgufKv* kv : kvs) {
    hs.text(kv->key);
    hash_value(hs, kv->value);
  }
  std::vector<const GgufTensorInfo*> tensors;
  for (const GgufTensorInfo& t : file.tensors()) tensors.push_back(&t);
  std::sort(tensors.begin(), tensors.end(),
            [](const auto* a, const auto* b) { return a->name < b->name; });
  for (const GgufTensorInfo* t : tensors) {
    hs.text(t->name);
    hs.value(static_cast<uint32_t>(t->type));
    hs.value(static_cast<uint64_t>(t->dims.size()));
    for (const uint64_t d : t->dims) hs.value(d);
    hash_tensor_sample(hs, file.tensor_data(*t), t->nbytes);
  }
  return hs.h;
}

}  // namespace novaserve
