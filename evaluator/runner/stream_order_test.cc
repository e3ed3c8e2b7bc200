// The runner issues all device work on its own non-blocking stream. A legacy-stream copy or memset
// there is a race, not a slowdown: a pageable cuMemcpyHtoD may return before its DMA lands, and
// the runner's stream does not wait for the legacy stream. On a loaded H200 that left a trusted
// reference's guards unfilled. Reading results back (DtoH after a stream sync) is fine.
#include <gtest/gtest.h>

#include <filesystem>
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
  const std::regex legacy(
      R"(\b(cuMemcpyHtoD|cuMemcpyDtoD|cuMemsetD8|cuMemsetD16|cuMemsetD32)\s*\()");
  int files = 0;
  for (const auto& e :
       std::filesystem::directory_iterator(std::string(WS_SOURCE_DIR) + "/evaluator/runner")) {
    const std::string path = e.path().string();
    if (e.path().extension() != ".cc" || path.size() < 8 ||
        path.compare(path.size() - 8, 8, "_test.cc") == 0) {
      continue;
    }
    ++files;
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
  EXPECT_GE(files, 4) << "the runner's sources were not found";
}

}  // namespace
