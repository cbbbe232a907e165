// WeightArena: a synthetic GGUF (GgufWriter, tensors of several types and odd sizes) loaded
// through staging rings of several shapes must land byte for byte on the device, at 256-byte
// aligned offsets, with zero padding, in exactly one device allocation; and the allocation
// counters of gpu_alloc.h must count what they claim.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "backend/gpu/platform/gpu_alloc.h"
#include "convert/gguf_writer.h"
#include "gguf/gguf_file.h"
#include "gpu_test_util.h"
#include "runtime/gpu/weight_arena.h"

namespace novaserve::gpu {
namespace {

using test::DeviceBuffer;

struct TensorSpec {
  const char* name;
  GgmlType type;
  std::vector<uint64_t> dims;
};

// Odd sizes, so tensors end off the 256-byte grid; one tensor larger than the small staging
// buffers below, so it spans several chunks.
const std::vector<TensorSpec> kTensors = {
    {"tiny.f32", GgmlType::kF32, {7}},
    {"odd.f16", GgmlType::kF16, {1000, 3}},
    {"blk.0.attn_q.weight", GgmlType::kQ4_0, {64, 33}},
    {"big.f32", GgmlType::kF32, {300001}},
    {"blk.0.ffn_up.weight", GgmlType::kQ8_0, {4096, 17}},
    {"norm.bf16", GgmlType::kBF16, {513, 2}},
};

// A temporary GGUF with kTensors filled with random bytes; deleted on scope exit.
class TempGguf {
 public:
  explicit TempGguf(const std::vector<TensorSpec>& tensors, std::mt19937& rng) {
    path_ = (std::filesystem::temp_directory_path() /
             ("novaserve_arena_test_" + std::to_string(rng()) + ".gguf"))
                .string();
    GgufWriter w;
    w.add("general.architecture", gguf_string("llama"));
    std::uniform_int_distribution<int> byte(0, 255);
    for (const TensorSpec& t : tensors) {
      uint64_t n = 1;
      for (uint64_t d : t.dims) n *= d;
      const auto& tr = ggml_type_traits(t.type);
      std::vector<uint8_t> data(n / tr.block_elems * tr.block_bytes);
      for (uint8_t& b : data) b = static_cast<uint8_t>(byte(rng));
      EXPECT_TRUE(w.add_tensor(t.name, t.type, t.dims, std::move(data)).ok()) << t.name;
    }
    EXPECT_TRUE(w.write_file(path_).ok());
  }
  ~TempGguf() { std::filesystem::remove(path_); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

class WeightArenaTest : public test::GpuTest {};

TEST_F(WeightArenaTest, LoadsEveryTensorByteForByteAtAlignedOffsets) {
  SCOPED_TRACE(seed_note());
  const TempGguf gguf(kTensors, rng_);
  auto file = GgufFile::open(gguf.path());
  ASSERT_TRUE(file.ok()) << file.error().message;
  const auto& infos = (*file)->tensors();
  ASSERT_EQ(infos.size(), kTensors.size());
  uint64_t used = 0;
  for (const auto& t : infos) used += t.nbytes;

  // One buffer, a ring of two and of four smaller than most tensors, a chunk size that is not a
  // multiple of anything, and the defaults.
  const std::vector<WeightArenaOptions> options = {
      {size_t{1} << 20, 1, {}}, {4096, 2, {}}, {3 * 4096 + 17, 3, {}}, {1000, 4, {}}, {}};
  for (const WeightArenaOptions& opt : options) {
    SCOPED_TRACE("staging " + std::to_string(opt.staging_bytes) + " x " +
                 std::to_string(opt.n_staging));
    const GpuAllocCounters before = gpu_alloc_counters();
    auto arena = WeightArena::load(**file, stream_, opt);
    ASSERT_TRUE(arena.ok()) << arena.error().message;
    const GpuAllocCounters after = gpu_alloc_counters();
    const WeightArenaStats& st = (*arena)->stats();

    EXPECT_EQ(after.device_allocs - before.device_allocs, 1);
    const uint64_t chunk = std::min<uint64_t>(opt.staging_bytes, st.reserved_bytes);
    const uint64_t chunks = (st.reserved_bytes + chunk - 1) / chunk;
    EXPECT_EQ(after.pinned_host_allocs - before.pinned_host_allocs,
              static_cast<int64_t>(std::min<uint64_t>(opt.n_staging, chunks)));
    EXPECT_EQ(st.used_bytes, used);
    EXPECT_EQ(st.n_tensors, infos.size());
    EXPECT_GE(st.reserved_bytes, used);
    EXPECT_LT(st.reserved_bytes - used, kWeightArenaAlignment * infos.size());
    EXPECT_LT(st.overhead(), 0.01);
    EXPECT_GT(st.load_seconds, 0.0);
    EXPECT_NE((*arena)->summary().find("6 tensors"), std::string::npos) << (*arena)->summary();

    // The whole arena back to the host: tensors at their offsets, zeros between them.
    std::vector<uint8_t> image(st.reserved_bytes);
    ASSERT_EQ(cudaMemcpy(image.data(), (*arena)->data(), image.size(), cudaMemcpyDeviceToHost),
              cudaSuccess);
    uint64_t expect_zero_from = 0;
    for (size_t i = 0; i < infos.size(); ++i) {
      const uint64_t off = (*arena)->offset(i);
      SCOPED_TRACE(infos[i].name);
      EXPECT_EQ(off % kWeightArenaAlignment, 0u);
      EXPECT_EQ((*arena)->tensor(infos[i].name),
                static_cast<const uint8_t*>((*arena)->data()) + off);
      EXPECT_EQ(
          reinterpret_cast<uintptr_t>((*arena)->tensor(infos[i].name)) % kWeightArenaAlignment, 0u);
      EXPECT_EQ(0,
                std::memcmp(image.data() + off, (*file)->tensor_data(infos[i]), infos[i].nbytes));
      for (uint64_t b = expect_zero_from; b < off; ++b) ASSERT_EQ(image[b], 0) << "padding " << b;
      expect_zero_from = off + infos[i].nbytes;
    }
    for (uint64_t b = expect_zero_from; b < image.size(); ++b) ASSERT_EQ(image[b], 0);
    EXPECT_EQ((*arena)->tensor("no.such.tensor"), nullptr);
  }
}

// A pipeline stage loads only the tensors its filter accepts (WeightArenaOptions::include):
// every other tensor has no device address, and the arena is as large as the accepted ones.
TEST_F(WeightArenaTest, LoadsOnlyTheTensorsTheFilterAccepts) {
  SCOPED_TRACE(seed_note());
  const TempGguf gguf(kTensors, rng_);
  auto file = GgufFile::open(gguf.path());
  ASSERT_TRUE(file.ok()) << file.error().message;
  const auto& infos = (*file)->tensors();
  ASSERT_GE(infos.size(), 2u);
  const std::string skipped = infos[0].name;
  WeightArenaOptions opt;
  opt.include = [&skipped](std::string_view name) { return name != skipped; };
  auto arena = WeightArena::load(**file, stream_, opt);
  ASSERT_TRUE(arena.ok()) << arena.error().message;
  EXPECT_EQ((*arena)->stats().n_tensors, infos.size() - 1);
  uint64_t used = 0;
  for (const auto& t : infos) {
    const uint8_t* host = (*file)->tensor_data(t);
    if (t.name == skipped) {
      EXPECT_EQ((*arena)->tensor(t.name), nullptr);
      EXPECT_EQ((*arena)->device_address(host), nullptr);
      continue;
    }
    used += t.nbytes;
    const auto* dev = static_cast<const uint8_t*>((*arena)->tensor(t.name));
    ASSERT_NE(dev, nullptr) << t.name;
    EXPECT_EQ((*arena)->device_address(host), dev) << t.name;
    std::vector<uint8_t> back(t.nbytes);
    ASSERT_EQ(cudaMemcpy(back.data(), dev, t.nbytes, cudaMemcpyDeviceToHost), cudaSuccess);
    EXPECT_EQ(std::memcmp(back.data(), host, t.nbytes), 0) << t.name;
  }
  EXPECT_EQ((*arena)->stats().used_bytes, used);
}

TEST_F(WeightArenaTest, MapsHostTensorPointersToDeviceAddresses) {
  SCOPED_TRACE(seed_note());
  const TempGguf gguf(kTensors, rng_);
  auto file = GgufFile::open(gguf.path());
  ASSERT_TRUE(file.ok()) << file.error().message;
  auto arena = WeightArena::load(**file, stream_, {4096, 2, {}});
  ASSERT_TRUE(arena.ok()) << arena.error().message;
  for (const auto& t : (*file)->tensors()) {
    const uint8_t* host = (*file)->tensor_data(t);
    const auto* dev = static_cast<const uint8_t*>((*arena)->tensor(t.name));
    EXPECT_EQ((*arena)->device_address(host), dev) << t.name;
    EXPECT_EQ((*arena)->device_address(host + t.nbytes - 1), dev + t.nbytes - 1) << t.name;
  }
  // The header is not tensor data; neither is unrelated memory.
  const uint8_t* first = (*file)->tensor_data((*file)->tensors().front());
  EXPECT_EQ((*arena)->device_address(first - 1), nullptr);
  const int local = 0;
  EXPECT_EQ((*arena)->device_address(&local), nullptr);
}

TEST_F(WeightArenaTest, AllocationWrappersCountEachCall) {
  const GpuAllocCounters before = gpu_alloc_counters();
  void* p = reinterpret_cast<void*>(1);
  ASSERT_TRUE(device_alloc(&p, 0, "zero bytes").ok());
  EXPECT_EQ(p, nullptr);
  ASSERT_TRUE(device_alloc(&p, 4096, "test buffer").ok());
  EXPECT_NE(p, nullptr);
  device_free(p);
  void* h = nullptr;
  ASSERT_TRUE(pinned_host_alloc(&h, 4096, "test pinned buffer").ok());
  pinned_host_free(h);
  const GpuAllocCounters after = gpu_alloc_counters();
  EXPECT_EQ(after.device_allocs - before.device_allocs, 1);
  EXPECT_EQ(after.pinned_host_allocs - before.pinned_host_allocs, 1);
}

// No device call happens for a file without tensors or for bad options, so these run anywhere.
TEST(WeightArenaArgs, EmptyFileAndBadOptions) {
  std::mt19937 rng(test::test_seed());
  const TempGguf gguf({}, rng);
  auto file = GgufFile::open(gguf.path());
  ASSERT_TRUE(file.ok()) << file.error().message;
  const GpuAllocCounters before = gpu_alloc_counters();
  auto arena = WeightArena::load(**file, nullptr);
  ASSERT_TRUE(arena.ok()) << arena.error().message;
  EXPECT_EQ((*arena)->data(), nullptr);
  EXPECT_EQ((*arena)->stats().reserved_bytes, 0u);
  EXPECT_EQ((*arena)->stats().overhead(), 0.0);
  EXPECT_EQ(gpu_alloc_counters().device_allocs, before.device_allocs);

  for (const WeightArenaOptions& bad :
       {WeightArenaOptions{4096, 0, {}}, WeightArenaOptions{4096, 9, {}},
        WeightArenaOptions{0, 2, {}}}) {
    auto r = WeightArena::load(**file, nullptr, bad);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error().code, ErrorCode::kInvalidInput);
  }
}

}  // namespace
}  // namespace novaserve::gpu
