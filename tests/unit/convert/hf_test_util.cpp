#include "hf_test_util.h"

#include <unistd.h>

namespace novaserve::testing {

namespace fs = std::filesystem;

Result<HfModelConfig> parse_config(const nlohmann::json& j) {
  return parse_hf_config(j.dump(), "config.json");
}

void expect_config_error(const nlohmann::json& j, ErrorCode code, const std::string& needle) {
  auto r = parse_config(j);
  ASSERT_FALSE(r.ok()) << j.dump();
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
}

std::vector<float> RandomValues::operator()(const std::vector<uint64_t>& shape, float base) {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  std::vector<float> v(n);
  for (float& x : v) x = base + dist_(rng_);
  return v;
}

const StTensor& st_by_name(const std::vector<StTensor>& ts, const std::string& name) {
  for (const auto& t : ts) {
    if (t.name == name) return t;
  }
  ADD_FAILURE() << "no tensor " << name;
  return ts.front();
}

void HfCheckpointDirTest::SetUp() {
  root_ =
      fs::temp_directory_path() / (prefix_ + std::to_string(::getpid()) + "_" +
                                   ::testing::UnitTest::GetInstance()->current_test_info()->name());
  fs::remove_all(root_);
  dir_ = root_ / "hf";
  fs::create_directories(dir_);
  out_ = (root_ / "out.gguf").string();
}

void HfCheckpointDirTest::TearDown() {
  fs::remove_all(root_);
}

void HfCheckpointDirTest::expect_failed(const Result<HfConvertResult>& r, ErrorCode code,
                                        const std::string& needle) {
  ASSERT_FALSE(r.ok()) << "converted, expected: " << needle;
  EXPECT_EQ(r.error().code, code) << r.error().message;
  EXPECT_NE(r.error().message.find(needle), std::string::npos) << r.error().message;
  EXPECT_FALSE(fs::exists(out_)) << "partial output left behind";
}

}  // namespace novaserve::testing
