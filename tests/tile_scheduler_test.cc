// The device library's tile scheduler (kernels/include/ws/tile_scheduler.cuh) compiled for the
// host: every role of a persistent GEMM CTA walks it, so a tile it invents or drops hangs or
// corrupts the kernel on the GPU, where such bugs cost a timeout to find.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <tuple>
#include <vector>

#define __device__
#define __forceinline__ inline
using std::min;
struct {
  int x = 0;
} threadIdx;  // stage_offs (not under test) reads it
#include "ws/tile_scheduler.cuh"

namespace {

constexpr int kBM = 128, kBN = 128, kGroupM = 8;
using FwdCursor = ws::GroupCursor<ws::kFwd, kBM, kBN, kGroupM>;
using WgradCursor = ws::GroupCursor<ws::kWgrad, kBM, kBN, kGroupM>;

// Cumulative group ends from group lengths (empty groups included).
std::vector<int> Ends(const std::vector<int>& lengths) {
  std::vector<int> offs;
  int end = 0;
  for (int n : lengths) offs.push_back(end += n);
  return offs;
}

// The tiles one CTA of a grid of `grid` walks, as (group, tm, tn).
template <typename Cursor, int kForm>
std::vector<std::tuple<int, int, int>> Walk(int cta, int grid, const std::vector<int>& offs,
                                            int N, int K) {
  Cursor cur;
  ws::GroupTile<kForm> tl;
  std::vector<std::tuple<int, int, int>> tiles;
  for (int t = cta; cur.seek(t, offs.data(), static_cast<int>(offs.size()), N, K, tl); t += grid)
    tiles.emplace_back(tl.g, tl.tm, tl.tn);
  return tiles;
}

TEST(TileScheduler, FwdCoversEveryTileOnceAcrossTheGrid) {
  const std::vector<int> offs = Ends({300, 0, 17, 1024, 129});
  const int N = 640, K = 256, grid = 7;
  std::set<std::tuple<int, int, int>> seen;
  size_t walked = 0;
  for (int cta = 0; cta < grid; ++cta) {
    for (const auto& tile : Walk<FwdCursor, ws::kFwd>(cta, grid, offs, N, K)) {
      seen.insert(tile);
      ++walked;
    }
  }
  size_t expected = 0;
  int start = 0;
  for (size_t g = 0; g < offs.size(); ++g) {
    const int rows = offs[g] - start;
    start = offs[g];
    const int tiles_m = (rows + kBM - 1) / kBM, tiles_n = (N + kBN - 1) / kBN;
    expected += static_cast<size_t>(tiles_m) * tiles_n;
    for (int tm = 0; tm < tiles_m; ++tm)
      for (int tn = 0; tn < tiles_n; ++tn)
        EXPECT_TRUE(seen.count({static_cast<int>(g), tm, tn})) << g << " " << tm << " " << tn;
  }
  EXPECT_EQ(walked, expected) << "a tile walked twice";
  EXPECT_EQ(seen.size(), expected);
}

TEST(TileScheduler, WgradGivesEmptyGroupsTheirTiles) {
  const std::vector<int> offs = Ends({64, 0, 200});
  const int N = 256, K = 384;
  const auto tiles = Walk<WgradCursor, ws::kWgrad>(0, 1, offs, N, K);
  EXPECT_EQ(tiles.size(), 3u * 2 * 3);  // E x ceil(N/BM) x ceil(K/BN), the empty group's too
}

// A walk that looks ahead (the ping-pong consumers of bf16_grouped_gemm ask for the other
// warpgroup's next tile, then their own) seeks again after a false: it must stay false. It
// used to map t back into a group past the last one and hang the CTA on a stage never filled.
TEST(TileScheduler, StaysPastTheEndOnceThere) {
  const std::vector<int> offs = Ends({16});  // one tile in all
  const int E = 1, N = 16, K = 16;
  FwdCursor cur;
  ws::GroupTile<ws::kFwd> tl;
  EXPECT_TRUE(cur.seek(0, offs.data(), E, N, K, tl));
  EXPECT_FALSE(cur.seek(1, offs.data(), E, N, K, tl));
  EXPECT_FALSE(cur.seek(1, offs.data(), E, N, K, tl)) << "the same t again";
  EXPECT_FALSE(cur.seek(2, offs.data(), E, N, K, tl)) << "a later t";

  const std::vector<int> two = Ends({300, 200});  // 3 + 2 tiles at N = 128
  FwdCursor walk;
  for (int t = 0; t < 5; ++t) EXPECT_TRUE(walk.seek(t, two.data(), 2, 128, K, tl)) << t;
  EXPECT_FALSE(walk.seek(5, two.data(), 2, 128, K, tl));
  for (int t = 5; t < 12; ++t) EXPECT_FALSE(walk.seek(t, two.data(), 2, 128, K, tl)) << t;
}

}  // namespace
