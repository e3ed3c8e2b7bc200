// Input generation on the host: the runner's device code (problems/init.h) run as plain C++, so a
// checker, a test or `problems lint` sees exactly the inputs a case ran on.
#include <algorithm>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "problems/init.h"
#include "problems/problems.h"

namespace ws {
namespace {

int DistCode(const std::string& dist) {
  if (dist == "uniform")
    return kWsDistUniform;
  if (dist == "mx_blocks")
    return kWsDistMxBlocks;
  if (dist == "normal_outliers")
    return kWsDistNormalOutliers;
  if (dist == "topk_ids")
    return kWsDistTopkIds;
  if (dist == "group_offsets")
    return kWsDistGroupOffsets;
  return kWsDistNormal;
}

template <typename T>
T Field(const std::map<std::string, T>& f, const char* key) {
  const auto it = f.find(key);
  return it == f.end() ? T{0} : it->second;
}

// The kernel's parameters, from the same fields the job carries (floats rounded the same way
// the runner's job parser rounds them).
WsInitParams Params(const std::string& dist, const InitFields& f, int64_t numel) {
  WsInitParams p{DistCode(dist), 0, 0, 0, 0, 0, 0, 0};
  const auto fl = [&](const char* key) { return static_cast<float>(Field(f.reals, key)); };
  const auto in = [&](const char* key) { return static_cast<long long>(Field(f.ints, key)); };
  switch (p.dist) {
    case kWsDistUniform:
      p.p0 = fl("lo");
      p.p1 = fl("hi");
      break;
    case kWsDistTopkIds:
      p.n0 = in("experts");
      p.n1 = in("k");
      p.p0 = fl("skew");
      break;
    case kWsDistGroupOffsets:
      p.n0 = in("total");
      p.n1 = in("align");
      p.n2 = numel;
      p.p0 = fl("skew");
      p.p1 = fl("empty");
      break;
    default:  // normal, mx_blocks, normal_outliers
      p.n0 = in("tile_cols");  // mx_blocks tiles; 0 otherwise
      p.p0 = fl("mean");
      p.p1 = fl("stddev");
      p.p2 = fl("outlier_fraction");
      p.p3 = fl("outlier_scale");
      break;
  }
  return p;
}

}  // namespace

const InitSpec& InitFor(const InitSpec& in, const SymbolTable& symbols) {
  for (const InitSpec::ByParam& b : in.by_param) {
    const auto it = symbols.find(b.param);
    if (it != symbols.end() && it->second == b.value) return *b.init;
  }
  return in;
}

Result<InitFields> InitJobFields(const TensorSpec& t, const SymbolTable& symbols) {
  const InitSpec& in = InitFor(t.init, symbols);
  InitFields f;
  const auto eval = [&](const std::string& expr, const char* key) -> Status {
    Result<int64_t> v = EvalExpr(expr, symbols);
    if (!v.ok())
      return v.status().Context(fmt::format("tensor '{}': init.{}", t.name, key));
    f.ints[key] = *v;
    return Status::Ok();
  };
  if (in.dist == "uniform") {
    f.reals = {{"lo", in.lo}, {"hi", in.hi}};
  } else if (in.dist == "topk_ids") {
    WS_RETURN_IF_ERROR(eval(in.experts, "experts"));
    WS_RETURN_IF_ERROR(eval(in.k, "k"));
    f.reals["skew"] = in.skew;
  } else if (in.dist == "group_offsets") {
    WS_RETURN_IF_ERROR(eval(in.total, "total"));
    f.ints["align"] = in.align;
    f.reals = {{"skew", in.skew}, {"empty", in.empty}};
  } else if (in.dist == "mx_blocks" && in.mx_tiles) {
    // Tiles span the last dim: the runner needs its length.
    WS_RETURN_IF_ERROR(eval(t.shape.back(), "tile_cols"));
    f.reals = {{"mean", in.mean}, {"stddev", in.stddev}};
  } else if (in.dist == "normal_outliers") {
    f.reals = {{"mean", in.mean},
               {"stddev", in.stddev},
               {"outlier_fraction", in.outlier_fraction},
               {"outlier_scale", in.outlier_scale}};
  } else {
    f.reals = {{"mean", in.mean}, {"stddev", in.stddev}};
  }
  return f;
}

Result<HostTensor> GenerateInput(const ProblemSpec& spec, const SymbolTable& symbols, size_t index,
                                 uint64_t seed) {
  if (index >= spec.tensors.size() || spec.tensors[index].role != TensorRole::kInput) {
    return Status::Error("{}: tensor #{} is not an input", spec.name, index);
  }
  const TensorSpec& t = spec.tensors[index];
  HostTensor out;
  out.dtype = t.dtype;
  WS_ASSIGN_OR_RETURN(out.dims, TensorDims(t, symbols));
  WS_ASSIGN_OR_RETURN(int64_t numel, TensorNumel(t, symbols));
  WS_ASSIGN_OR_RETURN(auto fields, InitJobFields(t, symbols));
  const WsInitParams p = Params(t.init.dist, fields, numel);
  const int dtype = static_cast<int>(t.dtype);
  const int size = DTypeSize(t.dtype);
  const int ti = static_cast<int>(index);
  out.bytes.resize(static_cast<size_t>(numel) * size);
  const auto put = [&](int64_t i, unsigned long long bits) {
    std::memcpy(out.bytes.data() + i * size, &bits, size);  // little endian: the low bytes
  };
  // Elements are independent: large tensors are split over the host's cores.
  const auto parallel = [](int64_t n, int64_t grain, const auto& body) {
    const int64_t threads =
        std::clamp<int64_t>(n / grain, 1, std::max(1u, std::thread::hardware_concurrency()));
    if (threads == 1)
      return body(0, n);
    std::vector<std::thread> pool;
    for (int64_t t = 0; t < threads; ++t) {
      pool.emplace_back(body, n * t / threads, n * (t + 1) / threads);
    }
    for (auto& th : pool) th.join();
  };
  // By pairs (elements i and i + 32, ws_init_pair_p), as the device generates them: the cores
  // split the 64-element groups.
  parallel((numel + 63) / 64, 1 << 10, [&](int64_t g0, int64_t g1) {
    for (int64_t i = g0 * 64; i < std::min(g1 * 64, numel); ++i) {
      if (ws_pair_half(static_cast<unsigned long long>(i)) != 0)
        continue;  // written with its pair
      if (i + 32 < numel) {
        const WsPairBits b = ws_init_pair_p(dtype, p, seed, ti, static_cast<unsigned long long>(i));
        put(i, b.first);
        put(i + 32, b.second);
      } else {
        put(i, ws_init_element_p(dtype, p, seed, ti, static_cast<unsigned long long>(i)));
      }
    }
  });
  return out;
}

Result<TensorMap> GenerateInputs(const ProblemSpec& spec, const SymbolTable& symbols,
                                 uint64_t seed) {
  TensorMap out;
  for (size_t i = 0; i < spec.tensors.size(); ++i) {
    if (spec.tensors[i].role != TensorRole::kInput)
      continue;
    WS_ASSIGN_OR_RETURN(out[spec.tensors[i].name], GenerateInput(spec, symbols, i, seed));
  }
  return out;
}

}  // namespace ws
