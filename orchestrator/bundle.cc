#include "orchestrator/bundle.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <nvrtc.h>

#include "base/files.h"
#include "orchestrator/campaign.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

constexpr const char* kBundleFormat = "warpsmith-bundle-1";

json TimingJson(const ShapeTiming& t) {
  json shape = json::object();
  try {
    shape = json::parse(t.shape_json);
  } catch (const json::exception&) {
    shape = t.shape_json;
  }
  return {{"shape", shape},
          {"kind", t.kind},
          {"median_us", t.median_us},
          {"min_us", t.min_us},
          {"p90_us", t.p90_us},
          {"stdev_us", t.stdev_us},
          {"iterations", t.iterations},
          {"sol_us", t.sol_us}};
}

json ParseOr(const std::string& text, json fallback) {
  try {
    return text.empty() ? fallback : json::parse(text);
  } catch (const json::exception&) {
    return fallback;
  }
}

std::map<std::string, int64_t> SymbolsOf(const json& shape) {
  std::map<std::string, int64_t> out;
  if (!shape.is_object())
    return out;
  for (auto& [k, v] : shape.items()) {
    if (v.is_number_integer())
      out[k] = v.get<int64_t>();
  }
  return out;
}

}  // namespace

bool TimeWithinSpread(const ShapeTiming& recorded, const ShapeTiming& measured, double* tolerance) {
  const double tol =
      std::max({3 * std::max(recorded.stdev_us, measured.stdev_us),
                (recorded.p90_us - recorded.min_us) + (measured.p90_us - measured.min_us),
                0.03 * recorded.median_us});
  if (tolerance)
    *tolerance = tol;
  return std::fabs(measured.median_us - recorded.median_us) <= tol;
}

Status WriteBundle(const ExportItem& it, const std::string& dir) {
  std::error_code ec;
  const fs::path problem_dir = fs::path(dir) / "problem" / it.spec.name;
  fs::create_directories(problem_dir, ec);
  if (ec)
    return Status::Error("cannot create {}: {}", dir, ec.message());
  WS_RETURN_IF_ERROR(WriteFileAtomic(dir + "/kernel.cu", it.kernel.source));
  // The device-library headers it was verified with (library/ws/...): verify compiles against
  // these, not against whatever the verifying tree holds.
  WS_RETURN_IF_ERROR(WriteLibraryHeaders(it.kernel.library_headers, dir + "/library"));
  WS_RETURN_IF_ERROR(WriteFileAtomic(dir + "/plan.json", PlanJson(it.plan) + "\n"));
  // The problem as the evaluator needs it: spec (hidden shapes included: a verdict covers them),
  // GPU reference and the other kernels it names.
  for (const auto& e : fs::directory_iterator(it.spec.dir, ec)) {
    if (!e.is_regular_file())
      continue;
    fs::copy_file(e.path(), problem_dir / e.path().filename(), fs::copy_options::overwrite_existing,
                  ec);
    if (ec)
      return Status::Error("copying {}: {}", e.path().string(), ec.message());
  }
  if (ec)
    return Status::Error("reading {}: {}", it.spec.dir, ec.message());
  // The references' own headers, where the evaluator looks for them (beside the problem folder).
  const std::string ref_library = ReferenceLibraryDir(it.spec);
  if (fs::is_directory(ref_library, ec)) {
    fs::copy(ref_library, fs::path(dir) / "problem" / "include",
             fs::copy_options::recursive | fs::copy_options::overwrite_existing, ec);
    if (ec)
      return Status::Error("copying {}: {}", ref_library, ec.message());
  }

  int nv_major = 0, nv_minor = 0;
  nvrtcVersion(&nv_major, &nv_minor);
  const EvaluationRecord& e = it.evaluation;
  json b;
  b["format"] = kBundleFormat;
  b["function"] = it.function;
  b["problem"] = it.spec.name;
  b["params"] = it.params;
  b["knobs"] = it.knobs;
  b["verified"] = it.verified;
  b["kernel"] = {
      {"id", it.kernel.id},
      {"hash", it.kernel.hash},
      {"origin", it.kernel.origin},
      {"agent", it.kernel.agent},
      {"parent_id", it.kernel.parent_id ? json(*it.kernel.parent_id) : json(nullptr)},
      {"campaign_id", it.kernel.campaign_id ? json(*it.kernel.campaign_id) : json(nullptr)},
      {"created_at", it.kernel.created_at}};
  b["build"] = {
      {"arch", e.arch},
      {"defines", KernelDefines(it.spec, it.params, it.knobs)},
      {"compiler", "NVRTC"},
      {"nvrtc_version", fmt::format("{}.{}", nv_major, nv_minor)},
      {"options",
       {"--gpu-architecture=" + (e.arch.empty() ? std::string("sm_90a") : e.arch), "--std=c++17",
        "-default-device", "--no-source-include", "-lineinfo", "-Xptxas=-v", "-DWS_NVRTC=1"}}};
  b["device"] = {{"gpu", e.gpu}, {"driver", e.driver}};
  // The store keeps no seeds: every evaluation draws fresh ones from the OS's CSPRNG.
  b["seeds"] = nullptr;
  b["seeds_note"] = "not recorded: each evaluation draws fresh seeds from the OS's CSPRNG";
  json timings = json::array();
  for (const auto& t : e.timings) timings.push_back(TimingJson(t));
  b["evaluation"] = {{"id", e.id},
                     {"verdict", e.verdict},
                     {"message", e.message},
                     {"time_us", e.time_us},
                     {"sol_fraction", e.sol_fraction},
                     {"gpu_seconds", e.gpu_seconds},
                     {"created_at", e.created_at},
                     {"purpose", e.purpose},
                     {"flagged", e.flagged},
                     {"flag_reason", e.flag_reason},
                     {"resources", ParseOr(e.resources_json, json::object())},
                     {"sandbox", ParseOr(e.sandbox_json, json::object())},
                     {"deep", ParseOr(e.deep_json, json::object())},
                     {"timings", timings}};
  b["timings_note"] =
      "per bench shape: median, min, p90 and standard deviation over `iterations` timed runs "
      "(the store keeps these summaries, not the individual samples)";
  return WriteFileAtomic(dir + "/bundle.json", b.dump(2) + "\n");
}

Result<std::vector<std::string>> FindBundles(const std::string& path) {
  std::error_code ec;
  if (!fs::is_directory(path, ec))
    return Status::Error("{} is not a bundle folder", path);
  if (fs::exists(fs::path(path) / "bundle.json"))
    return std::vector<std::string>{path};
  std::vector<std::string> out;
  for (const auto& e : fs::directory_iterator(path, ec)) {
    if (e.is_directory() && fs::exists(e.path() / "bundle.json"))
      out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  if (out.empty()) {
    return Status::Error("{} holds no bundle (no bundle.json in it or its subfolders)", path);
  }
  return out;
}

Result<VerifyOutcome> VerifyBundle(const std::string& dir, Store& store,
                                   const EvaluatorOptions& opts) {
  WS_ASSIGN_OR_RETURN(std::string text, ReadFile(dir + "/bundle.json"));
  json b;
  try {
    b = json::parse(text);
  } catch (const json::exception& e) {
    return Status::Error("{}/bundle.json: {}", dir, e.what());
  }
  if (!b.is_object() || b.value("format", "") != kBundleFormat) {
    return Status::Error("{}/bundle.json: not a {} bundle", dir, kBundleFormat);
  }
  VerifyOutcome out;
  auto line = [&](const std::string& s) { out.report += s + "\n"; };
  try {
    WS_ASSIGN_OR_RETURN(
        ProblemSpec spec,
        LoadProblem(dir + "/problem/" + b.at("problem").get<std::string>() + "/spec.json"));
    if (FindCpuReference(spec.cpu_reference) == nullptr) {
      return Status::Error("{}: this warpsmith has no CPU reference '{}'", dir, spec.cpu_reference);
    }
    WS_ASSIGN_OR_RETURN(std::string source, ReadFile(dir + "/kernel.cu"));
    const json& kernel = b.at("kernel");
    const json& ev = b.at("evaluation");
    const std::string recorded_verdict = ev.at("verdict").get<std::string>();
    const std::string recorded_gpu = b.at("device").value("gpu", "");
    line(fmt::format("bundle {}: {} ({}), kernel {} sha256 {}", dir, spec.name,
                     b.at("params").dump(), kernel.at("id").get<int64_t>(),
                     kernel.at("hash").get<std::string>()));
    // The kernel compiles against the bundle's own copy of the device library, never this tree's.
    EvaluatorOptions bundle_opts = opts;
    bundle_opts.kernel_library = dir + "/library";
    const LibraryHeaders headers = LibraryClosure(source, bundle_opts.kernel_library);
    if (KernelHash(source, headers) != kernel.at("hash").get<std::string>()) {
      line("MISMATCH: kernel.cu and library/ do not hash to the recorded sha256");
      out.match = false;
      return out;
    }
    std::map<std::string, std::string> raw_params;
    for (auto& [k, v] : b.at("params").items()) raw_params[k] = v.get<std::string>();
    WS_ASSIGN_OR_RETURN(auto params, ResolveParams(spec, raw_params));
    std::map<std::string, int64_t> knobs;
    for (auto& [k, v] : b.at("knobs").items()) knobs[k] = v.get<int64_t>();

    EvalRequest req;
    req.spec = &spec;
    req.source = source;
    req.source_name = dir + "/kernel.cu";
    req.params = params;
    req.knobs = knobs;
    std::string why;
    WS_ASSIGN_OR_RETURN(auto device, ProbeDevice(opts, &why));
    if (!device) {
      // No GPU: compile for both architectures and validate the plan; say plainly what is missing.
      for (Arch arch : {Arch::kSm90a, Arch::kSm100a}) {
        req.arch = arch;
        req.compile_only = true;
        WS_ASSIGN_OR_RETURN(EvalResult r, Evaluate(req, bundle_opts));
        const bool ok = r.verdict == Verdict::kNotRun;
        line(fmt::format("{}: {}{}", ArchName(arch), ok ? "compiled, plan valid" : "FAILED: ",
                         ok ? "" : std::string(VerdictName(r.verdict)) + ": " + r.message));
        if (!ok)
          out.match = false;
      }
      line(fmt::format(
          "no GPU here ({}): cannot re-check or re-time; recorded: {}{}", why, recorded_verdict,
          ev.value("time_us", 0.0) > 0
              ? fmt::format(", {:.3f} us geomean on {}", ev.value("time_us", 0.0), recorded_gpu)
              : ""));
      return out;
    }
    out.ran = true;
    WS_ASSIGN_OR_RETURN(req.arch, ParseArch(device->arch));
    req.device = *device;
    WS_ASSIGN_OR_RETURN(req.ceilings, CeilingsFor(store, *device, opts));
    WS_ASSIGN_OR_RETURN(EvalResult r, Evaluate(req, bundle_opts));
    const std::string verdict(VerdictName(r.verdict));
    line(fmt::format("on {} ({}, driver {}): verdict {} (recorded {}){}", device->name,
                     device->arch, device->driver, verdict, recorded_verdict,
                     r.message.empty() ? "" : ": " + r.message));
    if (recorded_verdict == "not_run") {
      // An unverified bundle recorded no run: there is nothing to reproduce but a pass.
      line("recorded without a run (unverified): nothing to compare but the verdict");
      if (r.verdict != Verdict::kOk) {
        line("MISMATCH: verdict is not ok");
        out.match = false;
      }
      return out;
    }
    if (verdict != recorded_verdict) {
      line("MISMATCH: verdict");
      out.match = false;
    }
    if (recorded_gpu != device->name) {
      line(fmt::format("times not compared: recorded on {}, this is {}",
                       recorded_gpu.empty() ? "no GPU" : recorded_gpu, device->name));
      return out;
    }
    if (b.at("device").value("driver", "") != device->driver) {
      line(fmt::format("note: recorded with driver {}, this is {}",
                       b.at("device").value("driver", ""), device->driver));
    }
    for (const auto& t : ev.at("timings")) {
      ShapeTiming rec;
      rec.median_us = t.value("median_us", 0.0);
      rec.min_us = t.value("min_us", 0.0);
      rec.p90_us = t.value("p90_us", 0.0);
      rec.stdev_us = t.value("stdev_us", 0.0);
      const auto symbols = SymbolsOf(t.at("shape"));
      const CaseResult* found = nullptr;
      for (const auto& c : r.cases) {
        if (!c.timing)
          continue;
        std::map<std::string, int64_t> cs(c.shape.symbols.begin(), c.shape.symbols.end());
        if (cs == symbols)
          found = &c;
      }
      if (!found) {
        line(fmt::format("MISMATCH: {}: recorded {:.3f} us, not timed now", t.at("shape").dump(),
                         rec.median_us));
        out.match = false;
        continue;
      }
      ShapeTiming now;
      now.median_us = found->timing->median_us;
      now.min_us = found->timing->min_us;
      now.p90_us = found->timing->p90_us;
      now.stdev_us = found->timing->stdev_us;
      double tol = 0;
      const bool ok = TimeWithinSpread(rec, now, &tol);
      line(fmt::format("{}{}: {:.3f} us now, {:.3f} us recorded (allowed +-{:.3f})",
                       ok ? "" : "MISMATCH: ", ShapeText(spec, found->shape), now.median_us,
                       rec.median_us, tol));
      if (!ok)
        out.match = false;
    }
  } catch (const json::exception& e) {
    return Status::Error("{}/bundle.json: {}", dir, e.what());
  }
  return out;
}

}  // namespace ws
