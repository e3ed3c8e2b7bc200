// libFuzzer target: the .npy reader behind `warpsmith reference --in DIR` (problems/npy.cc). A
// user's file must load or be refused with a reason.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "base/files.h"
#include "problems/problems.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = "/tmp/ws_fuzz_npy_" + std::to_string(getpid()) + ".npy";
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  if (!ws::WriteFileAtomic(path, bytes).ok()) return 0;
  for (ws::DType t : {ws::DType::kBF16, ws::DType::kFP8E4M3, ws::DType::kI32, ws::DType::kF32}) {
    (void)ws::ReadNpy(path, t);
  }
  return 0;
}
