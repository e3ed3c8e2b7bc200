#include "orchestrator/store.h"

#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <sqlite3.h>

namespace ws {
namespace {

// A fresh directory per test, removed afterwards.
class StoreTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ws_store_test.XXXXXX").string();
    ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
    path_ = dir_ + "/ws.db";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::unique_ptr<Store> OpenOrDie() {
    Result<std::unique_ptr<Store>> s = Store::Open(path_);
    EXPECT_TRUE(s.ok()) << s.status().message();
    return s.ok() ? std::move(s).value() : nullptr;
  }

  std::string dir_, path_;
};

KernelRecord Kernel(const std::string& problem, const std::string& hash) {
  KernelRecord k;
  k.problem = problem;
  k.hash = hash;
  k.source = "// source " + hash;
  k.origin = "file:" + hash + ".cu";
  return k;
}

EvaluationRecord Eval(int64_t kernel_id, const std::string& problem, const std::string& params,
                      const std::string& gpu, const std::string& verdict, double time_us) {
  EvaluationRecord e;
  e.kernel_id = kernel_id;
  e.problem = problem;
  e.params_json = params;
  e.gpu = gpu;
  e.verdict = verdict;
  e.time_us = time_us;
  e.sol_fraction = time_us > 0 ? 1.0 / time_us : 0;
  return e;
}

// True for "2025-01-31T12:34:56.789Z", the shape SQLite's strftime gives us.
bool IsIsoUtc(const std::string& s) {
  const std::string shape = "dddd-dd-ddTdd:dd:dd.dddZ";
  if (s.size() != shape.size())
    return false;
  for (size_t i = 0; i < s.size(); ++i) {
    if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(s[i])) : s[i] != shape[i]) {
      return false;
    }
  }
  return true;
}

TEST_F(StoreTest, OpenMigrateReopenKeepsDataAndVersion) {
  int64_t id = 0;
  {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    EXPECT_EQ(store->schema_version(), 5);
    Result<int64_t> r = store->PutKernel(Kernel("p", "h1"));
    ASSERT_TRUE(r.ok()) << r.status().message();
    id = *r;
  }
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), 5);
  Result<KernelRecord> k = store->GetKernel(id);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->hash, "h1");
}

TEST_F(StoreTest, NewerSchemaIsRefused) {
  ASSERT_NE(OpenOrDie(), nullptr);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA user_version = 99", nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  Result<std::unique_ptr<Store>> s = Store::Open(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("newer"), std::string::npos) << s.status().message();
}

TEST_F(StoreTest, KernelsAreDedupedByProblemAndHash) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  int64_t a = *store->PutKernel(Kernel("p", "h"));
  KernelRecord again = Kernel("p", "h");
  again.origin = "tuner";  // a second sighting does not overwrite the first
  EXPECT_EQ(*store->PutKernel(again), a);
  int64_t b = *store->PutKernel(Kernel("q", "h"));
  EXPECT_NE(a, b);

  KernelRecord child = Kernel("p", "h2");
  child.parent_id = a;
  int64_t c = *store->PutKernel(child);
  Result<KernelRecord> k = store->GetKernel(c);
  ASSERT_TRUE(k.ok()) << k.status().message();
  EXPECT_EQ(k->id, c);
  EXPECT_EQ(k->problem, "p");
  EXPECT_EQ(k->source, "// source h2");
  EXPECT_EQ(k->origin, "file:h2.cu");
  EXPECT_EQ(k->parent_id, a);
  EXPECT_TRUE(IsIsoUtc(k->created_at)) << k->created_at;

  KernelRecord with_library = Kernel("p", "h4");
  with_library.library_headers = {{"ws/mx.cuh", "#pragma once\n// \"quoted\"\n"}};
  Result<KernelRecord> back = store->GetKernel(*store->PutKernel(with_library));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->library_headers, with_library.library_headers);
  EXPECT_TRUE(k->library_headers.empty());

  EXPECT_EQ(store->GetKernel(a)->origin, "file:h.cu");
  EXPECT_FALSE(store->GetKernel(a)->parent_id.has_value());
  EXPECT_FALSE(store->GetKernel(12345).ok());
  EXPECT_FALSE(store->PutKernel(Kernel("p", "")).ok());

  KernelRecord orphan = Kernel("p", "h3");
  orphan.parent_id = 999;
  Result<int64_t> bad = store->PutKernel(orphan);
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("FOREIGN KEY"), std::string::npos)
      << bad.status().message();
}

TEST_F(StoreTest, EvaluationWithTimingsRoundTrips) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  int64_t kid = *store->PutKernel(Kernel("p", "h"));
  EvaluationRecord e = Eval(kid, "p", R"({"rounding":"rceil"})", "NVIDIA H200", "ok", 12.5);
  e.knobs_json = R"({"ROWS":4})";
  e.arch = "sm_90a";
  e.driver = "580.1";
  e.message = "fine";
  e.resources_json = R"({"regs":64})";
  e.sol_fraction = 0.75;
  ShapeTiming t1{R"({"M":1024})", "bench", 10, 9, 11, 0.5, 100, 8};
  ShapeTiming t2{R"({"M":4096})", "bench", 15.5, 15, 16, 0.25, 50, 12};
  e.timings = {t1, t2};
  Result<int64_t> id = store->AddEvaluation(e);
  ASSERT_TRUE(id.ok()) << id.status().message();
  int64_t id2 = *store->AddEvaluation(Eval(kid, "p", "{}", "", "compile_error", 0));
  ASSERT_TRUE(store->AddEvaluation(Eval(kid, "other", "{}", "", "ok", 1)).ok());

  Result<std::vector<EvaluationRecord>> all = store->Evaluations("p", 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].id, id2);  // newest first
  EXPECT_TRUE((*all)[0].timings.empty());
  const EvaluationRecord& got = (*all)[1];
  EXPECT_EQ(got.id, *id);
  EXPECT_EQ(got.kernel_id, kid);
  EXPECT_EQ(got.problem, "p");
  EXPECT_EQ(got.params_json, e.params_json);
  EXPECT_EQ(got.knobs_json, e.knobs_json);
  EXPECT_EQ(got.gpu, "NVIDIA H200");
  EXPECT_EQ(got.arch, "sm_90a");
  EXPECT_EQ(got.driver, "580.1");
  EXPECT_EQ(got.verdict, "ok");
  EXPECT_EQ(got.message, "fine");
  EXPECT_EQ(got.resources_json, e.resources_json);
  EXPECT_DOUBLE_EQ(got.time_us, 12.5);
  EXPECT_DOUBLE_EQ(got.sol_fraction, 0.75);
  EXPECT_TRUE(IsIsoUtc(got.created_at)) << got.created_at;
  ASSERT_EQ(got.timings.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    const ShapeTiming& want = e.timings[i];
    const ShapeTiming& have = got.timings[i];
    EXPECT_EQ(have.shape_json, want.shape_json);
    EXPECT_EQ(have.kind, want.kind);
    EXPECT_DOUBLE_EQ(have.median_us, want.median_us);
    EXPECT_DOUBLE_EQ(have.min_us, want.min_us);
    EXPECT_DOUBLE_EQ(have.p90_us, want.p90_us);
    EXPECT_DOUBLE_EQ(have.stdev_us, want.stdev_us);
    EXPECT_EQ(have.iterations, want.iterations);
    EXPECT_DOUBLE_EQ(have.sol_us, want.sol_us);
  }

  EXPECT_EQ(store->Evaluations("p", 1)->size(), 1u);
  EXPECT_EQ(store->Evaluations("", 0)->size(), 3u);
}

TEST_F(StoreTest, FailedEvaluationLeavesNothingBehind) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EvaluationRecord e = Eval(/*kernel_id=*/777, "p", "{}", "g", "ok", 1);
  e.timings = {ShapeTiming{"{}", "bench", 1, 1, 1, 0, 1, 1}};
  Result<int64_t> r = store->AddEvaluation(e);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("adding evaluation"), std::string::npos)
      << r.status().message();
  EXPECT_TRUE(store->Evaluations("", 0)->empty());
  // The rolled-back transaction does not wedge the connection.
  int64_t kid = *store->PutKernel(Kernel("p", "h"));
  e.kernel_id = kid;
  EXPECT_TRUE(store->AddEvaluation(e).ok());
}

TEST_F(StoreTest, LeaderboardPicksFastestOkPerGroup) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  int64_t k1 = *store->PutKernel(Kernel("p", "k1"));
  int64_t k2 = *store->PutKernel(Kernel("p", "k2"));
  int64_t k3 = *store->PutKernel(Kernel("q", "k3"));
  const std::string a = R"({"rounding":"a"})", b = R"({"rounding":"b"})";
  struct Row {
    int64_t kernel;
    std::string problem, params, gpu, verdict;
    double time_us;
  };
  std::vector<Row> rows = {
      {k1, "p", a, "H200", "ok", 20},
      {k2, "p", a, "H200", "ok", 10},           // fastest ok for (p, a, H200)
      {k1, "p", a, "H200", "wrong_answer", 1},  // not ok
      {k1, "p", a, "H200", "ok", 0},            // not timed
      {k1, "p", a, "H200", "ok", 10},           // k1's median with its 20: 15, behind k2
      {k1, "p", a, "B200", "ok", 5},
      {k1, "p", b, "H200", "ok", 30},
      {k2, "p", b, "H200", "crashed", 3},
      {k3, "q", a, "H200", "ok", 7},
      {k3, "q", b, "H200", "timeout", 7},  // no ok row: no entry
  };
  std::vector<int64_t> ids;
  for (const Row& r : rows) {
    Result<int64_t> id =
        store->AddEvaluation(Eval(r.kernel, r.problem, r.params, r.gpu, r.verdict, r.time_us));
    ASSERT_TRUE(id.ok()) << id.status().message();
    ids.push_back(*id);
  }

  Result<std::vector<LeaderboardEntry>> board = store->Leaderboard("");
  ASSERT_TRUE(board.ok()) << board.status().message();
  struct Want {
    std::string problem, params, gpu;
    int64_t evaluation_id, kernel_id;
    std::string hash;
    double time_us;
  };
  std::vector<Want> want = {
      {"p", a, "B200", ids[5], k1, "k1", 5},
      {"p", a, "H200", ids[1], k2, "k2", 10},
      {"p", b, "H200", ids[6], k1, "k1", 30},
      {"q", a, "H200", ids[8], k3, "k3", 7},
  };
  ASSERT_EQ(board->size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const LeaderboardEntry& got = (*board)[i];
    SCOPED_TRACE(i);
    EXPECT_EQ(got.problem, want[i].problem);
    EXPECT_EQ(got.params_json, want[i].params);
    EXPECT_EQ(got.gpu, want[i].gpu);
    EXPECT_EQ(got.evaluation_id, want[i].evaluation_id);
    EXPECT_EQ(got.kernel_id, want[i].kernel_id);
    EXPECT_EQ(got.kernel_hash, want[i].hash);
    EXPECT_EQ(got.origin, "file:" + want[i].hash + ".cu");
    EXPECT_DOUBLE_EQ(got.time_us, want[i].time_us);
    EXPECT_DOUBLE_EQ(got.sol_fraction, 1.0 / want[i].time_us);
    EXPECT_TRUE(IsIsoUtc(got.created_at)) << got.created_at;
  }

  Result<std::vector<LeaderboardEntry>> only_q = store->Leaderboard("q");
  ASSERT_TRUE(only_q.ok()) << only_q.status().message();
  ASSERT_EQ(only_q->size(), 1u);
  EXPECT_EQ((*only_q)[0].evaluation_id, ids[8]);
  EXPECT_TRUE(store->Leaderboard("none")->empty());
}

// A kernel timed several times ranks by its median, not its luckiest run; its knobs make it
// another entry; a flag on any of its evaluations flags the entry.
TEST_F(StoreTest, LeaderboardRanksAKernelByTheMedianOfItsEvaluations) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  const int64_t k1 = *store->PutKernel(Kernel("p", "k1"));
  const int64_t k2 = *store->PutKernel(Kernel("p", "k2"));
  const int64_t k3 = *store->PutKernel(Kernel("q", "k3"));
  auto add = [&](int64_t kernel, const std::string& problem, double us,
                 const std::string& knobs = "{}") {
    EvaluationRecord e = Eval(kernel, problem, "{}", "H200", "ok", us);
    e.knobs_json = knobs;
    Result<int64_t> id = store->AddEvaluation(e);
    EXPECT_TRUE(id.ok()) << id.status().message();
    return id.ok() ? *id : 0;
  };
  add(k1, "p", 10);  // one lucky run
  add(k1, "p", 30);
  add(k1, "p", 31);  // k1: median 30
  const int64_t k2_fast = add(k2, "p", 20);
  const int64_t k2_slow = add(k2, "p", 21);  // k2: median 20.5
  add(k3, "q", 5, R"({"A":1})");
  add(k3, "q", 50, R"({"A":2})");
  add(k3, "q", 6, R"({"A":2})");  // A=2: median 28
  ASSERT_TRUE(store->FlagEvaluation(k2_slow, "reads past its input").ok());

  Result<std::vector<LeaderboardEntry>> board = store->Leaderboard("");
  ASSERT_TRUE(board.ok()) << board.status().message();
  ASSERT_EQ(board->size(), 2u);
  const LeaderboardEntry& p = (*board)[0];
  EXPECT_EQ(p.kernel_id, k2);
  EXPECT_DOUBLE_EQ(p.time_us, 20.5);
  EXPECT_EQ(p.evaluations, 2);
  EXPECT_DOUBLE_EQ(p.fastest_us, 20);
  EXPECT_DOUBLE_EQ(p.slowest_us, 21);
  EXPECT_EQ(p.evaluation_id, k2_fast);  // the lower middle
  EXPECT_DOUBLE_EQ(p.sol_fraction, 1.0 / 20.5);  // its speed-of-light time over the median
  EXPECT_TRUE(p.flagged);
  EXPECT_EQ(p.flag_reason, "reads past its input");
  const LeaderboardEntry& q = (*board)[1];
  EXPECT_EQ(q.kernel_id, k3);
  EXPECT_EQ(q.knobs_json, R"({"A":1})");
  EXPECT_DOUBLE_EQ(q.time_us, 5);
  EXPECT_EQ(q.evaluations, 1);
  EXPECT_DOUBLE_EQ(q.fastest_us, 5);
  EXPECT_DOUBLE_EQ(q.slowest_us, 5);
  EXPECT_FALSE(q.flagged);
  EXPECT_EQ(q.flag_reason, "");

  // Two more runs of k1 near its lucky one move its median below k2's.
  add(k1, "p", 11);
  add(k1, "p", 12);  // k1: 10 11 12 30 31 -> 12
  board = store->Leaderboard("p");
  ASSERT_TRUE(board.ok()) << board.status().message();
  ASSERT_EQ(board->size(), 1u);
  EXPECT_EQ((*board)[0].kernel_id, k1);
  EXPECT_DOUBLE_EQ((*board)[0].time_us, 12);
  EXPECT_EQ((*board)[0].evaluations, 5);
}

TEST_F(StoreTest, CeilingsUpsert) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  Result<std::optional<CeilingsRecord>> none = store->GetCeilings("H200");
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_FALSE(none->has_value());
  EXPECT_FALSE(store->LatestCeilings()->has_value());

  CeilingsRecord c{"H200", 4e12, 9e14, 1.8e15, ""};
  ASSERT_TRUE(store->PutCeilings(c).ok());
  auto got = *store->GetCeilings("H200");
  ASSERT_TRUE(got.has_value());
  EXPECT_DOUBLE_EQ(got->copy_bytes_per_s, 4e12);
  EXPECT_DOUBLE_EQ(got->bf16_flops_per_s, 9e14);
  EXPECT_DOUBLE_EQ(got->fp8_flops_per_s, 1.8e15);
  EXPECT_TRUE(IsIsoUtc(got->measured_at)) << got->measured_at;

  c = {"H200", 4.5e12, 9.5e14, 1.9e15, "2030-01-01T00:00:00.000Z"};
  Status s = store->PutCeilings(c);
  ASSERT_TRUE(s.ok()) << s.message();
  got = *store->GetCeilings("H200");
  ASSERT_TRUE(got.has_value());
  EXPECT_DOUBLE_EQ(got->copy_bytes_per_s, 4.5e12);
  EXPECT_DOUBLE_EQ(got->fp8_flops_per_s, 1.9e15);
  EXPECT_EQ(got->measured_at, "2030-01-01T00:00:00.000Z");
  EXPECT_FALSE(store->GetCeilings("B200")->has_value());

  // The latest measurement of any GPU.
  ASSERT_TRUE(store->PutCeilings({"B200", 7e12, 2e15, 4e15, "2029-06-01T00:00:00.000Z"}).ok());
  auto latest = store->LatestCeilings();
  ASSERT_TRUE(latest.ok()) << latest.status().message();
  ASSERT_TRUE(latest->has_value());
  EXPECT_EQ((*latest)->gpu, "H200");  // 2030 is later than 2029
  ASSERT_TRUE(store->PutCeilings({"B200", 7e12, 2e15, 4e15, "2031-06-01T00:00:00.000Z"}).ok());
  EXPECT_EQ((*store->LatestCeilings())->gpu, "B200");
}

TEST_F(StoreTest, CommitSurvivesKillNine) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // The child never returns into GoogleTest: it exits 1 on failure, dies by SIGKILL otherwise.
    Result<std::unique_ptr<Store>> s = Store::Open(path_);
    if (!s.ok())
      ::_exit(1);
    Result<int64_t> kid = (*s)->PutKernel(Kernel("p", "survivor"));
    if (!kid.ok())
      ::_exit(1);
    EvaluationRecord e = Eval(*kid, "p", "{}", "H200", "ok", 3);
    e.timings = {ShapeTiming{"{}", "bench", 3, 3, 3, 0, 10, 1}};
    if (!(*s)->AddEvaluation(e).ok())
      ::_exit(1);
    ::kill(::getpid(), SIGKILL);
    ::_exit(2);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFSIGNALED(status)) << "child exited with " << WEXITSTATUS(status);
  EXPECT_EQ(WTERMSIG(status), SIGKILL);

  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  auto evals = store->Evaluations("p", 0);
  ASSERT_TRUE(evals.ok()) << evals.status().message();
  ASSERT_EQ(evals->size(), 1u);
  EXPECT_EQ((*evals)[0].timings.size(), 1u);
  EXPECT_EQ(store->GetKernel((*evals)[0].kernel_id)->hash, "survivor");
}

TEST_F(StoreTest, GarbageFileIsAnError) {
  {
    std::ofstream out(path_, std::ios::binary);
    for (int i = 0; i < 8192; ++i) out.put(static_cast<char>((i * 7919 + 13) & 0xff));
  }
  Result<std::unique_ptr<Store>> s = Store::Open(path_);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find(path_), std::string::npos) << s.status().message();
  EXPECT_NE(s.status().message().find("not a database"), std::string::npos) << s.status().message();
}

TEST_F(StoreTest, UnopenablePathIsAnError) {
  Result<std::unique_ptr<Store>> s = Store::Open(dir_ + "/missing/dir/ws.db");
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("opening"), std::string::npos) << s.status().message();
}

// A version-1 database (as the first release wrote it) migrates to the current schema with its
// rows kept and the new columns defaulted.
TEST_F(StoreTest, VersionOneDatabaseMigrates) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const char* v1 =
      "CREATE TABLE kernels (id INTEGER PRIMARY KEY, problem TEXT NOT NULL, hash TEXT NOT NULL,"
      " source TEXT NOT NULL, origin TEXT NOT NULL DEFAULT '', parent_id INTEGER,"
      " created_at TEXT NOT NULL DEFAULT '', UNIQUE (problem, hash));"
      "CREATE TABLE evaluations (id INTEGER PRIMARY KEY, kernel_id INTEGER NOT NULL,"
      " problem TEXT NOT NULL, params_json TEXT NOT NULL DEFAULT '{}',"
      " knobs_json TEXT NOT NULL DEFAULT '{}', gpu TEXT NOT NULL DEFAULT '',"
      " arch TEXT NOT NULL DEFAULT '', driver TEXT NOT NULL DEFAULT '', verdict TEXT NOT NULL,"
      " message TEXT NOT NULL DEFAULT '', resources_json TEXT NOT NULL DEFAULT '{}',"
      " time_us REAL NOT NULL DEFAULT 0, sol_fraction REAL NOT NULL DEFAULT 0,"
      " created_at TEXT NOT NULL DEFAULT '');"
      "CREATE TABLE timings (evaluation_id INTEGER NOT NULL, shape_json TEXT NOT NULL,"
      " kind TEXT NOT NULL, median_us REAL, min_us REAL, p90_us REAL, stdev_us REAL,"
      " iterations INTEGER, sol_us REAL);"
      "CREATE TABLE ceilings (gpu TEXT PRIMARY KEY, copy_bytes_per_s REAL, bf16_flops_per_s REAL,"
      " fp8_flops_per_s REAL, measured_at TEXT);"
      "INSERT INTO kernels (problem, hash, source) VALUES ('p', 'h', 'src');"
      "INSERT INTO evaluations (kernel_id, problem, verdict, time_us) VALUES (1, 'p', 'ok', 2.5);"
      "PRAGMA user_version = 1;";
  ASSERT_EQ(sqlite3_exec(db, v1, nullptr, nullptr, nullptr), SQLITE_OK) << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), 5);
  auto evals = store->Evaluations("p", 0);
  ASSERT_TRUE(evals.ok()) << evals.status().message();
  ASSERT_EQ(evals->size(), 1u);
  EXPECT_FALSE((*evals)[0].campaign_id.has_value());
  EXPECT_EQ((*evals)[0].purpose, "eval");
  EXPECT_FALSE((*evals)[0].flagged);
  auto lb = store->Leaderboard("p");
  ASSERT_TRUE(lb.ok()) << lb.status().message();
  ASSERT_EQ(lb->size(), 1u);
  EXPECT_DOUBLE_EQ((*lb)[0].time_us, 2.5);
}

TEST_F(StoreTest, SandboxAndDeepRoundTripInEveryQuery) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  int64_t kid = *store->PutKernel(Kernel("p", "h"));
  EvaluationRecord e = Eval(kid, "p", "{}", "NVIDIA H200", "ok", 3.5);
  e.sandbox_json = R"({"cgroup":"degraded: no writable cgroup","namespaces":"on: /usr/bin/bwrap",)"
                   R"("stage":"runner"})";
  e.deep_json = R"({"initcheck":"clean","memcheck":"clean","racecheck":"clean"})";
  e.campaign_id = *store->CreateCampaign("{}", 1);
  ASSERT_TRUE(store->AddEvaluation(e).ok());
  // Left empty: stored as '{}'.
  EvaluationRecord plain = Eval(kid, "p", "{}", "", "compile_error", 0);
  plain.sandbox_json = "";
  plain.deep_json = "";
  ASSERT_TRUE(store->AddEvaluation(plain).ok());

  auto all = store->Evaluations("p", 0);
  ASSERT_TRUE(all.ok()) << all.status().message();
  ASSERT_EQ(all->size(), 2u);
  EXPECT_EQ((*all)[0].sandbox_json, "{}");
  EXPECT_EQ((*all)[0].deep_json, "{}");
  EXPECT_EQ((*all)[1].sandbox_json, e.sandbox_json);
  EXPECT_EQ((*all)[1].deep_json, e.deep_json);
  auto campaign = store->CampaignEvaluations(*e.campaign_id, "p");
  ASSERT_TRUE(campaign.ok()) << campaign.status().message();
  ASSERT_EQ(campaign->size(), 1u);
  EXPECT_EQ((*campaign)[0].sandbox_json, e.sandbox_json);
  EXPECT_EQ((*campaign)[0].deep_json, e.deep_json);
  auto lb = store->Leaderboard("p");
  ASSERT_TRUE(lb.ok()) << lb.status().message();
  ASSERT_EQ(lb->size(), 1u);
  EXPECT_EQ((*lb)[0].sandbox_json, e.sandbox_json);
  EXPECT_EQ((*lb)[0].deep_json, e.deep_json);
}

// A version-2 database (before the sandbox and deep columns) migrates with its rows kept: they
// read back as '{}', and are still ranked.
TEST_F(StoreTest, VersionTwoDatabaseMigratesWithEmptySandbox) {
  int64_t kid = 0;
  {
    auto store = OpenOrDie();
    ASSERT_NE(store, nullptr);
    kid = *store->PutKernel(Kernel("p", "h"));
  }
  // Turn the fresh database back into version 2: the step-5, step-4 and step-3 additions
  // removed, a row written the way version 2 wrote it.
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path_.c_str(), &db), SQLITE_OK);
  const std::string v2 = fmt::format(
      "ALTER TABLE kernels DROP COLUMN library_json;"
      "DROP TABLE jobs;"
      "DROP INDEX evaluations_by_job;"
      "ALTER TABLE evaluations DROP COLUMN job_id;"
      "ALTER TABLE evaluations DROP COLUMN node;"
      "ALTER TABLE evaluations DROP COLUMN gpu_index;"
      "ALTER TABLE evaluations DROP COLUMN sandbox_json;"
      "ALTER TABLE evaluations DROP COLUMN deep_json;"
      "INSERT INTO evaluations (kernel_id, problem, verdict, time_us, agent, purpose) "
      "VALUES ({}, 'p', 'ok', 4.25, 'tuner', 'tune');"
      "PRAGMA user_version = 2;",
      kid);
  ASSERT_EQ(sqlite3_exec(db, v2.c_str(), nullptr, nullptr, nullptr), SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);

  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  EXPECT_EQ(store->schema_version(), 5);
  auto evals = store->Evaluations("p", 0);
  ASSERT_TRUE(evals.ok()) << evals.status().message();
  ASSERT_EQ(evals->size(), 1u);
  EXPECT_EQ((*evals)[0].agent, "tuner");
  EXPECT_EQ((*evals)[0].sandbox_json, "{}");
  EXPECT_EQ((*evals)[0].deep_json, "{}");
  EXPECT_TRUE(store->GetKernel(kid)->library_headers.empty());
  auto lb = store->Leaderboard("p");
  ASSERT_TRUE(lb.ok()) << lb.status().message();
  ASSERT_EQ(lb->size(), 1u);
  EXPECT_DOUBLE_EQ((*lb)[0].time_us, 4.25);
  EXPECT_EQ((*lb)[0].sandbox_json, "{}");
  // New rows after the migration keep what they are given.
  EvaluationRecord e = Eval(kid, "p", "{}", "", "ok", 1);
  e.sandbox_json = R"({"stage":"runner"})";
  ASSERT_TRUE(store->AddEvaluation(e).ok());
  EXPECT_EQ((*store->Evaluations("p", 1))[0].sandbox_json, e.sandbox_json);
}

TEST_F(StoreTest, CampaignLifecycleAndSpend) {
  auto store = OpenOrDie();
  ASSERT_NE(store, nullptr);
  Result<int64_t> cid = store->CreateCampaign(R"({"problems":"*"})", 1234);
  ASSERT_TRUE(cid.ok()) << cid.status().message();
  ASSERT_TRUE(store->PutCampaignProblem({*cid, "p", "{}", std::nullopt, "active"}).ok());
  ASSERT_TRUE(store->SetCampaignProblemStatus(*cid, "p", "stalled").ok());
  auto problems = store->CampaignProblems(*cid);
  ASSERT_TRUE(problems.ok());
  ASSERT_EQ(problems->size(), 1u);
  EXPECT_EQ((*problems)[0].status, "stalled");

  AttemptRecord a;
  a.campaign_id = *cid;
  a.problem = "p";
  a.agent = "openai:m";
  int64_t att = *store->StartAttempt(a);
  ASSERT_TRUE(store->AddAgentTurn({*cid, att, "openai:m", 100, 20, 0, 0.5, "tool_calls"}).ok());
  ASSERT_TRUE(store->AddAgentTurn({*cid, att, "openai:m", 200, 30, 50, 0.25, "stop"}).ok());
  int64_t kid = *store->PutKernel(Kernel("p", "k"));
  EvaluationRecord e = Eval(kid, "p", "{}", "H200", "ok", 4);
  e.campaign_id = *cid;
  e.attempt_id = att;
  e.agent = "openai:m";
  e.purpose = "submit";
  e.gpu_seconds = 1.5;
  int64_t eid = *store->AddEvaluation(e);
  EvaluationRecord other = Eval(kid, "p", "{}", "H200", "wrong_answer", 0);
  other.campaign_id = *cid;
  other.agent = "tuner";
  other.gpu_seconds = 0.5;
  ASSERT_TRUE(store->AddEvaluation(other).ok());
  ASSERT_TRUE(store->AddEvaluation(Eval(kid, "p", "{}", "H200", "ok", 9)).ok());  // no campaign
  ASSERT_TRUE(store->FinishAttempt(att, "submitted", "", eid).ok());
  ASSERT_TRUE(store->AddCampaignWallSeconds(*cid, 12.5).ok());

  auto spend = store->Spend(*cid);
  ASSERT_TRUE(spend.ok()) << spend.status().message();
  EXPECT_EQ(spend->evaluations, 2);
  EXPECT_EQ(spend->tokens, 350);
  EXPECT_DOUBLE_EQ(spend->dollars, 0.75);
  EXPECT_DOUBLE_EQ(spend->gpu_seconds, 2.0);
  EXPECT_DOUBLE_EQ(spend->wall_seconds, 12.5);

  auto stats = store->AgentStatistics(*cid);
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  ASSERT_EQ(stats->size(), 2u);
  const AgentStats& llm = (*stats)[0];
  EXPECT_EQ(llm.agent, "openai:m");
  EXPECT_EQ(llm.attempts, 1);
  EXPECT_EQ(llm.verdicts.at("ok"), 1);
  EXPECT_EQ(llm.input_tokens, 300);
  EXPECT_EQ(llm.output_tokens, 50);
  EXPECT_DOUBLE_EQ(llm.cost_usd, 0.75);
  EXPECT_EQ((*stats)[1].verdicts.at("wrong_answer"), 1);

  auto evals = store->CampaignEvaluations(*cid, "p");
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 2u);
  EXPECT_EQ((*evals)[0].purpose, "submit");
  EXPECT_EQ((*evals)[0].attempt_id, att);

  ASSERT_TRUE(store->FlagEvaluation(eid, "changes the algorithm's bounds").ok());
  auto lb = store->Leaderboard("p");
  ASSERT_TRUE(lb.ok());
  ASSERT_EQ(lb->size(), 1u);
  EXPECT_EQ((*lb)[0].evaluation_id, eid);
  EXPECT_TRUE((*lb)[0].flagged);
  EXPECT_EQ((*lb)[0].agent, "openai:m");

  // A killed orchestrator leaves a running attempt; resume marks it interrupted.
  int64_t stale = *store->StartAttempt(a);
  EXPECT_EQ(*store->InterruptRunningAttempts(*cid), 1);
  auto attempts = store->Attempts(*cid, "");
  ASSERT_TRUE(attempts.ok());
  ASSERT_EQ(attempts->size(), 2u);
  EXPECT_EQ((*attempts)[1].id, stale);
  EXPECT_EQ((*attempts)[1].status, "interrupted");

  ASSERT_TRUE(store->RequestCampaignStop(*cid).ok());
  EXPECT_TRUE(store->GetCampaign(*cid)->stop_requested);
  ASSERT_TRUE(store->ClaimCampaign(*cid, 99).ok());
  auto c = store->GetCampaign(*cid);
  EXPECT_FALSE(c->stop_requested);
  EXPECT_EQ(c->pid, 99);
  EXPECT_EQ(c->status, "running");
  ASSERT_TRUE(store->SetCampaignStatus(*cid, "done", "budget spent").ok());
  EXPECT_EQ((*store->LatestCampaign())->status, "done");
}

}  // namespace
}  // namespace ws
