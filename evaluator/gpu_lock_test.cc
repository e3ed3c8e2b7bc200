#include "evaluator/gpu_lock.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <thread>

namespace ws {
namespace {

namespace fs = std::filesystem;

TEST(GpuLockNameTest, FirstVisibleDevice) {
  EXPECT_EQ(GpuLockName(""), "gpu-0.lock");  // CUDA's default device
  EXPECT_EQ(GpuLockName("1"), "gpu-1.lock");
  EXPECT_EQ(GpuLockName("1,0"), "gpu-1.lock");
  EXPECT_EQ(GpuLockName(" 2 ,3"), "gpu-2.lock");
  EXPECT_EQ(GpuLockName("GPU-8a1b-c2"), "gpu-GPU-8a1b-c2.lock");
  EXPECT_EQ(GpuLockName("../../etc/x"), "gpu-______etc_x.lock");  // never a path
}

TEST(GpuLockTest, EmptyFolderHoldsNothing) {
  auto lock = GpuLock::Acquire("", "gpu-0.lock");
  ASSERT_TRUE(lock.ok());
  EXPECT_FALSE(lock->held());
}

TEST(GpuLockTest, ExcludesAnotherThreadUntilReleased) {
  const std::string dir = testing::TempDir() + "/ws_gpu_lock_" + std::to_string(::getpid()) + "/x";
  auto first = GpuLock::Acquire(dir, "gpu-0.lock");
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(first->held());
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);

  std::atomic<bool> got{false};
  std::thread waiter([&] {
    auto second = GpuLock::Acquire(dir, "gpu-0.lock");
    EXPECT_TRUE(second.ok());
    got = true;
  });
  // Another GPU's lock is free meanwhile.
  auto other = GpuLock::Acquire(dir, "gpu-1.lock");
  ASSERT_TRUE(other.ok());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  EXPECT_FALSE(got.load()) << "a second holder got GPU 0 while the first held it";
  { GpuLock released = std::move(*first); }  // the moved-to lock goes out of scope
  waiter.join();
  EXPECT_TRUE(got.load());
  std::error_code ec;
  fs::remove_all(fs::path(dir).parent_path(), ec);
}

TEST(GpuLockTest, UnusableFolderIsAnError) {
  auto lock = GpuLock::Acquire("/proc/ws_no_such_folder", "gpu-0.lock");
  ASSERT_FALSE(lock.ok());
  EXPECT_NE(lock.status().message().find("/proc/ws_no_such_folder"), std::string::npos);
}

}  // namespace
}  // namespace ws
