#include "evaluator/gpu_lock.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "base/files.h"
#include "evaluator/runner/commands.h"

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

class TurnGateTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("ws_turn_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
    path_ = (dir_ / "turn").string();
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string Contents() {
    auto text = ReadFile(path_);
    return text.ok() ? *text : "(unreadable)";
  }
  std::filesystem::path dir_;
  std::string path_;
};

TEST_F(TurnGateTest, ClosedUntilOpenedThenGo) {
  auto gate = TurnGate::Close(path_);
  ASSERT_TRUE(gate.ok()) << gate.status().message();
  EXPECT_EQ(Contents(), "wait");
  // The runner's wait (FileLock, as in the runner) times out while the gate is closed.
  EXPECT_FALSE(FileLock::Acquire(path_, 0.2).ok());
  gate->Open(true);
  auto lock = FileLock::Acquire(path_, 1);
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  EXPECT_EQ(Contents(), runner::kTurnGo);
  gate->Open(false);  // a second Open changes nothing
  EXPECT_EQ(Contents(), runner::kTurnGo);
}

TEST_F(TurnGateTest, DroppedUnopenedMeansAbort) {
  {
    auto gate = TurnGate::Close(path_);
    ASSERT_TRUE(gate.ok());
    TurnGate moved = std::move(*gate);  // the moved-from gate releases nothing
    EXPECT_FALSE(FileLock::Acquire(path_, 0.1).ok());
  }
  ASSERT_TRUE(FileLock::Acquire(path_, 1).ok());
  EXPECT_EQ(Contents(), "abort");
}

TEST_F(TurnGateTest, AWaitingRunnerGetsTheTurnWhenOpened) {
  auto gate = TurnGate::Close(path_);
  ASSERT_TRUE(gate.ok());
  std::string seen;
  bool locked = false;
  std::thread runner([&] {
    auto lock = FileLock::Acquire(path_, 10);
    locked = lock.ok();
    auto text = ReadFile(path_);
    seen = text.ok() ? *text : "";
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(150));
  gate->Open(true);
  runner.join();
  EXPECT_TRUE(locked);
  EXPECT_EQ(seen, runner::kTurnGo);
}

TEST_F(TurnGateTest, UnwritableFolderIsAnError) {
  auto gate = TurnGate::Close("/proc/ws_no_such_folder/turn");
  ASSERT_FALSE(gate.ok());
  EXPECT_NE(gate.status().message().find("/proc/ws_no_such_folder"), std::string::npos);
}

}  // namespace
}  // namespace ws
