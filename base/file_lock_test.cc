#include "base/file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

namespace ws {
namespace {

std::string TempPath(const std::string& name) {
  return testing::TempDir() + "/ws_file_lock_" + std::to_string(::getpid()) + "_" + name;
}

// A lock file that exists, as PrepareGpuLock leaves it.
std::string LockFile(const std::string& name) {
  const std::string path = TempPath(name);
  std::ofstream(path).put('\n');
  return path;
}

TEST(FileLockTest, ExcludesAnotherThreadUntilReleased) {
  const std::string path = LockFile("a");
  auto first = FileLock::Acquire(path, -1);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->held());
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto second = FileLock::Acquire(path, -1);
    EXPECT_TRUE(second.ok()) << second.status().message();
    got = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(got.load()) << "a second holder got the lock while the first held it";
  { FileLock released = std::move(*first); }
  waiter.join();
  EXPECT_TRUE(got.load());
  std::filesystem::remove(path);
}

TEST(FileLockTest, BoundedWaitGivesUpAndNamesTheFile) {
  const std::string path = LockFile("b");
  auto held = FileLock::Acquire(path, -1);
  ASSERT_TRUE(held.ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto other = FileLock::Acquire(path, 0.1);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find(path), std::string::npos);
  EXPECT_GE(waited, 0.1);
  EXPECT_LT(waited, 5.0);
  held = FileLock();  // released: now a bounded wait succeeds at once
  EXPECT_TRUE(FileLock::Acquire(path, 0.1).ok());
  std::filesystem::remove(path);
}

TEST(FileLockTest, MissingFileIsAnError) {
  auto lock = FileLock::Acquire(TempPath("missing"), 0);
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("missing"), std::string::npos);
}

TEST(FileLockTest, DefaultHoldsNothing) { EXPECT_FALSE(FileLock().held()); }

}  // namespace
}  // namespace ws
