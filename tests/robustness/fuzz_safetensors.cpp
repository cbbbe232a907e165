// libFuzzer target for the safetensors reader. Built with ASan/UBSan (NOVASERVE_FUZZ), so any
// read outside the input, overflow or leak is a crash. Run through tools/run_fuzzers.sh.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "gguf/safetensors_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // Copy into an exactly-sized buffer so ASan flags even one byte read past the end.
  std::vector<uint8_t> buf(data, data + size);
  auto f = novaserve::SafetensorsFile::parse(buf.data(), buf.size());
  if (!f.ok()) return 0;
  // An accepted file promises that every tensor lies inside the buffer and that its size is
  // shape x dtype: touch both ends of every non-empty tensor and look each one up by name.
  unsigned sink = 0;
  for (const auto& t : f.value()->tensors()) {
    if (t.nbytes == 0) continue;
    const uint8_t* p = f.value()->tensor_data(t);
    sink += p[0] + p[t.nbytes - 1];
    sink += static_cast<unsigned>(t.n_elements() * novaserve::safetensors_dtype_size(t.dtype) ==
                                  t.nbytes);
    sink += f.value()->find(t.name) == &t;
  }
  for (const auto& [key, value] : f.value()->metadata()) sink += key.size() + value.size();
  volatile unsigned keep = sink;
  (void)keep;
  return 0;
}
