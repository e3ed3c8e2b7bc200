#include "base/file_lock.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

namespace ws {
namespace {

std::string TempPath(const std::string& name) {
  return testing::TempDir() + "/ws_file_lock_" + std::to_string(::getpid()) + "_" + name;
}

TEST(FileLockTest, ExcludesAnotherThreadUntilReleased) {
  const std::string path = TempPath("a");
  auto first = FileLock::Acquire(path, /*create=*/true, -1);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->held());
  std::atomic<bool> got{false};
  std::thread waiter([&] {
    // Read-only, as a sandboxed runner opens it.
    auto second = FileLock::Acquire(path, /*create=*/false, -1);
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
  const std::string path = TempPath("b");
  auto held = FileLock::Acquire(path, true, -1);
  ASSERT_TRUE(held.ok());
  const auto t0 = std::chrono::steady_clock::now();
  auto other = FileLock::Acquire(path, false, 0.1);
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_FALSE(other.ok());
  EXPECT_NE(other.status().message().find(path), std::string::npos);
  EXPECT_GE(waited, 0.1);
  EXPECT_LT(waited, 5.0);
  held = FileLock();  // released: now a bounded wait succeeds at once
  EXPECT_TRUE(FileLock::Acquire(path, false, 0.1).ok());
  std::filesystem::remove(path);
}

TEST(FileLockTest, MissingFileWithoutCreateIsAnError) {
  auto lock = FileLock::Acquire(TempPath("missing"), false, 0);
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("missing"), std::string::npos);
}

TEST(FileLockTest, DefaultHoldsNothing) { EXPECT_FALSE(FileLock().held()); }

}  // namespace
}  // namespace ws
