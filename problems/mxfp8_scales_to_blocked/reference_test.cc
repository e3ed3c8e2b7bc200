#include "problems/mxfp8_scales_to_blocked/reference.h"

#include <cstdint>
#include <vector>

#include <gtest/gtest.h>

#include "problems/problems.h"

namespace ws::mxfp8 {
namespace {

const std::string kSpec =
    std::string(WS_SOURCE_DIR) + "/problems/mxfp8_scales_to_blocked/spec.json";

TEST(ScalesToBlockedTest, OffsetInTileHandDerived) {
  EXPECT_EQ(OffsetInTile(0, 0), 0);
  EXPECT_EQ(OffsetInTile(0, 3), 3);
  EXPECT_EQ(OffsetInTile(1, 0), 16);   // the next row is the next 16-byte line
  EXPECT_EQ(OffsetInTile(32, 0), 4);   // row 32 shares line 0 with row 0, after its 4 bytes
  EXPECT_EQ(OffsetInTile(64, 1), 9);
  EXPECT_EQ(OffsetInTile(96, 0), 12);
  EXPECT_EQ(OffsetInTile(33, 2), 22);  // line 1, second slot, column 2
  EXPECT_EQ(OffsetInTile(127, 3), 511);
}

TEST(ScalesToBlockedTest, BlockedOffsetOrdersTilesStripeMajor) {
  // Two column tiles per stripe (C = 5..8).
  EXPECT_EQ(BlockedOffset(0, 4, 2), 512);        // stripe 0, column tile 1
  EXPECT_EQ(BlockedOffset(128, 0, 2), 1024);     // stripe 1, column tile 0
  EXPECT_EQ(BlockedOffset(130, 5, 2), 1569);     // tile 3, line 2, slot 0, column 1
  EXPECT_EQ(BlockedOffset(191, 2, 2), 1526);     // tile 2, line 31, slot 1, column 2
}

// M = 96 rows, C = 5 scale columns, groups ending at {32, 32, 96}: group 0 (32 rows) fills
// stripe 0, group 1 is empty and takes no stripe, group 2 (64 rows) starts at stripe 1.
TEST(ScalesToBlockedTest, WorkedGroups) {
  constexpr int64_t kM = 96, kC = 5;
  std::vector<uint8_t> scales(kM * kC);
  for (int64_t i = 0; i < kM * kC; ++i) scales[i] = static_cast<uint8_t>(1 + i % 250);
  const std::vector<int32_t> offsets = {32, 32, 96};
  std::vector<uint8_t> out(3 * 2 * 512, 0xAA);  // one spare stripe, which must come back 0x00
  ASSERT_TRUE(ScalesToBlocked(scales.data(), kM, kC, offsets.data(), 3, out.data(),
                              static_cast<int64_t>(out.size()))
                  .ok());
  EXPECT_EQ(out[0], scales[0]);                 // row 0, col 0
  EXPECT_EQ(out[496], scales[31 * kC]);         // row 31, col 0: line 31
  EXPECT_EQ(out[512 + 16 * 3], scales[3 * kC + 4]);  // row 3, col 4: column tile 1, line 3
  EXPECT_EQ(out[1536], scales[32 * kC + 4]);    // group 2's first row, col 4: tile 3
  EXPECT_EQ(out[1526], scales[95 * kC + 2]);    // group 2's row 63 = padded row 191
  EXPECT_EQ(out[1024 + 16 * 5 + 4 * 1 + 3], scales[(32 + 37) * kC + 3]);  // padded row 165
  // Every input byte lands once (all are non-zero); everything else is the 0x00 pad.
  int64_t nonzero = 0;
  for (uint8_t b : out) nonzero += b != 0;
  EXPECT_EQ(nonzero, kM * kC);
  EXPECT_EQ(out[4], 0x00);           // row 32 of stripe 0: group 0 has only 32 rows
  EXPECT_EQ(out[512 + 1], 0x00);     // row 0, column 5: past C
  EXPECT_EQ(out[1024 + 8], 0x00);    // padded row 192 (stripe 1 slot 2): group 2 has 64 rows
  EXPECT_EQ(out[2048], 0x00);        // the spare stripe
}

TEST(ScalesToBlockedTest, RejectsBadOffsets) {
  std::vector<uint8_t> scales(64), out(2048);
  const std::vector<std::vector<int32_t>> bad = {{64, 32}, {16, 64}, {32, 32}, {-32, 64}, {96}};
  for (const auto& offsets : bad) {
    const Status s = ScalesToBlocked(scales.data(), 64, 1, offsets.data(),
                                     static_cast<int64_t>(offsets.size()), out.data(), 2048);
    EXPECT_FALSE(s.ok()) << offsets[0];
  }
  const std::vector<int32_t> good = {0, 64};
  EXPECT_TRUE(ScalesToBlocked(scales.data(), 64, 1, good.data(), 2, out.data(), 2048).ok());
  // Too small an output: 64 rows need a 512-byte stripe.
  EXPECT_FALSE(ScalesToBlocked(scales.data(), 64, 1, good.data(), 2, out.data(), 256).ok());
}

TEST(ScalesToBlockedTest, RegisteredReferenceFollowsTheSpec) {
  auto spec = LoadProblem(kSpec);
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  constexpr int64_t kM = 96, kK = 160, kG = 3;
  HostTensor scales{DType::kE8M0, {kM, kK / 32}, std::vector<uint8_t>(kM * kK / 32)};
  for (size_t i = 0; i < scales.bytes.size(); ++i) scales.bytes[i] = static_cast<uint8_t>(1 + i % 250);
  HostTensor offs{DType::kI32, {kG}, {32, 0, 0, 0, 32, 0, 0, 0, 96, 0, 0, 0}};
  const SymbolTable symbols =
      BindSymbols(*spec, Shape{{{"M", kM}, {"K", kK}, {"G", kG}}, ""}, {});
  auto out = RunCpuReference(*spec, symbols, {}, {{"scales", scales}, {"group_offsets", offs}});
  ASSERT_TRUE(out.ok()) << out.status().message();
  const HostTensor& blocked = out->at("scales_blocked");
  std::vector<uint8_t> want(blocked.bytes.size(), 0);
  const std::vector<int32_t> offsets = {32, 32, 96};
  ASSERT_TRUE(ScalesToBlocked(scales.bytes.data(), kM, kK / 32, offsets.data(), kG, want.data(),
                              static_cast<int64_t>(want.size()))
                  .ok());
  EXPECT_EQ(blocked.bytes, want);
  EXPECT_EQ(blocked.bytes[1536], scales.bytes[32 * 5 + 4]);
}

}  // namespace
}  // namespace ws::mxfp8
