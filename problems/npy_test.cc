#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws {
namespace {

namespace fs = std::filesystem;

class NpyTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           fmt::format("ws_npy_test_{}_{}", getpid(),
                       ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string Path(const std::string& name) const { return (dir_ / name).string(); }

  // Writes a raw .npy: preamble for `major`, then `header` as given, then `data`.
  std::string WriteRaw(const std::string& name, int major, std::string header,
                       const std::string& data) {
    std::string bytes = "\x93NUMPY";
    bytes += static_cast<char>(major);
    bytes += '\0';
    const size_t n = header.size();
    bytes += static_cast<char>(n & 0xFF);
    bytes += static_cast<char>((n >> 8) & 0xFF);
    if (major >= 2) {
      bytes += static_cast<char>((n >> 16) & 0xFF);
      bytes += static_cast<char>((n >> 24) & 0xFF);
    }
    return WriteBytes(name, bytes + header + data);
  }
  std::string WriteBytes(const std::string& name, const std::string& bytes) {
    const std::string p = Path(name);
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
  }

  fs::path dir_;
};

TEST(DTypeTest, NamesSizesAndParsing) {
  struct Case {
    DType t;
    const char* name;
    int size;
  };
  const Case cases[] = {
      {DType::kBF16, "bf16", 2},
      {DType::kF32, "f32", 4},
      {DType::kF16, "f16", 2},
      {DType::kFP8E4M3, "fp8_e4m3", 1},
      {DType::kFP8E5M2, "fp8_e5m2", 1},
      {DType::kE8M0, "e8m0", 1},
      {DType::kU8, "u8", 1},
      {DType::kI32, "i32", 4},
      {DType::kI64, "i64", 8},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(DTypeName(c.t), c.name);
    EXPECT_EQ(DTypeSize(c.t), c.size) << c.name;
    const auto parsed = ParseDType(c.name);
    ASSERT_TRUE(parsed.ok()) << c.name;
    EXPECT_EQ(*parsed, c.t);
  }
  const auto bad = ParseDType("bfloat16");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("'bfloat16'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("fp8_e4m3"), std::string::npos);  // lists known names
}

TEST_F(NpyTest, RoundTripsEveryDType) {
  const std::vector<std::vector<int64_t>> shapes = {{}, {5}, {3, 4}, {2, 0, 3}, {2, 3, 4}};
  for (DType t : {DType::kBF16, DType::kF32, DType::kF16, DType::kFP8E4M3, DType::kFP8E5M2,
                  DType::kE8M0, DType::kU8, DType::kI32, DType::kI64}) {
    for (const auto& dims : shapes) {
      HostTensor h;
      h.dtype = t;
      h.dims = dims;
      h.bytes.resize(h.numel() * DTypeSize(t));
      for (size_t i = 0; i < h.bytes.size(); ++i) h.bytes[i] = static_cast<uint8_t>(i * 37 + 11);
      const std::string p = Path(fmt::format("{}_{}.npy", DTypeName(t), dims.size()));
      ASSERT_TRUE(WriteNpy(p, h).ok());
      EXPECT_EQ((fs::file_size(p) - h.bytes.size()) % 64, 0u) << "data should be 64-byte aligned";
      const auto r = ReadNpy(p, t);
      ASSERT_TRUE(r.ok()) << r.status().message();
      EXPECT_EQ(r->dtype, t);
      EXPECT_EQ(r->dims, dims);
      EXPECT_EQ(r->bytes, h.bytes);
    }
  }
}

TEST_F(NpyTest, WritesNumpyHeader) {
  HostTensor h{DType::kBF16, {2, 3}, std::vector<uint8_t>(12, 0)};
  ASSERT_TRUE(WriteNpy(Path("a.npy"), h).ok());
  std::ifstream in(Path("a.npy"), std::ios::binary);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all.substr(0, 8), std::string("\x93NUMPY\x01\x00", 8));
  EXPECT_NE(all.find("{'descr': '<u2', 'fortran_order': False, 'shape': (2, 3), }"),
            std::string::npos);
  h = HostTensor{DType::kE8M0, {7}, std::vector<uint8_t>(7, 0)};
  ASSERT_TRUE(WriteNpy(Path("b.npy"), h).ok());
  std::ifstream in2(Path("b.npy"), std::ios::binary);
  all.assign((std::istreambuf_iterator<char>(in2)), std::istreambuf_iterator<char>());
  EXPECT_NE(all.find("'descr': '|u1'"), std::string::npos);
  EXPECT_NE(all.find("'shape': (7,)"), std::string::npos);
}

TEST_F(NpyTest, ReadsVersions2And3AndOtherSpellings) {
  const std::string data = std::string("\x01\x00\x02\x00\x03\x00", 6);
  for (int major : {1, 2, 3}) {
    const std::string p = WriteRaw(fmt::format("v{}.npy", major), major,
                                   "{\"shape\": (3,), \"fortran_order\": False, \"descr\": "
                                   "\"<i2\"}\n",
                                   data);
    const auto r = ReadNpy(p, DType::kBF16);
    ASSERT_TRUE(r.ok()) << major << ": " << r.status().message();
    EXPECT_EQ(r->dims, std::vector<int64_t>{3});
    EXPECT_EQ(r->bytes.size(), 6u);
  }
}

TEST_F(NpyTest, RejectsMalformedFiles) {
  using namespace std::string_literals;
  const std::string two_u2 = std::string(4, '\x01');
  struct Case {
    const char* name;
    std::string bytes;  // full file, or empty to use header/data below
    int major;
    std::string header;
    std::string data;
    DType expected;
    const char* want;
  };
  const std::string ok_header = "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), }";
  const std::vector<Case> cases = {
      {"empty", "", 0, "", "", DType::kBF16, "truncated"},
      {"bad_magic", "\x93NUMPZ\x01\x00\x00\x00"s, 0, "", "", DType::kBF16, "bad magic"},
      {"version", "", 4, ok_header, two_u2, DType::kBF16, "unsupported .npy version 4"},
      {"big_endian", "", 1, "{'descr': '>u2', 'fortran_order': False, 'shape': (2,), }", two_u2,
       DType::kBF16, "big-endian"},
      {"fortran", "", 1, "{'descr': '<u2', 'fortran_order': True, 'shape': (2,), }", two_u2,
       DType::kBF16, "fortran_order"},
      {"word_size", "", 1, ok_header, two_u2, DType::kFP8E4M3, "2-byte words but fp8_e4m3"},
      {"word_size_f32", "", 1, ok_header, two_u2, DType::kF32, "needs 4"},
      {"object", "", 1, "{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", two_u2,
       DType::kBF16, "unsupported dtype"},
      {"complex", "", 1, "{'descr': '<c8', 'fortran_order': False, 'shape': (1,), }",
       std::string(8, '\0'), DType::kI64, "unsupported dtype"},
      {"truncated_data", "", 1, ok_header, "\x01\x01\x01", DType::kBF16, "truncated data"},
      {"trailing_data", "", 1, ok_header, two_u2 + "xx", DType::kBF16, "trailing data"},
      {"truncated_header", "\x93NUMPY\x01\x00\x40\x00{'descr'"s, 0, "", "", DType::kBF16,
       "truncated header"},
      {"absurd_header", "\x93NUMPY\x02\x00\x00\x00\x00\x7F"s, 0, "", "", DType::kBF16,
       "absurd header length"},
      {"absurd_shape", "", 1,
       "{'descr': '<u2', 'fortran_order': False, 'shape': (4294967296, 4294967296), }", "",
       DType::kBF16, "absurd shape"},
      {"negative_dim", "", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (-2,), }", two_u2,
       DType::kBF16, "non-negative dimension"},
      {"missing_key", "", 1, "{'descr': '<u2', 'shape': (2,), }", two_u2, DType::kBF16, "lacks"},
      {"unknown_key", "", 1, "{'descr': '<u2', 'fortran_order': False, 'shape': (2,), 'x': 1}",
       two_u2, DType::kBF16, "unexpected header key 'x'"},
      {"not_a_dict", "", 1, "['descr']", two_u2, DType::kBF16, "expected '{'"},
      {"garbage_after", "", 1, ok_header + " junk", two_u2, DType::kBF16, "trailing characters"},
  };
  for (const Case& c : cases) {
    const std::string file = std::string(c.name) + ".npy";
    const std::string p =
        c.major == 0 ? WriteBytes(file, c.bytes) : WriteRaw(file, c.major, c.header, c.data);
    const auto r = ReadNpy(p, c.expected);
    ASSERT_FALSE(r.ok()) << c.name;
    EXPECT_NE(r.status().message().find(c.want), std::string::npos)
        << c.name << ": " << r.status().message();
    EXPECT_EQ(r.status().message().rfind(p + ": ", 0), 0u)
        << "message should start with the file: " << r.status().message();
  }
  const auto missing = ReadNpy(Path("missing.npy"), DType::kU8);
  ASSERT_FALSE(missing.ok());
  EXPECT_NE(missing.status().message().find("missing.npy: cannot open"), std::string::npos);
}

TEST_F(NpyTest, WriteRejectsInconsistentTensor) {
  HostTensor h{DType::kI32, {2, 2}, std::vector<uint8_t>(15, 0)};
  const Status s = WriteNpy(Path("bad.npy"), h);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("bad.npy"), std::string::npos);
  EXPECT_NE(s.message().find("15 bytes"), std::string::npos);
}

}  // namespace
}  // namespace ws
