// libFuzzer target: a problem spec (problems/spec.cc), as `--problems-dir` would load a user's.
// A malformed spec must be an error naming its field, never a crash.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>

#include "base/files.h"
#include "problems/problems.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string dir = [] {
    std::string d = "/tmp/ws_fuzz_spec_" + std::to_string(getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string path = dir + "/spec.json";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!ws::WriteFileAtomic(path, bytes).ok()) return 0;
  auto spec = ws::LoadProblem(path);
  if (!spec.ok()) return 0;
  for (const auto* shapes : {&spec->test_shapes, &spec->bench_shapes, &spec->hidden_shapes}) {
    for (const ws::Shape& s : *shapes) {
      (void)ws::ValidateShape(*spec, s);
      (void)ws::ShapeText(*spec, s);
    }
  }
  return 0;
}
