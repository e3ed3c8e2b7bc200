// The runner issues all device work on its own non-blocking stream. A legacy-stream copy or memset
// there is a race, not a slowdown: a pageable cuMemcpyHtoD may return before its DMA lands, and
// the runner's stream does not wait for the legacy stream. On a loaded H200 that left a trusted
// reference's guards unfilled. Reading results back (DtoH after a stream sync) is fine.
#include <gtest/gtest.h>

#include <fstream>
#include <regex>
#include <sstream>
#include <string>

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(StreamOrderTest, RunnerWritesTheDeviceOnlyThroughItsStream) {
  const std::regex legacy(R"(\b(cuMemcpyHtoD|cuMemcpyDtoD|cuMemsetD8|cuMemsetD16|cuMemsetD32)\s*\()");
  for (const char* file : {"run.cc", "cuda_util.cc", "probe.cc", "library_baselines.cc"}) {
    const std::string path = std::string(WS_SOURCE_DIR) + "/evaluator/runner/" + file;
    std::istringstream in(Read(path));
    ASSERT_FALSE(in.str().empty()) << "cannot read " << path;
    int line_no = 0;
    for (std::string line; std::getline(in, line);) {
      ++line_no;
      const size_t comment = line.find("//");
      const std::string code = comment == std::string::npos ? line : line.substr(0, comment);
      EXPECT_FALSE(std::regex_search(code, legacy))
          << path << ":" << line_no << ": a legacy-stream copy or memset: " << line;
    }
  }
}

}  // namespace
