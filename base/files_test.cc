#include "base/files.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <string>

namespace ws {
namespace {

std::string TempPath(const char* name) {
  return testing::TempDir() + "/ws_files_test_" + std::to_string(::getpid()) + "_" + name;
}

TEST(FilesTest, RoundTripsBinaryData) {
  std::string data(3 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 2654435761u >> 13);
  const std::string path = TempPath("bin");
  ASSERT_TRUE(WriteFileAtomic(path, data).ok());
  auto got = ReadFile(path);
  ASSERT_TRUE(got.ok()) << got.status().message();
  EXPECT_EQ(*got, data);
  auto bytes = ReadFileBytes(path);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(std::string(bytes->begin(), bytes->end()), data);
  ::unlink(path.c_str());
}

TEST(FilesTest, ReadsEmptyFilesAndFilesWithoutASize) {
  const std::string path = TempPath("empty");
  ASSERT_TRUE(WriteFileAtomic(path, "").ok());
  auto empty = ReadFile(path);
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
  ::unlink(path.c_str());
  // /proc files report size 0 yet have contents.
  auto status = ReadFile("/proc/self/status");
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_NE(status->find("Pid:"), std::string::npos);
  auto status_bytes = ReadFileBytes("/proc/self/status");
  ASSERT_TRUE(status_bytes.ok()) << status_bytes.status().message();
  EXPECT_NE(std::string(status_bytes->begin(), status_bytes->end()).find("Pid:"),
            std::string::npos);
}

TEST(FilesTest, AMissingFileIsAnErrorNamingIt) {
  auto r = ReadFile("/nonexistent/ws_no_such_file");
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("/nonexistent/ws_no_such_file"), std::string::npos);
}

TEST(FilesTest, MapsAFileAsItsBytesAndOutlivesTheName) {
  std::string data(5 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>(i * 40503u >> 7);
  const std::string path = TempPath("map");
  ASSERT_TRUE(WriteFileAtomic(path, data).ok());
  auto m = MappedFile::Open(path);
  ASSERT_TRUE(m.ok()) << m.status().message();
  ::unlink(path.c_str());  // the mapping holds the file
  EXPECT_EQ(m->bytes(), data);
  MappedFile moved = std::move(*m);
  EXPECT_TRUE(m->bytes().empty());
  EXPECT_EQ(moved.bytes(), data);
  moved = MappedFile();
  EXPECT_TRUE(moved.bytes().empty());
}

TEST(FilesTest, MapsAnEmptyFileAndRefusesWhatIsNotAFile) {
  const std::string path = TempPath("map_empty");
  ASSERT_TRUE(WriteFileAtomic(path, "").ok());
  auto empty = MappedFile::Open(path);
  ASSERT_TRUE(empty.ok()) << empty.status().message();
  EXPECT_TRUE(empty->bytes().empty());
  ::unlink(path.c_str());
  auto missing = MappedFile::Open("/nonexistent/ws_no_such_file");
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("/nonexistent/ws_no_such_file"), std::string::npos);
  auto dir = MappedFile::Open(testing::TempDir());
  ASSERT_FALSE(dir.ok());
  EXPECT_NE(dir.status().message().find("not a regular file"), std::string::npos);
}

}  // namespace
}  // namespace ws
