// DType helpers and .npy files (NumPy format v1.0 written; v1/v2/v3 read).

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "problems/problems.h"

namespace ws {
namespace {

struct DTypeInfo {
  DType type;
  std::string_view name;
  int size;
  std::string_view npy_descr;  // what WriteNpy writes
};

constexpr DTypeInfo kDTypes[] = {
    {DType::kBF16, "bf16", 2, "<u2"},
    {DType::kF32, "f32", 4, "<f4"},
    {DType::kF16, "f16", 2, "<u2"},
    {DType::kFP8E4M3, "fp8_e4m3", 1, "|u1"},
    {DType::kFP8E5M2, "fp8_e5m2", 1, "|u1"},
    {DType::kE8M0, "e8m0", 1, "|u1"},
    {DType::kU8, "u8", 1, "|u1"},
    {DType::kI32, "i32", 4, "<i4"},
    {DType::kI64, "i64", 8, "<i8"},
};

const DTypeInfo& Info(DType t) {
  for (const DTypeInfo& i : kDTypes) {
    if (i.type == t)
      return i;
  }
  WS_CHECK(false && "unknown DType");
  return kDTypes[0];
}

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kMaxHeaderLen = 1 << 16;  // numpy's own readers refuse far less
constexpr size_t kMaxDims = 32;

struct FileCloser {
  void operator()(std::FILE* f) const { std::fclose(f); }
};
using File = std::unique_ptr<std::FILE, FileCloser>;

// The header dict, e.g. {'descr': '<u2', 'fortran_order': False, 'shape': (3, 4), }.
struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  std::vector<int64_t> shape;
  bool has_descr = false, has_order = false, has_shape = false;
};

class HeaderParser {
 public:
  explicit HeaderParser(std::string_view s) : s_(s) {}

  Status Parse(NpyHeader* h) {
    if (!Eat('{'))
      return Err("expected '{'");
    while (!Eat('}')) {
      std::string key;
      WS_RETURN_IF_ERROR(String(&key));
      if (!Eat(':'))
        return Err("expected ':'");
      if (key == "descr") {
        WS_RETURN_IF_ERROR(String(&h->descr));
        h->has_descr = true;
      } else if (key == "fortran_order") {
        WS_RETURN_IF_ERROR(Bool(&h->fortran_order));
        h->has_order = true;
      } else if (key == "shape") {
        WS_RETURN_IF_ERROR(Tuple(&h->shape));
        h->has_shape = true;
      } else {
        return Status::Error("unexpected header key '{}'", key);
      }
      if (!Eat(',') && !Peek('}'))
        return Err("expected ',' or '}'");
    }
    Space();
    if (pos_ != s_.size())
      return Err("trailing characters");
    if (!h->has_descr || !h->has_order || !h->has_shape) {
      return Status::Error("header lacks 'descr', 'fortran_order' or 'shape'");
    }
    return Status::Ok();
  }

 private:
  Status Err(std::string_view what) const {
    return Status::Error("malformed header at offset {}: {}", pos_, what);
  }
  void Space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\n' || s_[pos_] == '\t')) ++pos_;
  }
  bool Peek(char c) {
    Space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  bool Eat(char c) {
    if (!Peek(c))
      return false;
    ++pos_;
    return true;
  }
  Status String(std::string* out) {
    Space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"'))
      return Err("expected a string");
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos)
      return Err("unterminated string");
    *out = std::string(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return Status::Ok();
  }
  Status Bool(bool* out) {
    Space();
    for (const auto& [word, value] : {std::pair{"True", true}, std::pair{"False", false}}) {
      const std::string_view w = word;
      if (s_.substr(pos_, w.size()) == w) {
        pos_ += w.size();
        *out = value;
        return Status::Ok();
      }
    }
    return Err("expected True or False");
  }
  Status Tuple(std::vector<int64_t>* out) {
    if (!Eat('('))
      return Err("expected '('");
    while (!Eat(')')) {
      Space();
      if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') {
        return Err("expected a non-negative dimension");
      }
      int64_t v = 0;
      while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
        if (__builtin_mul_overflow(v, int64_t{10}, &v) ||
            __builtin_add_overflow(v, int64_t{s_[pos_] - '0'}, &v)) {
          return Err("dimension too large");
        }
        ++pos_;
      }
      if (pos_ < s_.size() && s_[pos_] == 'L')
        ++pos_;  // Python 2 longs
      out->push_back(v);
      if (out->size() > kMaxDims)
        return Err("too many dimensions");
      if (!Eat(',') && !Peek(')'))
        return Err("expected ',' or ')'");
    }
    return Status::Ok();
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// Accepts any little-endian integer/float word of the expected size: the expected dtype decides
// how the words are read (bf16 arrives as '<u2', but '<i2'/'<f2' carry the same bits).
Status CheckDescr(std::string_view descr, DType expected) {
  if (descr.size() < 3)
    return Status::Error("unsupported dtype '{}'", descr);
  const char order = descr[0], kind = descr[1];
  int size = 0;
  for (char c : descr.substr(2)) {
    if (c < '0' || c > '9' || size > 1000)
      return Status::Error("unsupported dtype '{}'", descr);
    size = size * 10 + (c - '0');
  }
  if (order == '>' && size > 1)
    return Status::Error("big-endian dtype '{}' is not supported", descr);
  if (order != '<' && order != '|' && order != '>' && order != '=') {
    return Status::Error("unsupported dtype '{}'", descr);
  }
  if (order == '|' && size != 1)
    return Status::Error("unsupported dtype '{}'", descr);
  if (kind != 'u' && kind != 'i' && kind != 'f') {
    return Status::Error("unsupported dtype '{}' (want integer or float words)", descr);
  }
  if (size != DTypeSize(expected)) {
    return Status::Error("dtype '{}' has {}-byte words but {} needs {}", descr, size,
                         DTypeName(expected), DTypeSize(expected));
  }
  return Status::Ok();
}

Result<HostTensor> ReadNpyImpl(const std::string& path, DType expected) {
  File f(std::fopen(path.c_str(), "rb"));
  if (!f)
    return Status::Error("cannot open: {}", std::strerror(errno));
  std::error_code ec;
  const uintmax_t file_size = std::filesystem::file_size(path, ec);
  if (ec)
    return Status::Error("cannot stat: {}", ec.message());

  unsigned char pre[12];
  if (std::fread(pre, 1, 8, f.get()) != 8)
    return Status::Error("truncated: no .npy preamble");
  if (std::memcmp(pre, kMagic, kMagicLen) != 0)
    return Status::Error("not a .npy file (bad magic)");
  const int major = pre[6];
  size_t header_len = 0, preamble = 0;
  if (major == 1) {
    if (std::fread(pre + 8, 1, 2, f.get()) != 2)
      return Status::Error("truncated preamble");
    header_len = pre[8] | (size_t{pre[9]} << 8);
    preamble = 10;
  } else if (major == 2 || major == 3) {
    if (std::fread(pre + 8, 1, 4, f.get()) != 4)
      return Status::Error("truncated preamble");
    header_len = pre[8] | (size_t{pre[9]} << 8) | (size_t{pre[10]} << 16) | (size_t{pre[11]} << 24);
    preamble = 12;
  } else {
    return Status::Error("unsupported .npy version {}.{}", major, pre[7]);
  }
  if (header_len > kMaxHeaderLen)
    return Status::Error("absurd header length {}", header_len);
  if (preamble + header_len > file_size)
    return Status::Error("truncated header");
  std::string header(header_len, '\0');
  if (std::fread(header.data(), 1, header_len, f.get()) != header_len) {
    return Status::Error("truncated header");
  }

  NpyHeader h;
  WS_RETURN_IF_ERROR(HeaderParser(header).Parse(&h));
  WS_RETURN_IF_ERROR(CheckDescr(h.descr, expected));
  if (h.fortran_order)
    return Status::Error("fortran_order arrays are not supported");

  HostTensor t;
  t.dtype = expected;
  t.dims = h.shape;
  int64_t bytes = DTypeSize(expected);
  for (int64_t d : t.dims) {
    if (__builtin_mul_overflow(bytes, d, &bytes))
      return Status::Error("absurd shape");
  }
  const uintmax_t have = file_size - preamble - header_len;
  if (have < static_cast<uintmax_t>(bytes)) {
    return Status::Error("truncated data: shape needs {} bytes, file has {}", bytes, have);
  }
  if (have > static_cast<uintmax_t>(bytes)) {
    return Status::Error("{} bytes of trailing data after the array", have - bytes);
  }
  t.bytes.resize(static_cast<size_t>(bytes));
  if (!t.bytes.empty() &&
      std::fread(t.bytes.data(), 1, t.bytes.size(), f.get()) != t.bytes.size()) {
    return Status::Error("read failed: {}", std::strerror(errno));
  }
  return t;
}

Status WriteNpyImpl(const std::string& path, const HostTensor& t) {
  int64_t numel = 1;
  for (int64_t d : t.dims) {
    if (d < 0 || __builtin_mul_overflow(numel, d, &numel))
      return Status::Error("bad dims");
  }
  if (static_cast<uint64_t>(numel) * DTypeSize(t.dtype) != t.bytes.size()) {
    return Status::Error("tensor holds {} bytes but its dims need {}", t.bytes.size(),
                         numel * DTypeSize(t.dtype));
  }
  std::string shape = "(";
  for (size_t i = 0; i < t.dims.size(); ++i) shape += fmt::format("{}, ", t.dims[i]);
  if (t.dims.size() == 1) {
    shape.pop_back();  // "(5,)"
  } else if (!t.dims.empty()) {
    shape.resize(shape.size() - 2);
  }
  shape += ")";
  std::string header = fmt::format("{{'descr': '{}', 'fortran_order': False, 'shape': {}, }}",
                                   Info(t.dtype).npy_descr, shape);
  // Pad with spaces and a final newline so the data starts 64-byte aligned.
  const size_t total = (10 + header.size() + 1 + 63) / 64 * 64;
  header.append(total - 10 - header.size() - 1, ' ');
  header += '\n';
  if (header.size() > 0xFFFF)
    return Status::Error("header too long for .npy v1.0");

  File f(std::fopen(path.c_str(), "wb"));
  if (!f)
    return Status::Error("cannot create: {}", std::strerror(errno));
  unsigned char pre[10];
  std::memcpy(pre, kMagic, kMagicLen);
  pre[6] = 1;
  pre[7] = 0;
  pre[8] = static_cast<unsigned char>(header.size() & 0xFF);
  pre[9] = static_cast<unsigned char>(header.size() >> 8);
  if (std::fwrite(pre, 1, sizeof(pre), f.get()) != sizeof(pre) ||
      std::fwrite(header.data(), 1, header.size(), f.get()) != header.size() ||
      (!t.bytes.empty() &&  // an empty vector's data() may be null
       std::fwrite(t.bytes.data(), 1, t.bytes.size(), f.get()) != t.bytes.size())) {
    return Status::Error("write failed: {}", std::strerror(errno));
  }
  if (std::fclose(f.release()) != 0) {
    return Status::Error("close failed: {}", std::strerror(errno));
  }
  return Status::Ok();
}

}  // namespace

int DTypeSize(DType t) {
  return Info(t).size;
}

std::string_view DTypeName(DType t) {
  return Info(t).name;
}

Result<DType> ParseDType(std::string_view name) {
  std::string known;
  for (const DTypeInfo& i : kDTypes) {
    if (i.name == name)
      return i.type;
    known += fmt::format("{}{}", known.empty() ? "" : ", ", i.name);
  }
  return Status::Error("unknown dtype '{}' (known: {})", name, known);
}

int64_t HostTensor::numel() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

Result<HostTensor> ReadNpy(const std::string& path, DType expected) {
  Result<HostTensor> r = ReadNpyImpl(path, expected);
  if (!r.ok())
    return r.status().Context(path);
  return r;
}

Status WriteNpy(const std::string& path, const HostTensor& t) {
  return WriteNpyImpl(path, t).Context(path);
}

}  // namespace ws
