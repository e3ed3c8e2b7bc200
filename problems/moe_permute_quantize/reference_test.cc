#include "problems/moe_permute_quantize/reference.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <map>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"
#include "problems/reference_util.h"

namespace ws::moe {
namespace {

TEST(PaddedRowsBoundTest, WorkedValues) {
  EXPECT_EQ(PaddedRowsBound(1, 1, 4, 32), 32);             // one slot, one group padded to 32
  EXPECT_EQ(PaddedRowsBound(4, 2, 3, 32), 128);            // 8 + 3 * 31 = 101 -> 128
  EXPECT_EQ(PaddedRowsBound(1, 8, 256, 128), 1024);        // 8 + 8 * 127 = 1024: only 8 groups used
  EXPECT_EQ(PaddedRowsBound(16384, 8, 256, 128), 163584);  // 131072 + 256 * 127, a multiple
  EXPECT_EQ(PaddedRowsBound(16384, 8, 256, 32), 139008);   // 131072 + 256 * 31 = 139008
}

struct Layout {
  std::vector<int32_t> offsets, slot_row, row_slot;
};

Layout RunRow(const std::vector<int32_t>& idx, int64_t t, int64_t k, int64_t e, int64_t align) {
  const int64_t m_pad = PaddedRowsBound(t, k, e, align);
  Layout l{std::vector<int32_t>(e), std::vector<int32_t>(t * k), std::vector<int32_t>(m_pad)};
  const Status s = PermuteLayout(idx.data(), t, k, e, align, m_pad, l.offsets.data(),
                                 l.slot_row.data(), l.row_slot.data());
  EXPECT_TRUE(s.ok()) << s.message();
  return l;
}

TEST(PermuteLayoutTest, WorkedExample) {
  // Three tokens, K = 2, four experts, groups padded to 4. Slots (t, j) -> s = 2t + j:
  // s0 e2, s1 e0, s2 e0, s3 e3, s4 e2, s5 e1. Counts 2, 1, 2, 1 -> every group 4 rows.
  const Layout l = RunRow({2, 0, 0, 3, 2, 1}, 3, 2, 4, 4);
  EXPECT_EQ(l.offsets, (std::vector<int32_t>{4, 8, 12, 16}));
  EXPECT_EQ(l.slot_row, (std::vector<int32_t>{8, 0, 1, 12, 9, 4}));
  // M_pad = round_up(6 + 4 * 3, 4) = 20: rows 16..19 are past the last group.
  EXPECT_EQ(l.row_slot, (std::vector<int32_t>{1,  2,  -1, -1, 5,  -1, -1, -1, 0,  4,
                                              -1, -1, 3,  -1, -1, -1, -1, -1, -1, -1}));
}

TEST(PermuteLayoutTest, EmptyExpertsAndFullGroups) {
  // Experts 0, 2 and 4 get nothing: their groups are empty (offsets repeat). Expert 1 gets
  // exactly 4 slots (no padding), expert 3 gets 5 (padded to 8).
  const std::vector<int32_t> idx = {1, 3, 3, 1, 1, 3, 3, 1, 3};  // T = 9, K = 1
  const Layout l = RunRow(idx, 9, 1, 5, 4);
  EXPECT_EQ(l.offsets, (std::vector<int32_t>{0, 4, 4, 12, 12}));
  EXPECT_EQ(l.slot_row, (std::vector<int32_t>{0, 4, 5, 1, 2, 6, 7, 3, 8}));
  ASSERT_EQ(l.row_slot.size(), 24u);  // round_up(9 + 5 * 3, 4)
  EXPECT_EQ(l.row_slot[8], 8);
  for (int r = 9; r < 24; ++r) EXPECT_EQ(l.row_slot[r], -1) << r;
}

TEST(PermuteLayoutTest, OneToken) {
  const Layout l = RunRow({7, 0, 3}, 1, 3, 8, 32);
  EXPECT_EQ(l.offsets, (std::vector<int32_t>{32, 32, 32, 64, 64, 64, 64, 96}));
  EXPECT_EQ(l.slot_row, (std::vector<int32_t>{64, 0, 32}));
  ASSERT_EQ(l.row_slot.size(), 96u);  // 3 + 3 * 31 = 96: the bound is reached exactly
  EXPECT_EQ(l.row_slot[0], 1);
  EXPECT_EQ(l.row_slot[32], 2);
  EXPECT_EQ(l.row_slot[64], 0);
}

TEST(PermuteLayoutTest, RandomSkewedRoutingIsAPermutation) {
  std::mt19937_64 rng(9);
  for (const auto& [t, k, e, a] : std::vector<std::tuple<int, int, int, int>>{
           {200, 8, 64, 32}, {37, 2, 8, 128}, {500, 1, 16, 32}, {3, 8, 384, 128}}) {
    std::vector<int32_t> idx(t * k);
    for (int row = 0; row < t; ++row) {
      for (int j = 0; j < k; ++j) {
        int32_t x;
        bool dup;
        do {  // skewed: small ids far more often
          x = static_cast<int32_t>(std::min<uint64_t>(rng() % e, rng() % e));
          dup = false;
          for (int jj = 0; jj < j; ++jj) dup = dup || idx[row * k + jj] == x;
        } while (dup);
        idx[row * k + j] = x;
      }
    }
    const Layout l = RunRow(idx, t, k, e, a);
    std::vector<int> seen(l.row_slot.size(), 0);
    int32_t start = 0;
    for (int x = 0; x < e; ++x) {
      EXPECT_EQ((l.offsets[x] - start) % a, 0);
      int32_t last = -1;
      for (int32_t r = start; r < l.offsets[x]; ++r) {
        const int32_t s = l.row_slot[r];
        if (s < 0) {
          last = t * k;  // padding only after the slots
          continue;
        }
        EXPECT_LT(last, s) << "expert " << x << ": slots ascending, padding last";
        last = s;
        EXPECT_EQ(idx[s], x);
        EXPECT_EQ(l.slot_row[s], r);
      }
      start = l.offsets[x];
    }
    for (int s = 0; s < t * k; ++s) ++seen[l.slot_row[s]];
    for (size_t r = 0; r < seen.size(); ++r) EXPECT_EQ(seen[r], l.row_slot[r] >= 0 ? 1 : 0);
  }
}

TEST(PermuteLayoutTest, RejectsBadIds) {
  std::vector<int32_t> offsets(4), slot_row(2), row_slot(PaddedRowsBound(1, 2, 4, 32));
  const std::vector<int32_t> out_of_range = {0, 4}, negative = {-1, 2}, repeated = {3, 3};
  for (const auto* idx : {&out_of_range, &negative, &repeated}) {
    EXPECT_FALSE(PermuteLayout(idx->data(), 1, 2, 4, 32, static_cast<int64_t>(row_slot.size()),
                               offsets.data(), slot_row.data(), row_slot.data())
                     .ok());
  }
}

TEST(GatherQuantizeTest, RowsAreQuantizedCopiesAndPaddingIsZero) {
  // Two tokens, H = 64, K = 2: token 0 is all 1.0 (q 0x78 = 256, scale 119 = 2^-8), token 1 is
  // 3.0 in its first block and -0 in its second (q 0x80, amax 0 -> scale 0x00).
  const int64_t h = 64, k = 2;
  std::vector<uint16_t> x(2 * h, 0x3F80);
  for (int c = 0; c < 32; ++c) x[h + c] = 0x4040;
  for (int c = 32; c < 64; ++c) x[h + c] = 0x8000;
  const std::vector<int32_t> row_slot = {3, -1, 0, 2, -1};  // token 1, pad, token 0, token 1, pad
  std::vector<uint8_t> q(5 * h, 0xAA), scales(5 * 2, 0xAA);
  for (mxfp8::Rounding mode : {mxfp8::Rounding::kRceil, mxfp8::Rounding::kFloor}) {
    GatherQuantize(x.data(), row_slot.data(), 5, k, h, mode, q.data(), scales.data());
    for (int c = 0; c < h; ++c) {
      EXPECT_EQ(q[2 * h + c], 0x78) << c;
      EXPECT_EQ(q[1 * h + c], 0x00) << c;
      EXPECT_EQ(q[4 * h + c], 0x00) << c;
      EXPECT_EQ(q[0 * h + c], q[3 * h + c]) << c;
    }
    EXPECT_EQ(scales[4], 119);
    EXPECT_EQ(scales[5], 119);
    EXPECT_EQ(scales[2], 0);
    EXPECT_EQ(scales[3], 0);
    EXPECT_EQ(scales[8], 0);
    EXPECT_EQ(scales[9], 0);
    // 3.0: RCEIL scale 2^-7 (3/448 = 0.0067 <= 2^-7), q = 384 = 0x7C; FLOOR scale 2^(1-8), same.
    EXPECT_EQ(scales[0], 120);
    EXPECT_EQ(q[0], 0x7C);
    EXPECT_EQ(q[32], 0x80);  // -0 kept
    EXPECT_EQ(scales[1], 0);
  }
}

// The registered reference on inputs generated as the runner does, at every test and hidden
// shape: the layout rules hold, the padding is zero, and the skewed routing leaves groups empty.
TEST(MoePermuteQuantizeSpecTest, GeneratedInputsEveryShape) {
  auto spec = LoadProblem(std::string(WS_SOURCE_DIR) + "/problems/moe_permute_quantize/spec.json");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  int64_t empty_groups = 0;
  int tested = 0;
  for (const auto* shapes : {&spec->test_shapes, &spec->hidden_shapes}) {
    for (const Shape& shape : *shapes) {
      const std::map<std::string, std::string> params;
      const SymbolTable sym = BindSymbols(*spec, shape, params);
      const int64_t t = sym.at("T"), h = sym.at("H"), e = sym.at("E"), k = sym.at("K"),
                    a = sym.at("A");
      const int64_t mp = PaddedRowsBound(t, k, e, a);
      if (mp * h > (int64_t{1} << 21))
        continue;  // generating inputs on the host is slow; the small shapes cover the rules
      ++tested;
      auto in = GenerateInputs(*spec, sym, 77 + t);
      ASSERT_TRUE(in.ok()) << in.status().message();
      auto out = RunCpuReference(*spec, sym, params, *in);
      ASSERT_TRUE(out.ok()) << out.status().message();
      const std::string where = ShapeText(*spec, shape);
      const auto idx = TensorValues<int32_t>(in->at("idx"));
      const auto offsets = TensorValues<int32_t>(out->at("offsets"));
      const auto slot_row = TensorValues<int32_t>(out->at("slot_row"));
      const auto row_slot = TensorValues<int32_t>(out->at("row_slot"));
      const auto x = TensorValues<uint16_t>(in->at("x"));
      const std::vector<uint8_t>& q = out->at("q").bytes;
      const std::vector<uint8_t>& scales = out->at("scales").bytes;
      ASSERT_EQ(static_cast<int64_t>(row_slot.size()), mp) << where;
      int32_t start = 0;
      for (int64_t x_id = 0; x_id < e; ++x_id) {
        EXPECT_EQ((offsets[x_id] - start) % a, 0) << where;
        EXPECT_GE(offsets[x_id], start) << where;
        empty_groups += offsets[x_id] == start;
        start = offsets[x_id];
      }
      EXPECT_LE(start, mp) << where;
      int64_t used = 0;
      for (int64_t r = 0; r < mp; ++r) {
        if (row_slot[r] < 0) {
          for (int64_t c = 0; c < h; ++c) ASSERT_EQ(q[r * h + c], 0) << where << " row " << r;
          for (int64_t b = 0; b < h / 32; ++b) ASSERT_EQ(scales[r * (h / 32) + b], 0) << where;
          continue;
        }
        ++used;
        EXPECT_LT(r, start) << where;
        EXPECT_EQ(slot_row[row_slot[r]], r) << where;
      }
      EXPECT_EQ(used, t * k) << where;
      // One row's data: the token's row quantized alone.
      const int64_t s0 = t * k - 1, r0 = slot_row[s0];
      std::vector<uint8_t> q_row(h), s_row(h / 32);
      mxfp8::QuantizeRowwise(x.data() + (s0 / k) * h, 1, h, mxfp8::Rounding::kRceil, q_row.data(),
                             s_row.data());
      EXPECT_TRUE(std::equal(q_row.begin(), q_row.end(), q.begin() + r0 * h)) << where;
      EXPECT_TRUE(std::equal(s_row.begin(), s_row.end(), scales.begin() + r0 * (h / 32))) << where;
      // The row's group is its expert's.
      const int32_t ex = idx[s0];
      EXPECT_LT(r0, offsets[ex]) << where;
      EXPECT_GE(r0, ex == 0 ? 0 : offsets[ex - 1]) << where;
    }
  }
  EXPECT_GT(empty_groups, 0);
  EXPECT_GE(tested, 5);
}

}  // namespace
}  // namespace ws::moe
