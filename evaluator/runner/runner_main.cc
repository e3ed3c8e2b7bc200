// ws_runner: the trusted executable that touches the GPU (docs/runner-protocol.md).
//
//   ws_runner devices | probe | run JOB.json
#include <cstdio>
#include <string>

#include "evaluator/runner/commands.h"

int main(int argc, char** argv) {
  std::string cmd = argc > 1 ? argv[1] : "";
  if (cmd == "devices" && argc == 2) return ws::runner::DevicesCommand();
  if (cmd == "probe" && argc == 2) return ws::runner::ProbeCommand();
  if (cmd == "run" && argc == 3) return ws::runner::RunCommand(argv[2]);
  std::fprintf(stderr, "usage: ws_runner devices | probe | run JOB.json\n");
  return ws::runner::kExitBadJob;
}
