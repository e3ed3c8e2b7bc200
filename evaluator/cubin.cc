// A cubin's kernel parameters, read from its ELF without a GPU, and the plan checked against them.

#include <cstdint>
#include <cstring>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "evaluator/internal.h"

namespace ws {
namespace {

// ELF64 little-endian fields, read by offset so no struct layout is assumed.
template <typename T>
bool Read(std::string_view b, uint64_t at, T* out) {
  if (at > b.size() || sizeof(T) > b.size() - at) return false;
  std::memcpy(out, b.data() + at, sizeof(T));
  return true;
}

// .nv.info records: {u8 format, u8 attribute, u16 value-or-size}; format 4 (EIFMT_SVAL) is
// followed by `size` payload bytes. EIATTR_KPARAM_INFO (0x17) describes one parameter:
// {u32 index, u16 ordinal, u16 offset, u32 flags with the size in bits 18-31}.
constexpr uint8_t kFormatSval = 4;
constexpr uint8_t kAttrKparamInfo = 0x17;

Status ParseInfo(std::string_view sec, std::vector<int>* sizes) {
  std::map<int, int> by_ordinal;
  for (uint64_t pos = 0; pos + 4 <= sec.size();) {
    uint8_t format = 0, attr = 0;
    uint16_t value = 0;
    Read(sec, pos, &format);
    Read(sec, pos + 1, &attr);
    Read(sec, pos + 2, &value);
    pos += 4;
    if (format != kFormatSval) continue;
    if (value > sec.size() - pos) return Status::Error("a record runs past its section");
    if (attr == kAttrKparamInfo && value >= 12) {
      uint16_t ordinal = 0;
      uint32_t flags = 0;
      Read(sec, pos + 4, &ordinal);
      Read(sec, pos + 8, &flags);
      if (!by_ordinal.emplace(ordinal, static_cast<int>((flags >> 18) & 0x3fff)).second) {
        return Status::Error("parameter {} described twice", ordinal);
      }
    }
    pos += value;
  }
  for (const auto& [ordinal, size] : by_ordinal) {
    if (ordinal != static_cast<int>(sizes->size())) {
      return Status::Error("parameter ordinals are not 0..{}", by_ordinal.size() - 1);
    }
    sizes->push_back(size);
  }
  return Status::Ok();
}

}  // namespace

Result<std::map<std::string, std::vector<int>>> CubinKernelParams(std::string_view elf) {
  if (elf.size() < 64 || elf.substr(0, 4) != "\x7f" "ELF" || elf[4] != 2 || elf[5] != 1) {
    return Status::Error("not a 64-bit little-endian ELF");
  }
  uint64_t shoff = 0;
  uint16_t shentsize = 0, shnum = 0, shstrndx = 0;
  Read(elf, 0x28, &shoff);
  Read(elf, 0x3a, &shentsize);
  Read(elf, 0x3c, &shnum);
  Read(elf, 0x3e, &shstrndx);
  if (shentsize < 64 || shstrndx >= shnum || shoff > elf.size() ||
      uint64_t{shnum} * shentsize > elf.size() - shoff) {
    return Status::Error("section headers out of bounds");
  }
  // A section's name offset, file offset and size.
  auto header = [&](uint32_t i, uint32_t* name, uint64_t* off, uint64_t* size) {
    const uint64_t h = shoff + uint64_t{i} * shentsize;
    Read(elf, h, name);
    Read(elf, h + 0x18, off);
    Read(elf, h + 0x20, size);
    return *off <= elf.size() && *size <= elf.size() - *off;
  };
  uint32_t unused = 0;
  uint64_t str_off = 0, str_size = 0;
  if (!header(shstrndx, &unused, &str_off, &str_size)) {
    return Status::Error("section names out of bounds");
  }
  const std::string_view names = elf.substr(str_off, str_size);
  constexpr std::string_view kPrefix = ".nv.info.";
  std::map<std::string, std::vector<int>> out;
  for (uint32_t i = 0; i < shnum; ++i) {
    uint32_t name = 0;
    uint64_t off = 0, size = 0;
    if (!header(i, &name, &off, &size)) return Status::Error("section {} out of bounds", i);
    if (name >= names.size()) return Status::Error("section {}'s name out of bounds", i);
    std::string_view n = names.substr(name);
    n = n.substr(0, n.find('\0'));
    if (n.substr(0, kPrefix.size()) != kPrefix) continue;
    std::string kernel(n.substr(kPrefix.size()));
    if (Status s = ParseInfo(elf.substr(off, size), &out[kernel]); !s.ok()) {
      return Status::Error("{}: {}", n, s.message());
    }
  }
  return out;
}

std::string PlanCubinMismatch(const Plan& plan, const ProblemSpec& spec,
                              const std::map<std::string, std::vector<int>>& params) {
  for (size_t k = 0; k < plan.launches.size(); ++k) {
    const PlanLaunch& l = plan.launches[k];
    auto it = params.find(l.kernel);
    if (it == params.end()) continue;  // no parameter records: left to the runner
    const std::vector<int>& sizes = it->second;
    if (sizes.size() != l.args.size()) {
      return fmt::format("launch {} ({}): the kernel takes {} parameters, the plan passes {}", k,
                         l.kernel, sizes.size(), l.args.size());
    }
    for (size_t i = 0; i < sizes.size(); ++i) {
      // A tensor name parses as an i32 expression until resolved against the problem (plan.cc).
      const PlanArg& a = l.args[i];
      const bool tensor = a.kind == PlanArg::Kind::kI32 && spec.FindTensor(a.text);
      const PlanArg::Kind kind = tensor ? PlanArg::Kind::kTensor : a.kind;
      const int want = kind == PlanArg::Kind::kI32         ? 4
                       : kind == PlanArg::Kind::kTensorMap ? 128
                                                           : 8;
      if (sizes[i] != want) {
        return fmt::format(
            "launch {} ({}): parameter {} is {} bytes, the plan passes {} bytes ('{}')", k,
            l.kernel, i, sizes[i], want, l.args[i].text);
      }
    }
  }
  return "";
}

}  // namespace ws
