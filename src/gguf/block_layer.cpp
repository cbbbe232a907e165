#include "gguf/block_layer.h"

#include <charconv>

namespace novaserve {

int64_t block_layer(std::string_view name) {
  constexpr std::string_view kPrefix = "blk.";
  if (!name.starts_with(kPrefix)) return -1;
  name.remove_prefix(kPrefix.size());
  int64_t l = -1;
  const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), l);
  if (ec != std::errc() || end == name.data() || end == name.data() + name.size() || *end != '.') {
    return -1;
  }
  return l;
}

}  // namespace novaserve
