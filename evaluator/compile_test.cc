#include <filesystem>

#include <gtest/gtest.h>

#include "base/files.h"
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

TEST(CompileTest, TheDeviceLibraryCanBeIncludedAndItsContentIsInTheCacheKey) {
  const std::string lib = testing::TempDir() + "/ws_library_" + std::to_string(::getpid());
  fs::create_directories(lib + "/ws");
  auto write = [&](const std::string& text) {
    ASSERT_TRUE(WriteFileAtomic(lib + "/ws/scale.cuh", text).ok());
  };
  write("#pragma once\n__device__ inline float ws_scale(float v) { return v * 2.0f; }\n");
  const std::string source = R"(#include "ws/scale.cuh"
extern "C" __global__ void k(const float* x, float* y) { y[threadIdx.x] = ws_scale(x[threadIdx.x]); }
)";
  CompileOptions o = Options();
  auto a = Compile({source, Arch::kSm90a, {}, {lib}}, o);
  ASSERT_TRUE(a.ok() && a->ok) << (a.ok() ? a->log : a.status().message());
  write("#pragma once\n__device__ inline float ws_scale(float v) { return v * 3.0f; }\n");
  auto b = Compile({source, Arch::kSm90a, {}, {lib}}, o);
  ASSERT_TRUE(b.ok() && b->ok);
  EXPECT_FALSE(b->cached) << "an edited library header must not be served the old cubin";
  EXPECT_NE(a->hash, b->hash);
  // Without the library among the include directories the header does not exist.
  auto c = Compile({source, Arch::kSm90a, {}, {}}, o);
  ASSERT_TRUE(c.ok());
  EXPECT_FALSE(c->ok);
  EXPECT_NE(c->log.find("device library"), std::string::npos) << c->log;
  // A library folder that does not exist is left out, not an error.
  auto absent = Compile({kKernel, Arch::kSm90a, {{"SCALE", "2.0f"}}, {lib + "/nowhere"}}, o);
  ASSERT_TRUE(absent.ok()) << absent.status().message();
  EXPECT_TRUE(absent->ok) << absent->log;
  auto d = Compile({"#include \"ws/../ws/scale.cuh\"\n", Arch::kSm90a, {}, {lib}}, o);
  ASSERT_TRUE(d.ok());
  EXPECT_FALSE(d->ok) << "'..' stays refused inside the library";
}

TEST(LibraryTest, ClosureFollowsIncludesAndTheHashAndInliningUseIt) {
  const std::string lib = testing::TempDir() + "/ws_closure_" + std::to_string(::getpid());
  fs::create_directories(lib + "/ws/sub");
  ASSERT_TRUE(WriteFileAtomic(lib + "/ws/a.cuh", "#pragma once\n#include \"ws/sub/b.cuh\"\nA\n").ok());
  ASSERT_TRUE(WriteFileAtomic(lib + "/ws/sub/b.cuh", "#pragma once\nB\n").ok());
  ASSERT_TRUE(WriteFileAtomic(lib + "/ws/unused.cuh", "U\n").ok());
  const std::string source = "#include <cuda_fp8.h>\n#include \"ws/a.cuh\"\n#include <ws/sub/b.cuh>\nK\n";
  const LibraryHeaders h = LibraryClosure(source, lib);
  ASSERT_EQ(h.size(), 2u);
  EXPECT_EQ(h.at("ws/sub/b.cuh"), "#pragma once\nB\n");
  EXPECT_TRUE(LibraryClosure("#include \"ws/missing.cuh\"\n", lib).empty());

  EXPECT_EQ(KernelHash(source, {}), Sha256Hex(source));
  EXPECT_NE(KernelHash(source, h), Sha256Hex(source));
  LibraryHeaders edited = h;
  edited["ws/sub/b.cuh"] += "// edited\n";
  EXPECT_NE(KernelHash(source, edited), KernelHash(source, h));

  // Inlined once each, in include order, without the headers' #pragma once.
  const std::string inlined = InlineLibrary(source, h);
  EXPECT_EQ(inlined.find("#include \"ws/"), std::string::npos) << inlined;
  EXPECT_EQ(inlined.find("#pragma once"), std::string::npos) << inlined;
  EXPECT_NE(inlined.find("#include <cuda_fp8.h>"), std::string::npos);
  const size_t b = inlined.find("\nB\n"), a = inlined.find("\nA\n"), k = inlined.find("\nK\n");
  ASSERT_NE(b, std::string::npos);
  EXPECT_LT(b, a);
  EXPECT_LT(a, k);
  EXPECT_EQ(inlined.find("\nB\n", b + 1), std::string::npos) << "b.cuh twice:\n" << inlined;
}

TEST(CompileTest, TheRepositoryLibraryCompilesForBothArchitectures) {
  // Every header of kernels/include on its own, so a header that only compiles after another
  // (a missing include) fails here rather than in some kernel.
  const std::string lib = KernelLibraryDir();
  ASSERT_TRUE(fs::is_directory(lib)) << lib;
  int headers = 0;
  for (const auto& e : fs::recursive_directory_iterator(lib)) {
    if (e.path().extension() != ".cuh") continue;
    const std::string name = fs::relative(e.path(), lib).string();
    for (Arch arch : {Arch::kSm90a, Arch::kSm100a}) {
      auto r = Compile({"#include \"" + name + "\"\n", arch, {}, {lib}}, Options());
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_TRUE(r->ok) << name << " for " << ArchName(arch) << ":\n" << r->log;
    }
    ++headers;
  }
  EXPECT_GT(headers, 0);
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
