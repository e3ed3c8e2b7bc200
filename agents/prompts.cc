#include "agents/prompts.h"

#include <fmt/format.h>

namespace ws {
namespace {

std::string ShapeLine(const ProblemSpec& spec, const Shape& s) {
  std::string t;
  for (const auto& name : spec.symbols) {
    auto it = s.symbols.find(name);
    if (it != s.symbols.end())
      t += fmt::format("{}{}={}", t.empty() ? "" : " ", name, it->second);
  }
  if (!s.source.empty())
    t += " (" + s.source + ")";
  return t;
}

constexpr const char* kSourceSchema = R"({
  "type": "object",
  "properties": {
    "source": {"type": "string", "description": "the whole candidate .cu: plan comment + device code"},
    "knobs": {"type": "object", "additionalProperties": {"type": "integer"},
              "description": "knob values to use instead of the plan's defaults"}
  },
  "required": ["source"]
})";

}  // namespace

std::string WorkerSystemPrompt() {
  return R"P(You write fast, correct CUDA kernels for NVIDIA Hopper (sm_90a) and Blackwell (sm_100a).

A candidate is ONE CUDA translation unit of device code whose head is a launch plan:

/* warpsmith:plan
{ "knobs":  { "ROWS": [4, 8, 16] },
  "launch": [ { "kernel": "my_kernel", "grid": ["ceil_div(M, ROWS)"], "block": ["256"],
                "smem": "0", "args": ["x", "q", "scales", "M", "K"] } ],
  "workspace": { "bytes": "0", "zero": false } }
*/
extern "C" __global__ void my_kernel(...) { ... }

Rules:
- No host code runs: the trusted runner reads the plan and launches the kernels itself. Kernels are
  extern "C" __global__. Expressions may use the shape symbols, parameters (as value indices),
  knobs and num_sms. Args: tensor names (device pointers), "workspace", an int32 expression, or
  {"i64": expr}. Optional per launch: "cluster", "pdl": true (may start before the previous
  launch ends: call griddepcontrol.wait before reading what it wrote) and "when": expr (launched
  only where nonzero, e.g. a small-M path beside the main kernel).
- Knobs are compile-time constants (-DNAME=value); the first listed value is the default.
  Parameters arrive as -DWS_<NAME>=<index> with -DWS_<NAME>_<VALUE>=<index> for each value.
- NVRTC compiles it for sm_90a and sm_100a without -rdc; include only CUDA headers, CCCL and
  warpsmith's device library (#include "ws/NAME.cuh": trusted headers; the task shows those the
  given kernels use). Guard architecture-specific code with __CUDA_ARCH__.
- Outputs are checked against a trusted reference on fresh random inputs with special values,
  bit for bit for quantizers; outputs are poisoned before each run and guarded against
  out-of-bounds writes. Besides the test and bench shapes there are hidden shapes you will never
  see: the kernel must be correct for every valid shape. Do not specialize on shape values.
- Timing uses CUDA events around the plan's launches with a cold L2; a time below the
  speed-of-light bound is rejected as suspicious.

Tools (each takes {"source": "...", "knobs": {...}}): compile (errors and resource usage), check
(correctness on the test shapes), time (correctness and bench timings), resource_report
(registers, shared memory, spills), sass_summary (instruction mix), submit (the final candidate;
it is judged on every shape, hidden ones included). Iterate: compile, check, time, improve, then
submit. If you cannot call tools, answer with the whole candidate in a ```cuda block.)P";
}

std::string WorkerTaskPrompt(const ProblemSpec& spec,
                             const std::map<std::string, std::string>& params,
                             const std::vector<KernelExample>& kernels,
                             const std::string& leaderboard) {
  std::string t = fmt::format("# Problem: {}\n\n{}\n\nShape symbols:", spec.name, spec.description);
  for (const auto& s : spec.symbols) t += " " + s;
  t += "\nConstraints:";
  for (const auto& c : spec.constraints) t += " [" + c + "]";
  t += "\n\nTensors:\n";
  for (const auto& ts : spec.tensors) {
    std::string dims;
    for (const auto& d : ts.shape) dims += (dims.empty() ? "" : ", ") + d;
    t += fmt::format("- {} {} {} [{}]\n", ts.role == TensorRole::kInput ? "input " : "output",
                     ts.name, DTypeName(ts.dtype), dims);
  }
  if (!params.empty()) {
    t += "\nParameters for this campaign:";
    for (const auto& [k, v] : params) t += fmt::format(" {}={}", k, v);
    t += "\n";
  }
  t += "\nTest shapes (correctness):\n";
  for (const auto& s : spec.test_shapes) t += "- " + ShapeLine(spec, s) + "\n";
  t += "Bench shapes (timed; the score is their geometric mean):\n";
  for (const auto& s : spec.bench_shapes) t += "- " + ShapeLine(spec, s) + "\n";
  t +=
      fmt::format("Hidden shapes: {} (correctness only; never shown)\n", spec.hidden_shapes.size());
  t += fmt::format("Minimum bytes moved: {}\n", spec.cost_bytes);
  for (const auto& k : kernels) {
    t += fmt::format("\n## {}{}\n```cuda\n{}\n```\n", k.label,
                     k.summary.empty() ? "" : " — " + k.summary, k.source);
  }
  // Each library header once, however many kernels include it: they are part of the code.
  std::map<std::string, std::string> headers;
  for (const auto& k : kernels) headers.insert(k.library_headers.begin(), k.library_headers.end());
  for (const auto& [name, text] : headers) {
    t += fmt::format("\n## Device library: {} (#include \"{}\"; read-only)\n```cuda\n{}\n```\n",
                     name, name, text);
  }
  if (!leaderboard.empty())
    t += "\n## Leaderboard\n" + leaderboard + "\n";
  t += "\nWrite a faster kernel than the parent. Start from it; keep what works.\n";
  return t;
}

std::vector<ToolSpec> WorkerToolSpecs() {
  return {
      {"compile",
       "Compile the candidate with NVRTC and validate its plan; returns errors and "
       "per-kernel registers, shared memory and spills.",
       kSourceSchema},
      {"check", "Compile and check correctness on the test shapes (no timing).", kSourceSchema},
      {"time",
       "Check correctness and time the bench shapes; returns per-shape medians and the "
       "fraction of speed-of-light.",
       kSourceSchema},
      {"resource_report", "Registers, shared memory, stack and spills per kernel.", kSourceSchema},
      {"sass_summary", "The SASS instruction mix of the compiled kernels.", kSourceSchema},
      {"submit",
       "Submit the final candidate: judged on every shape, hidden ones included. "
       "Ends the attempt when it is accepted.",
       kSourceSchema},
  };
}

std::string ReviewerSystemPrompt() {
  return R"P(You review a CUDA kernel that is about to top a leaderboard, against its parent and the
rules of the contest. The kernel passed every correctness check, including hidden shapes. Look for
what checks may miss: specializing on particular shape values, reading timers or clocks, relying
on uninitialized or stale memory, writing outside its outputs, skipping work for some inputs,
or anything that breaks the rules (no host code; device code plus a launch plan only).

Answer with one line, exactly one of:
VERDICT: ok
VERDICT: flag: <the reason, one sentence>)P";
}

std::string ReviewerTaskPrompt(const ProblemSpec& spec, const std::string& parent_source,
                               const std::string& candidate_source) {
  return fmt::format(
      "# Problem: {}\n\n{}\n\n## Parent\n```cuda\n{}\n```\n\n## Candidate\n```cuda\n{}\n```\n",
      spec.name, spec.description, parent_source, candidate_source);
}

}  // namespace ws
