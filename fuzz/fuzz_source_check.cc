// libFuzzer target: the source check every candidate passes before NVRTC sees it
// (evaluator/source_check.cc): hostile text must give OK or a rule, never a crash or a hang.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "evaluator/source_check.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view source(reinterpret_cast<const char*>(data), size);
  static const std::vector<std::string> kIncludeDirs = {WS_SOURCE_DIR "/kernels/include"};
  (void)ws::CheckCandidateSource(source, kIncludeDirs);
  (void)ws::CheckCandidateSource(source, {});
  return 0;
}
