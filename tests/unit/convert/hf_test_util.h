// Helpers the converter tests share: config.json parsing and its expected errors, reproducible
// random tensor values, lookup of a checkpoint tensor, and a fixture that gives each test a fresh
// folder for an HF checkpoint and the GGUF converted from it.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "../gguf/safetensors_test_writer.h"
#include "common/result.h"
#include "convert/hf_config.h"
#include "convert/hf_convert.h"

namespace novaserve::testing {

/// parse_hf_config of `j`, named "config.json" in errors.
Result<HfModelConfig> parse_config(const nlohmann::json& j);

/// parse_config(j) fails with `code` and a message containing `needle` (test failures otherwise).
void expect_config_error(const nlohmann::json& j, ErrorCode code, const std::string& needle);

/// Reproducible tensor values: each call draws one value per element of `shape`, base + a uniform
/// float in [-0.5, 0.5), from a single mt19937 stream seeded with `seed`.
class RandomValues {
 public:
  explicit RandomValues(uint32_t seed) : rng_(seed) {}
  std::vector<float> operator()(const std::vector<uint64_t>& shape, float base = 0.0f);

 private:
  std::mt19937 rng_;
  std::uniform_real_distribution<float> dist_{-0.5f, 0.5f};
};

/// The tensor of `ts` called `name`; a test failure (and ts.front()) when there is none.
const StTensor& st_by_name(const std::vector<StTensor>& ts, const std::string& name);

/// A fresh folder per test, removed after it: root_ = <temp>/<prefix><pid>_<test name>, the
/// checkpoint folder dir_ = root_/hf (created empty), the output path out_ = root_/out.gguf.
class HfCheckpointDirTest : public ::testing::Test {
 protected:
  explicit HfCheckpointDirTest(std::string prefix) : prefix_(std::move(prefix)) {}
  void SetUp() override;
  void TearDown() override;

  /// `r`, a conversion to out_, failed with `code` and a message containing `needle`, and left
  /// no output behind.
  void expect_failed(const Result<HfConvertResult>& r, ErrorCode code, const std::string& needle);

  std::filesystem::path root_, dir_;
  std::string out_;

 private:
  std::string prefix_;
};

}  // namespace novaserve::testing
