// The transposing quantizers' tile order (kernels/include/ws/tile_order.cuh) compiled for the host:
// a launch index that maps to no tile, or two that map to one, leaves part of the output poisoned
// or written twice on the GPU, and the 32-bit form (STEP_ADDR) must walk the same order as the
// 64-bit one.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#define __device__
#define __forceinline__ inline
using std::min;
#include "ws/tile_order.cuh"

namespace {

// Every launch index of an m x k tile grid, in order: the (tm, tk) each takes.
template <int kGroupK, bool kKFastest, bool kNarrow>
std::vector<std::pair<long long, long long>> Order(long long m, long long k) {
  std::vector<std::pair<long long, long long>> tiles;
  for (long long bid = 0; bid < m * k; ++bid) {
    long long tm = -1, tk = -1;
    ws::mx::tile_of<kGroupK, kKFastest, kNarrow>(bid, m, k, tm, tk);
    tiles.emplace_back(tm, tk);
  }
  return tiles;
}

// The grids the kernels launch, small enough to walk whole: ragged last groups (k % kGroupK),
// a single row or column of tiles, and K 2880's 23 tile columns.
const std::pair<long long, long long> kGrids[] = {{1, 1}, {1, 23}, {23, 1}, {7, 5}, {16, 23},
                                                  {128, 23}, {64, 56}, {3, 17}, {512, 16}};

template <int kGroupK, bool kKFastest>
void CheckOrder() {
  SCOPED_TRACE(testing::Message() << "kGroupK " << kGroupK << " kKFastest " << kKFastest);
  for (auto [m, k] : kGrids) {
    SCOPED_TRACE(testing::Message() << m << " x " << k << " tiles");
    const auto wide = Order<kGroupK, kKFastest, false>(m, k);
    const std::set<std::pair<long long, long long>> seen(wide.begin(), wide.end());
    EXPECT_EQ(seen.size(), wide.size()) << "a tile taken twice";
    for (auto [tm, tk] : wide) {
      ASSERT_TRUE(tm >= 0 && tm < m && tk >= 0 && tk < k) << "tile (" << tm << ", " << tk << ")";
    }
    EXPECT_EQ((Order<kGroupK, kKFastest, true>(m, k)), wide) << "the 32-bit form's order differs";
    if constexpr (kGroupK > 0) {
      // Launch neighbours inside a group are k neighbours of one tile row.
      for (size_t b = 0; b + 1 < wide.size(); ++b) {
        const auto [tm, tk] = wide[b];
        const auto [tm2, tk2] = wide[b + 1];
        if (tk2 / kGroupK == tk / kGroupK && tm2 == tm) {
          EXPECT_EQ(tk2, tk + 1) << "at " << b;
        }
      }
      // Group g (tile columns g kGroupK ..) takes launch indices [g kGroupK m, + width m).
      for (size_t b = 0; b < wide.size(); ++b) {
        const long long group = wide[b].second / kGroupK;
        const long long first = group * kGroupK * m;
        const long long width = std::min<long long>(kGroupK, k - group * kGroupK);
        const long long at = static_cast<long long>(b);
        EXPECT_TRUE(at >= first && at < first + width * m) << "tile column group " << group;
      }
    }
  }
}

TEST(TileOrder, EveryTileOnceInBothWidths) {
  CheckOrder<0, false>();
  CheckOrder<0, true>();
  CheckOrder<2, false>();
  CheckOrder<5, false>();
  CheckOrder<8, false>();
  CheckOrder<8, true>();
  CheckOrder<16, false>();
}

TEST(TileOrder, MFastestAndKFastestWithoutGroups) {
  EXPECT_EQ((Order<0, false, true>(3, 2)),
            (std::vector<std::pair<long long, long long>>{{0, 0}, {1, 0}, {2, 0}, {0, 1}, {1, 1},
                                                          {2, 1}}));
  EXPECT_EQ((Order<0, true, true>(2, 3)),
            (std::vector<std::pair<long long, long long>>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1},
                                                          {1, 2}}));
}

TEST(TileOrder, GroupsOfKTilesThenRowsWithANarrowLastGroup) {
  // 2 tile rows, 5 tile columns, groups of 2: columns {0,1} for both rows, {2,3}, then {4}.
  EXPECT_EQ((Order<2, false, true>(2, 5)),
            (std::vector<std::pair<long long, long long>>{
                {0, 0}, {0, 1}, {1, 0}, {1, 1}, {0, 2}, {0, 3}, {1, 2}, {1, 3}, {0, 4}, {1, 4}}));
}

}  // namespace
