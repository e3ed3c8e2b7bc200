#include <filesystem>

#include <gtest/gtest.h>

#include "evaluator/evaluator.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

CompileOptions Options() {
  CompileOptions o;
  o.cache_dir = testing::TempDir() + "/ws_compile_cache_" + std::to_string(::getpid());
  o.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  o.timeout_s = 60;
  return o;
}

constexpr char kKernel[] = R"(
extern "C" __global__ void scale_copy(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i] * SCALE;
}
)";

TEST(CompileTest, CompilesForBothArchitecturesAndReportsResources) {
  for (Arch arch : {Arch::kSm90a, Arch::kSm100a}) {
    auto r = Compile({kKernel, arch, {{"SCALE", "2.0f"}}, {}}, Options());
    ASSERT_TRUE(r.ok()) << r.status().message();
    ASSERT_TRUE(r->ok) << r->log;
    EXPECT_TRUE(fs::file_size(r->cubin_path) > 0);
    ASSERT_EQ(r->resources.kernels.size(), 1u) << r->log;
    EXPECT_EQ(r->resources.kernels[0].name, "scale_copy");
    EXPECT_GT(r->resources.kernels[0].registers, 0);
  }
}

TEST(CompileTest, SecondCompileHitsTheCache) {
  CompileOptions o = Options();
  auto a = Compile({kKernel, Arch::kSm90a, {{"SCALE", "3.0f"}}, {}}, o);
  ASSERT_TRUE(a.ok() && a->ok);
  EXPECT_FALSE(a->cached);
  auto b = Compile({kKernel, Arch::kSm90a, {{"SCALE", "3.0f"}}, {}}, o);
  ASSERT_TRUE(b.ok() && b->ok);
  EXPECT_TRUE(b->cached);
  EXPECT_EQ(a->hash, b->hash);
  auto c = Compile({kKernel, Arch::kSm90a, {{"SCALE", "4.0f"}}, {}}, o);
  ASSERT_TRUE(c.ok() && c->ok);
  EXPECT_NE(a->hash, c->hash) << "defines must be part of the cache key";
}

TEST(CompileTest, CompileErrorIsAResultNotAFailure) {
  auto r = Compile({"extern \"C\" __global__ void k() { undeclared(); }", Arch::kSm90a, {}, {}},
                   Options());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE(r->ok);
  EXPECT_NE(r->log.find("undeclared"), std::string::npos) << r->log;
}

TEST(CompileTest, CudaHeadersAreReachable) {
  constexpr char kFp8[] = R"(
#include <cuda_bf16.h>
#include <cuda_fp8.h>
extern "C" __global__ void k(const __nv_bfloat16* x, __nv_fp8_e4m3* q) {
  q[threadIdx.x] = __nv_fp8_e4m3(__bfloat162float(x[threadIdx.x]));
}
)";
  auto r = Compile({kFp8, Arch::kSm90a, {}, {}}, Options());
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r->ok) << r->log;
}

}  // namespace
}  // namespace ws
