#include "evaluator/gpu_lock.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>

namespace ws {
namespace {

TEST(GpuLockNameTest, FirstVisibleDevice) {
  EXPECT_EQ(GpuLockName(""), "gpu-0.lock");  // CUDA's default device
  EXPECT_EQ(GpuLockName("1"), "gpu-1.lock");
  EXPECT_EQ(GpuLockName("1,0"), "gpu-1.lock");
  EXPECT_EQ(GpuLockName(" 2 ,3"), "gpu-2.lock");
  EXPECT_EQ(GpuLockName("GPU-8a1b-c2"), "gpu-GPU-8a1b-c2.lock");
  EXPECT_EQ(GpuLockName("../../etc/x"), "gpu-______etc_x.lock");  // never a path
}

TEST(GpuLockTest, PrepareMakesASharedFolderAndFile) {
  const std::string dir = testing::TempDir() + "/ws_gpu_lock_" + std::to_string(::getpid()) + "/x";
  auto path = PrepareGpuLock(dir, "gpu-0.lock");
  ASSERT_TRUE(path.ok()) << path.status().message();
  EXPECT_EQ(*path, dir + "/gpu-0.lock");
  struct stat st {};
  ASSERT_EQ(::stat(dir.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);
  ASSERT_EQ(::stat(path->c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  // The process-side lock on the prepared file; an empty folder holds nothing.
  auto lock = AcquireGpuLock(dir, "gpu-0.lock");
  ASSERT_TRUE(lock.ok());
  EXPECT_TRUE(lock->held());
  auto off = AcquireGpuLock("", "gpu-0.lock");
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->held());
  std::error_code ec;
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path(), ec);
}

TEST(GpuLockTest, UnusableFolderIsAnError) {
  auto path = PrepareGpuLock("/proc/ws_no_such_folder", "gpu-0.lock");
  ASSERT_FALSE(path.ok());
  EXPECT_NE(path.status().message().find("/proc/ws_no_such_folder"), std::string::npos);
}

}  // namespace
}  // namespace ws
