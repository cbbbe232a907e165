// TempOutput: the final file changes only on commit(), and only to the complete new bytes.
#include "common/temp_output.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

namespace novaserve {
namespace {

namespace fs = std::filesystem;

class TempOutputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    dir_ = fs::temp_directory_path() /
           ("temp_output_test_" + std::to_string(::getpid()) + "_" + info->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    final_ = (dir_ / "out.gguf").string();
    temp_name_ = final_ + ".tmp-" + std::to_string(::getpid());
  }
  void TearDown() override { fs::remove_all(dir_); }

  static void write_file(const std::string& path, const std::string& bytes) {
    std::ofstream f(path, std::ios::binary | std::ios::trunc);
    f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    ASSERT_TRUE(f.good()) << path;
  }
  static std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>());
  }
  size_t n_entries() const {
    return static_cast<size_t>(std::distance(fs::directory_iterator(dir_), {}));
  }

  fs::path dir_;
  std::string final_;
  std::string temp_name_;
};

// Bytes that a text-mode or truncating write would be likely to mangle.
const std::string kOldBytes("old\0\r\n\xff contents", 16);

TEST_F(TempOutputTest, CreateMakesAnEmptyPidSuffixedFileAndLeavesFinalAlone) {
  write_file(final_, kOldBytes);
  auto t = TempOutput::create(final_);
  ASSERT_TRUE(t.ok()) << t.error().message;
  EXPECT_EQ((*t)->path(), temp_name_);
  ASSERT_TRUE(fs::exists(temp_name_));
  EXPECT_EQ(fs::file_size(temp_name_), 0u);
  EXPECT_EQ(read_file(final_), kOldBytes);
}

TEST_F(TempOutputTest, CommitRenamesTheTempOverTheFinalFile) {
  write_file(final_, kOldBytes);
  {
    auto t = TempOutput::create(final_);
    ASSERT_TRUE(t.ok()) << t.error().message;
    write_file((*t)->path(), "new contents");
    EXPECT_EQ(read_file(final_), kOldBytes);  // nothing visible before commit()
    const Status s = (*t)->commit();
    ASSERT_TRUE(s.ok()) << s.error().message;
    EXPECT_FALSE(fs::exists(temp_name_));
  }
  // Destruction after a commit must not remove the committed file.
  EXPECT_EQ(read_file(final_), "new contents");
  EXPECT_EQ(n_entries(), 1u);
}

TEST_F(TempOutputTest, CommitCreatesAMissingFinalFile) {
  auto t = TempOutput::create(final_);
  ASSERT_TRUE(t.ok()) << t.error().message;
  write_file((*t)->path(), "fresh");
  ASSERT_TRUE((*t)->commit().ok());
  EXPECT_EQ(read_file(final_), "fresh");
}

TEST_F(TempOutputTest, DestructionWithoutCommitRemovesTempAndKeepsFinalByteIdentical) {
  write_file(final_, kOldBytes);
  {
    auto t = TempOutput::create(final_);
    ASSERT_TRUE(t.ok()) << t.error().message;
    write_file((*t)->path(), "a partial write that failed half way");
    ASSERT_TRUE(fs::exists(temp_name_));
  }
  EXPECT_FALSE(fs::exists(temp_name_));
  EXPECT_EQ(read_file(final_), kOldBytes);
  EXPECT_EQ(n_entries(), 1u);
}

TEST_F(TempOutputTest, ExistingTempNameIsRefusedAndNotTouched) {
  write_file(temp_name_, "someone else's file");
  auto t = TempOutput::create(final_);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kIo);
  EXPECT_NE(t.error().message.find(temp_name_), std::string::npos) << t.error().message;
  EXPECT_NE(t.error().message.find("File exists"), std::string::npos) << t.error().message;
  // The failed create() must neither truncate nor unlink the file it did not create.
  EXPECT_EQ(read_file(temp_name_), "someone else's file");
  EXPECT_FALSE(fs::exists(final_));
}

TEST_F(TempOutputTest, MissingDirectoryFailsWithIoErrorNamingTheOutput) {
  const std::string out = (dir_ / "no" / "such" / "out.gguf").string();
  auto t = TempOutput::create(out);
  ASSERT_FALSE(t.ok());
  EXPECT_EQ(t.error().code, ErrorCode::kIo);
  EXPECT_NE(t.error().message.find(out), std::string::npos) << t.error().message;
  // Our temporary name means nothing to the user here.
  EXPECT_EQ(t.error().message.find(".tmp-"), std::string::npos) << t.error().message;
  EXPECT_EQ(n_entries(), 0u);
}

TEST_F(TempOutputTest, FailedCommitReportsIoAndStillRemovesTheTemp) {
  // rename(2) cannot replace a non-empty directory with a file.
  fs::create_directories(fs::path(final_) / "child");
  {
    auto t = TempOutput::create(final_);
    ASSERT_TRUE(t.ok()) << t.error().message;
    write_file((*t)->path(), "data");
    const Status s = (*t)->commit();
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.error().code, ErrorCode::kIo);
    EXPECT_NE(s.error().message.find(final_), std::string::npos) << s.error().message;
  }
  EXPECT_FALSE(fs::exists(temp_name_));
  EXPECT_TRUE(fs::is_directory(fs::path(final_) / "child"));
}

}  // namespace
}  // namespace novaserve
