#include "base/status.h"

namespace ws {

void CheckFailed(const char* file, int line, const char* expr) {
  std::fprintf(stderr, "%s:%d: check failed: %s\n", file, line, expr);
  std::abort();
}

}  // namespace ws
