// Plumbing shared by the CPU references: symbols, parameters and typed views of raw tensor bytes.
#pragma once

#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "problems/problems.h"

namespace ws {

/// The value of symbol `name`, or an error naming it.
inline Result<int64_t> SymbolValue(const SymbolTable& symbols, std::string_view name) {
  const auto it = symbols.find(name);
  if (it == symbols.end())
    return Status::Error("symbol {} needed", name);
  return it->second;
}

/// Parameter `name`: the chosen value, else the spec's default ("" for an unknown parameter).
inline std::string ParamValue(const ProblemSpec& spec,
                              const std::map<std::string, std::string>& params,
                              std::string_view name) {
  const auto it = params.find(std::string(name));
  if (it != params.end())
    return it->second;
  const ParamSpec* p = spec.FindParam(name);
  return p ? p->default_value : "";
}

/// A tensor's elements as T (HostTensor holds raw little-endian bytes; copied through memcpy).
template <typename T>
std::vector<T> TensorValues(const HostTensor& t) {
  std::vector<T> v(t.bytes.size() / sizeof(T));
  if (!v.empty())
    std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(T));
  return v;
}

/// Stores elements into a tensor already sized for them.
template <typename T>
void StoreTensorValues(const std::vector<T>& v, HostTensor& t) {
  if (!v.empty())
    std::memcpy(t.bytes.data(), v.data(), v.size() * sizeof(T));
}

}  // namespace ws
