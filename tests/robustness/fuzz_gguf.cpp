// libFuzzer target for the GGUF parser. Built with ASan/UBSan (NOVASERVE_FUZZ), so any read
// outside the input, overflow or leak is a crash. Run through tools/run_fuzzers.sh.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf/gguf_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into an exactly-sized buffer so ASan flags even one byte read past the end.
  std::vector<uint8_t> buf(data, data + size);
  auto f = novaserve::GgufFile::parse(buf.data(), buf.size());
  if (!f.ok()) return 0;
  // An accepted file promises that every tensor lies inside the buffer: touch both ends, and
  // render every value the way `inspect` does.
  unsigned sink = 0;
  for (const auto& t : f.value()->tensors()) {
    const uint8_t* p = f.value()->tensor_data(t);
    sink += p[0] + p[t.nbytes - 1];
  }
  for (const auto& kv : f.value()->metadata()) {
    sink += static_cast<unsigned>(novaserve::gguf_value_to_string(kv.value).size());
  }
  volatile unsigned keep = sink;
  (void)keep;
  return 0;
}
