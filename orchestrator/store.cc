// The SQLite store, on the raw C API. Statements go through a small RAII wrapper; every sqlite
// error becomes a Status naming the operation and sqlite3_errmsg.
#include "orchestrator/store.h"

#include <algorithm>
#include <iterator>
#include <map>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>
#include <sqlite3.h>

namespace ws {
namespace {

// VerdictName(Verdict::kOk); spelled out so the store does not depend on the evaluator.
constexpr std::string_view kVerdictOk = "ok";

// ISO-8601 UTC with milliseconds, from SQLite's clock.
#define WS_STORE_NOW "strftime('%Y-%m-%dT%H:%M:%fZ', 'now')"

// Schema migrations, oldest first; step i takes the schema from version i to i + 1. Append
// only: a released step never changes.
constexpr const char* kMigrations[] = {
    // 1: kernels, evaluations with their per-shape timings, and measured GPU ceilings.
    R"sql(
      CREATE TABLE kernels (
        id         INTEGER PRIMARY KEY,
        problem    TEXT NOT NULL,
        hash       TEXT NOT NULL,
        source     TEXT NOT NULL,
        origin     TEXT NOT NULL DEFAULT '',
        parent_id  INTEGER REFERENCES kernels(id),
        created_at TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql(),
        UNIQUE (problem, hash)
      );
      CREATE INDEX kernels_by_parent ON kernels(parent_id);

      CREATE TABLE evaluations (
        id             INTEGER PRIMARY KEY,
        kernel_id      INTEGER NOT NULL REFERENCES kernels(id),
        problem        TEXT NOT NULL,
        params_json    TEXT NOT NULL DEFAULT '{}',
        knobs_json     TEXT NOT NULL DEFAULT '{}',
        gpu            TEXT NOT NULL DEFAULT '',
        arch           TEXT NOT NULL DEFAULT '',
        driver         TEXT NOT NULL DEFAULT '',
        verdict        TEXT NOT NULL,
        message        TEXT NOT NULL DEFAULT '',
        resources_json TEXT NOT NULL DEFAULT '{}',
        time_us        REAL NOT NULL DEFAULT 0,
        sol_fraction   REAL NOT NULL DEFAULT 0,
        created_at     TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql()
      );
      CREATE INDEX evaluations_by_problem ON evaluations(problem, id);
      CREATE INDEX evaluations_by_kernel ON evaluations(kernel_id);
      -- The leaderboard scans only timed ok rows, already in rank order per group.
      CREATE INDEX evaluations_leaderboard
        ON evaluations(problem, params_json, gpu, time_us, created_at, id)
        WHERE verdict = 'ok' AND time_us > 0;

      CREATE TABLE timings (
        evaluation_id INTEGER NOT NULL REFERENCES evaluations(id) ON DELETE CASCADE,
        shape_json    TEXT NOT NULL,
        kind          TEXT NOT NULL,
        median_us     REAL NOT NULL DEFAULT 0,
        min_us        REAL NOT NULL DEFAULT 0,
        p90_us        REAL NOT NULL DEFAULT 0,
        stdev_us      REAL NOT NULL DEFAULT 0,
        iterations    INTEGER NOT NULL DEFAULT 0,
        sol_us        REAL NOT NULL DEFAULT 0
      );
      CREATE INDEX timings_by_evaluation ON timings(evaluation_id);

      CREATE TABLE ceilings (
        gpu              TEXT PRIMARY KEY,
        copy_bytes_per_s REAL NOT NULL DEFAULT 0,
        bf16_flops_per_s REAL NOT NULL DEFAULT 0,
        fp8_flops_per_s  REAL NOT NULL DEFAULT 0,
        measured_at      TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql()
      );
    )sql",
    // 2: campaigns, their problems, agent attempts and turns (tokens, cost); evaluations and
    // kernels linked to the campaign and agent that produced them; reviewer flags.
    R"sql(
      CREATE TABLE campaigns (
        id             INTEGER PRIMARY KEY,
        config_json    TEXT NOT NULL,
        status         TEXT NOT NULL DEFAULT 'running',
        stop_requested INTEGER NOT NULL DEFAULT 0,
        pid            INTEGER NOT NULL DEFAULT 0,
        wall_seconds   REAL NOT NULL DEFAULT 0,
        message        TEXT NOT NULL DEFAULT '',
        created_at     TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql(),
        updated_at     TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql()
      );

      CREATE TABLE campaign_problems (
        campaign_id    INTEGER NOT NULL REFERENCES campaigns(id),
        problem        TEXT NOT NULL,
        params_json    TEXT NOT NULL DEFAULT '{}',
        seed_kernel_id INTEGER REFERENCES kernels(id),
        status         TEXT NOT NULL DEFAULT 'active',
        PRIMARY KEY (campaign_id, problem)
      );

      CREATE TABLE attempts (
        id                 INTEGER PRIMARY KEY,
        campaign_id        INTEGER NOT NULL REFERENCES campaigns(id),
        problem            TEXT NOT NULL,
        agent              TEXT NOT NULL,
        parent_kernel_id   INTEGER REFERENCES kernels(id),
        status             TEXT NOT NULL DEFAULT 'running',
        message            TEXT NOT NULL DEFAULT '',
        best_evaluation_id INTEGER,
        started_at         TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql(),
        finished_at        TEXT NOT NULL DEFAULT ''
      );
      CREATE INDEX attempts_by_campaign ON attempts(campaign_id, problem, id);

      CREATE TABLE agent_turns (
        id                  INTEGER PRIMARY KEY,
        campaign_id         INTEGER NOT NULL REFERENCES campaigns(id),
        attempt_id          INTEGER REFERENCES attempts(id),
        agent               TEXT NOT NULL,
        input_tokens        INTEGER NOT NULL DEFAULT 0,
        output_tokens       INTEGER NOT NULL DEFAULT 0,
        cached_input_tokens INTEGER NOT NULL DEFAULT 0,
        cost_usd            REAL NOT NULL DEFAULT 0,
        stop_reason         TEXT NOT NULL DEFAULT '',
        created_at          TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql()
      );
      CREATE INDEX agent_turns_by_campaign ON agent_turns(campaign_id);

      ALTER TABLE kernels ADD COLUMN campaign_id INTEGER REFERENCES campaigns(id);
      ALTER TABLE kernels ADD COLUMN agent TEXT NOT NULL DEFAULT '';
      ALTER TABLE evaluations ADD COLUMN campaign_id INTEGER REFERENCES campaigns(id);
      ALTER TABLE evaluations ADD COLUMN attempt_id INTEGER REFERENCES attempts(id);
      ALTER TABLE evaluations ADD COLUMN agent TEXT NOT NULL DEFAULT '';
      ALTER TABLE evaluations ADD COLUMN purpose TEXT NOT NULL DEFAULT 'eval';
      ALTER TABLE evaluations ADD COLUMN gpu_seconds REAL NOT NULL DEFAULT 0;
      ALTER TABLE evaluations ADD COLUMN flagged INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE evaluations ADD COLUMN flag_reason TEXT NOT NULL DEFAULT '';
      CREATE INDEX evaluations_by_campaign ON evaluations(campaign_id, problem, id);
    )sql",
    // 3: what confined each evaluation (the sandbox layers, EvalResult::sandbox_layers) and what
    // deep mode found (EvalResult::deep), each a JSON object; '{}' for older rows.
    R"sql(
      ALTER TABLE evaluations ADD COLUMN sandbox_json TEXT NOT NULL DEFAULT '{}';
      ALTER TABLE evaluations ADD COLUMN deep_json TEXT NOT NULL DEFAULT '{}';
    )sql",
    // 4: executors. An evaluation made by a job carries the job's id (unique: a retried or
    // cancelled job's late result is never stored twice), the node and the GPU index that ran
    // it. `jobs` holds every job a campaign submitted, for `campaign status`.
    R"sql(
      ALTER TABLE evaluations ADD COLUMN job_id TEXT;
      ALTER TABLE evaluations ADD COLUMN node TEXT NOT NULL DEFAULT '';
      ALTER TABLE evaluations ADD COLUMN gpu_index INTEGER;
      CREATE UNIQUE INDEX evaluations_by_job ON evaluations(job_id) WHERE job_id IS NOT NULL;

      CREATE TABLE jobs (
        id            TEXT PRIMARY KEY,
        campaign_id   INTEGER REFERENCES campaigns(id),
        kind          TEXT NOT NULL,
        executor      TEXT NOT NULL,
        state         TEXT NOT NULL,
        tries         INTEGER NOT NULL DEFAULT 1,
        external_id   TEXT NOT NULL DEFAULT '',
        node          TEXT NOT NULL DEFAULT '',
        gpu_index     INTEGER,
        message       TEXT NOT NULL DEFAULT '',
        evaluation_id INTEGER REFERENCES evaluations(id),
        created_at    TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql(),
        updated_at    TEXT NOT NULL DEFAULT ()sql" WS_STORE_NOW R"sql()
      );
      CREATE INDEX jobs_by_campaign ON jobs(campaign_id, node);
    )sql",
    // 5: the device-library headers a kernel was compiled with (KernelRecord::library_headers),
    // a JSON object of path -> content; '{}' for kernels that include none.
    R"sql(
      ALTER TABLE kernels ADD COLUMN library_json TEXT NOT NULL DEFAULT '{}';
    )sql",
};
constexpr int kSchemaVersion = static_cast<int>(std::size(kMigrations));

Status SqliteError(sqlite3* db, std::string_view op) {
  return Status::Error("{}: {}", op, db != nullptr ? sqlite3_errmsg(db) : "out of memory");
}

Status Exec(sqlite3* db, const char* sql, std::string_view op) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) == SQLITE_OK)
    return Status::Ok();
  Status s = Status::Error("{}: {}", op, err != nullptr ? err : sqlite3_errmsg(db));
  sqlite3_free(err);
  return s;
}

// One prepared statement; finalized on destruction. Bind indexes start at 1, columns at 0.
class Stmt {
 public:
  static Result<Stmt> Prepare(sqlite3* db, std::string_view sql, std::string_view op) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
        SQLITE_OK) {
      return SqliteError(db, op);
    }
    return Stmt(db, stmt, op);
  }
  ~Stmt() { sqlite3_finalize(stmt_); }
  Stmt(Stmt&& o) noexcept
      : db_(o.db_), stmt_(std::exchange(o.stmt_, nullptr)), op_(o.op_), bind_rc_(o.bind_rc_) {}
  Stmt& operator=(Stmt&&) = delete;
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Bind failures are remembered and reported by the next Step, so callers bind in a row.
  Stmt& Bind(int i, int64_t v) { return Check(sqlite3_bind_int64(stmt_, i, v)); }
  Stmt& Bind(int i, int v) { return Bind(i, static_cast<int64_t>(v)); }
  Stmt& Bind(int i, double v) { return Check(sqlite3_bind_double(stmt_, i, v)); }
  Stmt& Bind(int i, std::string_view v) {
    return Check(sqlite3_bind_text64(stmt_, i, v.data(), v.size(), SQLITE_TRANSIENT, SQLITE_UTF8));
  }
  Stmt& Bind(int i, const std::string& v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, const char* v) { return Bind(i, std::string_view(v)); }
  Stmt& Bind(int i, const std::optional<int64_t>& v) {
    return v ? Bind(i, *v) : Check(sqlite3_bind_null(stmt_, i));
  }

  /// True with a row ready, false when done.
  Result<bool> Step() {
    if (bind_rc_ != SQLITE_OK)
      return SqliteError(db_, op_);
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW)
      return true;
    if (rc == SQLITE_DONE)
      return false;
    return SqliteError(db_, op_);
  }
  /// Steps a statement that returns no rows.
  Status Run() {
    Result<bool> r = Step();
    return r.ok() ? Status::Ok() : r.status();
  }
  /// Rewinds for another execution with new bindings.
  void Reset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
    bind_rc_ = SQLITE_OK;
  }

  int64_t Int(int col) const { return sqlite3_column_int64(stmt_, col); }
  double Double(int col) const { return sqlite3_column_double(stmt_, col); }
  bool IsNull(int col) const { return sqlite3_column_type(stmt_, col) == SQLITE_NULL; }
  std::string Text(int col) const {
    const unsigned char* p = sqlite3_column_text(stmt_, col);
    if (p == nullptr)
      return "";
    return std::string(reinterpret_cast<const char*>(p),
                       static_cast<size_t>(sqlite3_column_bytes(stmt_, col)));
  }

 private:
  Stmt(sqlite3* db, sqlite3_stmt* stmt, std::string_view op) : db_(db), stmt_(stmt), op_(op) {}
  Stmt& Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK)
      bind_rc_ = rc;
    return *this;
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string_view op_;  // a literal at every call site
  int bind_rc_ = SQLITE_OK;
};

// Calls `on_row(s)` for every row of `s`.
template <typename OnRow>
Status ForEachRow(Stmt& s, OnRow on_row) {
  while (true) {
    WS_ASSIGN_OR_RETURN(bool row, s.Step());
    if (!row)
      return Status::Ok();
    on_row(s);
  }
}

// Every row of `s`, each read by `read`.
template <typename T, typename Read>
Result<std::vector<T>> CollectRows(Stmt& s, Read read) {
  std::vector<T> out;
  WS_RETURN_IF_ERROR(ForEachRow(s, [&](Stmt& r) { out.push_back(read(r)); }));
  return out;
}

// BEGIN IMMEDIATE takes the write lock up front, so a busy database waits in busy_timeout here
// rather than failing halfway through. Rolls back unless committed.
class Transaction {
 public:
  static Result<Transaction> Begin(sqlite3* db, std::string_view op) {
    WS_RETURN_IF_ERROR(Exec(db, "BEGIN IMMEDIATE", op));
    return Transaction(db, op);
  }
  ~Transaction() {
    if (db_ != nullptr)
      sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
  }
  Transaction(Transaction&& o) noexcept : db_(std::exchange(o.db_, nullptr)), op_(o.op_) {}
  Transaction& operator=(Transaction&&) = delete;

  Status Commit() {
    WS_RETURN_IF_ERROR(Exec(db_, "COMMIT", op_));
    db_ = nullptr;
    return Status::Ok();
  }

 private:
  Transaction(sqlite3* db, std::string_view op) : db_(db), op_(op) {}
  sqlite3* db_;
  std::string_view op_;
};

Result<int> UserVersion(sqlite3* db) {
  WS_ASSIGN_OR_RETURN(Stmt s, Stmt::Prepare(db, "PRAGMA user_version", "reading schema version"));
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return Status::Error("reading schema version: no row");
  return static_cast<int>(s.Int(0));
}

Status Configure(sqlite3* db) {
  sqlite3_extended_result_codes(db, 1);
  if (sqlite3_busy_timeout(db, 5000) != SQLITE_OK)
    return SqliteError(db, "setting busy timeout");
  // journal_mode answers with the mode now in effect; anything but wal means it did not stick.
  WS_ASSIGN_OR_RETURN(Stmt wal, Stmt::Prepare(db, "PRAGMA journal_mode=WAL", "enabling WAL"));
  WS_ASSIGN_OR_RETURN(bool row, wal.Step());
  if (!row || wal.Text(0) != "wal") {
    return Status::Error("enabling WAL: journal mode is {}", row ? wal.Text(0) : "unknown");
  }
  // With WAL, NORMAL still keeps every commit across a process crash; only power loss may
  // lose the last ones.
  WS_RETURN_IF_ERROR(Exec(db, "PRAGMA synchronous=NORMAL", "setting synchronous"));
  WS_RETURN_IF_ERROR(Exec(db, "PRAGMA foreign_keys=ON", "enabling foreign keys"));
  return Status::Ok();
}

// Applies the missing steps, each with its version bump in one transaction. Another process may
// be migrating the same file, so the version is read again under the write lock.
Result<int> Migrate(sqlite3* db) {
  while (true) {
    WS_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db, "migrating schema"));
    WS_ASSIGN_OR_RETURN(int version, UserVersion(db));
    if (version > kSchemaVersion) {
      return Status::Error("schema version {} is newer than this build knows ({})", version,
                           kSchemaVersion);
    }
    if (version == kSchemaVersion) {
      WS_RETURN_IF_ERROR(tx.Commit());
      return version;
    }
    WS_RETURN_IF_ERROR(
        Exec(db, kMigrations[version], fmt::format("migrating schema to version {}", version + 1)));
    WS_RETURN_IF_ERROR(Exec(db, fmt::format("PRAGMA user_version = {}", version + 1).c_str(),
                            "setting schema version"));
    WS_RETURN_IF_ERROR(tx.Commit());
  }
}

constexpr const char* kEvaluationColumns =
    "id, kernel_id, problem, params_json, knobs_json, gpu, arch, driver, verdict, message, "
    "resources_json, time_us, sol_fraction, created_at, campaign_id, attempt_id, agent, purpose, "
    "gpu_seconds, flagged, flag_reason, sandbox_json, deep_json, job_id, node, gpu_index";

std::optional<int64_t> OptionalInt(const Stmt& s, int col) {
  if (s.IsNull(col))
    return std::nullopt;
  return s.Int(col);
}

EvaluationRecord ReadEvaluation(const Stmt& s) {
  EvaluationRecord e;
  e.id = s.Int(0);
  e.kernel_id = s.Int(1);
  e.problem = s.Text(2);
  e.params_json = s.Text(3);
  e.knobs_json = s.Text(4);
  e.gpu = s.Text(5);
  e.arch = s.Text(6);
  e.driver = s.Text(7);
  e.verdict = s.Text(8);
  e.message = s.Text(9);
  e.resources_json = s.Text(10);
  e.time_us = s.Double(11);
  e.sol_fraction = s.Double(12);
  e.created_at = s.Text(13);
  e.campaign_id = OptionalInt(s, 14);
  e.attempt_id = OptionalInt(s, 15);
  e.agent = s.Text(16);
  e.purpose = s.Text(17);
  e.gpu_seconds = s.Double(18);
  e.flagged = s.Int(19) != 0;
  e.flag_reason = s.Text(20);
  e.sandbox_json = s.Text(21);
  e.deep_json = s.Text(22);
  e.job_id = s.Text(23);
  e.node = s.Text(24);
  e.gpu_index = OptionalInt(s, 25);
  return e;
}

}  // namespace

Store::Store(sqlite3* db) : db_(db) {}

Store::~Store() {
  sqlite3_close_v2(db_);
}

Result<std::unique_ptr<Store>> Store::Open(const std::string& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  // The Store owns the handle from here, so every failure below closes it.
  std::unique_ptr<Store> store(new Store(db));
  if (rc != SQLITE_OK)
    return SqliteError(db, fmt::format("opening {}", path));
  Status s = Configure(db);
  if (!s.ok())
    return s.Context(fmt::format("opening {}", path));
  Result<int> version = Migrate(db);
  if (!version.ok())
    return version.status().Context(fmt::format("opening {}", path));
  store->version_ = *version;
  return store;
}

int Store::schema_version() const {
  return version_;
}

Result<int64_t> Store::PutKernel(const KernelRecord& k) {
  if (k.problem.empty() || k.hash.empty()) {
    return Status::Error("putting kernel: problem and hash must be set");
  }
  // Insert-or-ignore then look up: the unique (problem, hash) index makes this safe across
  // processes without a transaction.
  WS_ASSIGN_OR_RETURN(
      Stmt insert,
      Stmt::Prepare(db_,
                    "INSERT INTO kernels (problem, hash, source, origin, parent_id, campaign_id, "
                    "agent, library_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                    "ON CONFLICT (problem, hash) DO NOTHING",
                    "putting kernel"));
  insert.Bind(1, k.problem)
      .Bind(2, k.hash)
      .Bind(3, k.source)
      .Bind(4, k.origin)
      .Bind(5, k.parent_id)
      .Bind(6, k.campaign_id)
      .Bind(7, k.agent)
      .Bind(8, nlohmann::json(k.library_headers).dump());
  WS_RETURN_IF_ERROR(insert.Run());
  WS_ASSIGN_OR_RETURN(Stmt find,
                      Stmt::Prepare(db_, "SELECT id FROM kernels WHERE problem = ?1 AND hash = ?2",
                                    "looking up kernel"));
  find.Bind(1, k.problem).Bind(2, k.hash);
  WS_ASSIGN_OR_RETURN(bool row, find.Step());
  if (!row)
    return Status::Error("putting kernel: row vanished after insert");
  return find.Int(0);
}

Result<KernelRecord> Store::GetKernel(int64_t id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "SELECT id, problem, hash, source, origin, parent_id, created_at, "
                            "campaign_id, agent, library_json FROM kernels WHERE id = ?1",
                            "getting kernel"));
  s.Bind(1, id);
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return Status::Error("getting kernel: no kernel with id {}", id);
  KernelRecord k;
  k.id = s.Int(0);
  k.problem = s.Text(1);
  k.hash = s.Text(2);
  k.source = s.Text(3);
  k.origin = s.Text(4);
  if (!s.IsNull(5))
    k.parent_id = s.Int(5);
  k.created_at = s.Text(6);
  k.campaign_id = OptionalInt(s, 7);
  k.agent = s.Text(8);
  // Written by PutKernel only; a row that does not parse reads as no headers.
  auto library = nlohmann::json::parse(s.Text(9), nullptr, false);
  if (library.is_object()) {
    for (const auto& [name, text] : library.items()) {
      if (text.is_string()) k.library_headers[name] = text.get<std::string>();
    }
  }
  return k;
}

Result<int64_t> Store::AddEvaluation(const EvaluationRecord& e, bool* inserted) {
  if (inserted != nullptr)
    *inserted = false;
  WS_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_, "adding evaluation"));
  if (!e.job_id.empty()) {
    // A job's result is stored once, whichever of its tries delivers it first.
    WS_ASSIGN_OR_RETURN(Stmt find, Stmt::Prepare(db_, "SELECT id FROM evaluations WHERE job_id = ?1",
                                                 "finding a job's evaluation"));
    find.Bind(1, e.job_id);
    WS_ASSIGN_OR_RETURN(bool row, find.Step());
    if (row)
      return find.Int(0);
  }
  WS_ASSIGN_OR_RETURN(
      Stmt insert,
      Stmt::Prepare(db_,
                    "INSERT INTO evaluations (kernel_id, problem, params_json, knobs_json, gpu, "
                    "arch, driver, verdict, message, resources_json, time_us, sol_fraction, "
                    "campaign_id, attempt_id, agent, purpose, gpu_seconds, flagged, flag_reason, "
                    "sandbox_json, deep_json, job_id, node, gpu_index) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
                    "COALESCE(NULLIF(?16, ''), 'eval'), ?17, ?18, ?19, "
                    "COALESCE(NULLIF(?20, ''), '{}'), COALESCE(NULLIF(?21, ''), '{}'), "
                    "NULLIF(?22, ''), ?23, ?24)",
                    "adding evaluation"));
  insert.Bind(1, e.kernel_id)
      .Bind(2, e.problem)
      .Bind(3, e.params_json)
      .Bind(4, e.knobs_json)
      .Bind(5, e.gpu)
      .Bind(6, e.arch)
      .Bind(7, e.driver)
      .Bind(8, e.verdict)
      .Bind(9, e.message)
      .Bind(10, e.resources_json)
      .Bind(11, e.time_us)
      .Bind(12, e.sol_fraction)
      .Bind(13, e.campaign_id)
      .Bind(14, e.attempt_id)
      .Bind(15, e.agent)
      .Bind(16, e.purpose)
      .Bind(17, e.gpu_seconds)
      .Bind(18, e.flagged ? 1 : 0)
      .Bind(19, e.flag_reason)
      .Bind(20, e.sandbox_json)
      .Bind(21, e.deep_json)
      .Bind(22, e.job_id)
      .Bind(23, e.node)
      .Bind(24, e.gpu_index);
  WS_RETURN_IF_ERROR(insert.Run());
  const int64_t id = sqlite3_last_insert_rowid(db_);

  WS_ASSIGN_OR_RETURN(
      Stmt timing,
      Stmt::Prepare(db_,
                    "INSERT INTO timings (evaluation_id, shape_json, kind, median_us, min_us, "
                    "p90_us, stdev_us, iterations, sol_us) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                    "adding timing"));
  for (const ShapeTiming& t : e.timings) {
    timing.Reset();
    timing.Bind(1, id)
        .Bind(2, t.shape_json)
        .Bind(3, t.kind)
        .Bind(4, t.median_us)
        .Bind(5, t.min_us)
        .Bind(6, t.p90_us)
        .Bind(7, t.stdev_us)
        .Bind(8, t.iterations)
        .Bind(9, t.sol_us);
    WS_RETURN_IF_ERROR(timing.Run());
  }
  WS_RETURN_IF_ERROR(tx.Commit());
  if (inserted != nullptr)
    *inserted = true;
  return id;
}

Result<std::vector<EvaluationRecord>> Store::Evaluations(const std::string& problem, int limit) {
  // Newest first; an empty problem means all, a limit <= 0 means no limit.
  std::string sql = fmt::format("SELECT {} FROM evaluations {} ORDER BY id DESC LIMIT ?2",
                                kEvaluationColumns, problem.empty() ? "" : "WHERE problem = ?1");
  WS_ASSIGN_OR_RETURN(Stmt s, Stmt::Prepare(db_, sql, "listing evaluations"));
  if (!problem.empty())
    s.Bind(1, problem);
  s.Bind(2, limit > 0 ? int64_t{limit} : int64_t{-1});
  WS_ASSIGN_OR_RETURN(std::vector<EvaluationRecord> out,
                      CollectRows<EvaluationRecord>(s, ReadEvaluation));

  WS_ASSIGN_OR_RETURN(Stmt t,
                      Stmt::Prepare(db_,
                                    "SELECT shape_json, kind, median_us, min_us, p90_us, stdev_us, "
                                    "iterations, sol_us FROM timings WHERE evaluation_id = ?1 "
                                    "ORDER BY rowid",
                                    "listing timings"));
  for (EvaluationRecord& e : out) {
    t.Reset();
    t.Bind(1, e.id);
    WS_RETURN_IF_ERROR(ForEachRow(t, [&](Stmt&) {
      ShapeTiming st;
      st.shape_json = t.Text(0);
      st.kind = t.Text(1);
      st.median_us = t.Double(2);
      st.min_us = t.Double(3);
      st.p90_us = t.Double(4);
      st.stdev_us = t.Double(5);
      st.iterations = static_cast<int>(t.Int(6));
      st.sol_us = t.Double(7);
      e.timings.push_back(std::move(st));
    }));
  }
  return out;
}

Status Store::PutCeilings(const CeilingsRecord& c) {
  WS_ASSIGN_OR_RETURN(
      Stmt s,
      Stmt::Prepare(db_,
                    "INSERT INTO ceilings (gpu, copy_bytes_per_s, bf16_flops_per_s, "
                    "fp8_flops_per_s, measured_at) "
                    "VALUES (?1, ?2, ?3, ?4, COALESCE(NULLIF(?5, ''), " WS_STORE_NOW ")) "
                    "ON CONFLICT (gpu) DO UPDATE SET copy_bytes_per_s = excluded.copy_bytes_per_s, "
                    "bf16_flops_per_s = excluded.bf16_flops_per_s, "
                    "fp8_flops_per_s = excluded.fp8_flops_per_s, "
                    "measured_at = excluded.measured_at",
                    "putting ceilings"));
  s.Bind(1, c.gpu)
      .Bind(2, c.copy_bytes_per_s)
      .Bind(3, c.bf16_flops_per_s)
      .Bind(4, c.fp8_flops_per_s)
      .Bind(5, c.measured_at);
  return s.Run();
}

Result<std::optional<CeilingsRecord>> Store::GetCeilings(const std::string& gpu) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "SELECT gpu, copy_bytes_per_s, bf16_flops_per_s, fp8_flops_per_s, "
                            "measured_at FROM ceilings WHERE gpu = ?1",
                            "getting ceilings"));
  s.Bind(1, gpu);
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return std::optional<CeilingsRecord>();
  CeilingsRecord c;
  c.gpu = s.Text(0);
  c.copy_bytes_per_s = s.Double(1);
  c.bf16_flops_per_s = s.Double(2);
  c.fp8_flops_per_s = s.Double(3);
  c.measured_at = s.Text(4);
  return std::optional<CeilingsRecord>(std::move(c));
}

Result<std::optional<CeilingsRecord>> Store::LatestCeilings() {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "SELECT gpu FROM ceilings ORDER BY measured_at DESC, rowid DESC "
                            "LIMIT 1",
                            "getting the latest ceilings"));
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return std::optional<CeilingsRecord>();
  return GetCeilings(s.Text(0));
}

Result<std::vector<LeaderboardEntry>> Store::Leaderboard(const std::string& problem) {
  // An entry is a kernel with its knobs, ranked by the median of its ok, timed evaluations in its
  // (problem, params, gpu) group: a kernel timed again is not ranked by its luckiest run, and a
  // leader timed twice (Engine::ConfirmLeader) by the mean of both. It shows the evaluation at
  // the lower middle; between kernels the earliest of those wins a tie. One scan in group order
  // (an SQL window form of the same took 3x as long at 200k evaluations), then one lookup per
  // entry.
  const std::string scan = fmt::format(
      "SELECT problem, params_json, gpu, kernel_id, knobs_json, id, time_us, created_at, flagged "
      // A literal verdict, not a parameter, so the planner can use the partial index.
      "FROM evaluations WHERE verdict = '{}' AND time_us > 0 {} "
      "ORDER BY problem, params_json, gpu, kernel_id, knobs_json, time_us, id",
      kVerdictOk, problem.empty() ? "" : "AND problem = ?1");
  WS_ASSIGN_OR_RETURN(Stmt s, Stmt::Prepare(db_, scan, "reading leaderboard"));
  if (!problem.empty())
    s.Bind(1, problem);
  struct Run {
    int64_t id;
    double time_us;
    std::string created_at;
    bool flagged;
  };
  struct Best {
    double median_us = 0, fastest_us = 0, slowest_us = 0;
    Run mid;
    int64_t runs = 0;
    int64_t flagged_id = 0;  // the latest flagged run, 0: none
  };
  // Per (problem, params, gpu): the best kernel so far.
  std::map<std::tuple<std::string, std::string, std::string>, Best> best;
  std::tuple<std::string, std::string, std::string, int64_t, std::string> key;
  std::vector<Run> runs;
  auto close = [&] {
    if (runs.empty())
      return;
    const Run& lo = runs[(runs.size() - 1) / 2];
    const double median = (lo.time_us + runs[runs.size() / 2].time_us) / 2;
    auto group = std::make_tuple(std::get<0>(key), std::get<1>(key), std::get<2>(key));
    auto [it, fresh] = best.try_emplace(group);
    Best& b = it->second;
    if (fresh || median < b.median_us ||
        (median == b.median_us && std::tie(lo.created_at, lo.id) <
                                      std::tie(b.mid.created_at, b.mid.id))) {
      b.median_us = median;
      b.fastest_us = runs.front().time_us;  // runs come in time order
      b.slowest_us = runs.back().time_us;
      b.mid = lo;
      b.runs = static_cast<int64_t>(runs.size());
      b.flagged_id = 0;
      for (const Run& r : runs) {
        if (r.flagged) b.flagged_id = std::max(b.flagged_id, r.id);
      }
    }
    runs.clear();
  };
  WS_RETURN_IF_ERROR(ForEachRow(s, [&](Stmt&) {
    auto k = std::make_tuple(s.Text(0), s.Text(1), s.Text(2), s.Int(3), s.Text(4));
    if (k != key) {
      close();
      key = std::move(k);
    }
    runs.push_back({s.Int(5), s.Double(6), s.Text(7), s.Int(8) != 0});
  }));
  close();

  WS_ASSIGN_OR_RETURN(
      Stmt d, Stmt::Prepare(db_,
                            "SELECT e.kernel_id, k.hash, k.origin, e.sol_fraction, e.knobs_json, "
                            "e.agent, e.sandbox_json, e.deep_json, e.time_us "
                            "FROM evaluations e JOIN kernels k ON k.id = e.kernel_id "
                            "WHERE e.id = ?1",
                            "reading leaderboard"));
  WS_ASSIGN_OR_RETURN(
      Stmt f, Stmt::Prepare(db_, "SELECT flag_reason FROM evaluations WHERE id = ?1",
                            "reading leaderboard"));
  std::vector<LeaderboardEntry> out;
  for (const auto& [group, b] : best) {
    LeaderboardEntry l;
    std::tie(l.problem, l.params_json, l.gpu) = group;
    l.evaluation_id = b.mid.id;
    l.time_us = b.median_us;
    l.created_at = b.mid.created_at;
    l.evaluations = b.runs;
    l.fastest_us = b.fastest_us;
    l.slowest_us = b.slowest_us;
    d.Reset();
    d.Bind(1, b.mid.id);
    WS_ASSIGN_OR_RETURN(bool row, d.Step());
    if (!row)
      return Status::Error("reading leaderboard: evaluation {} vanished", b.mid.id);
    l.kernel_id = d.Int(0);
    l.kernel_hash = d.Text(1);
    l.origin = d.Text(2);
    l.sol_fraction = d.Double(3) * d.Double(8) / b.median_us;  // its SOL time over the median
    l.knobs_json = d.Text(4);
    l.agent = d.Text(5);
    l.sandbox_json = d.Text(6);
    l.deep_json = d.Text(7);
    if (b.flagged_id != 0) {
      l.flagged = true;
      f.Reset();
      f.Bind(1, b.flagged_id);
      WS_ASSIGN_OR_RETURN(bool frow, f.Step());
      if (frow)
        l.flag_reason = f.Text(0);
    }
    out.push_back(std::move(l));
  }
  std::sort(out.begin(), out.end(), [](const LeaderboardEntry& a, const LeaderboardEntry& b) {
    return std::tie(a.problem, a.params_json, a.time_us, a.gpu) <
           std::tie(b.problem, b.params_json, b.time_us, b.gpu);
  });
  return out;
}

Status Store::FlagEvaluation(int64_t evaluation_id, const std::string& reason) {
  WS_ASSIGN_OR_RETURN(Stmt s, Stmt::Prepare(db_,
                                            "UPDATE evaluations SET flagged = 1, flag_reason = ?2 "
                                            "WHERE id = ?1",
                                            "flagging evaluation"));
  s.Bind(1, evaluation_id).Bind(2, reason);
  return s.Run();
}

// ---- Campaigns ----------------------------------------------------------------------------------

namespace {

constexpr const char* kCampaignColumns =
    "id, config_json, status, stop_requested, pid, wall_seconds, message, created_at, updated_at";

CampaignRecord ReadCampaign(const Stmt& s) {
  CampaignRecord c;
  c.id = s.Int(0);
  c.config_json = s.Text(1);
  c.status = s.Text(2);
  c.stop_requested = s.Int(3) != 0;
  c.pid = s.Int(4);
  c.wall_seconds = s.Double(5);
  c.message = s.Text(6);
  c.created_at = s.Text(7);
  c.updated_at = s.Text(8);
  return c;
}

constexpr const char* kAttemptColumns =
    "id, campaign_id, problem, agent, parent_kernel_id, status, message, best_evaluation_id, "
    "started_at, finished_at";

AttemptRecord ReadAttempt(const Stmt& s) {
  AttemptRecord a;
  a.id = s.Int(0);
  a.campaign_id = s.Int(1);
  a.problem = s.Text(2);
  a.agent = s.Text(3);
  a.parent_kernel_id = OptionalInt(s, 4);
  a.status = s.Text(5);
  a.message = s.Text(6);
  a.best_evaluation_id = OptionalInt(s, 7);
  a.started_at = s.Text(8);
  a.finished_at = s.Text(9);
  return a;
}

}  // namespace

Result<int64_t> Store::CreateCampaign(const std::string& config_json, int64_t pid) {
  WS_ASSIGN_OR_RETURN(Stmt s, Stmt::Prepare(db_,
                                            "INSERT INTO campaigns (config_json, status, pid) "
                                            "VALUES (?1, 'running', ?2)",
                                            "creating campaign"));
  s.Bind(1, config_json).Bind(2, pid);
  WS_RETURN_IF_ERROR(s.Run());
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Result<CampaignRecord> Store::GetCampaign(int64_t id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_, fmt::format("SELECT {} FROM campaigns WHERE id = ?1", kCampaignColumns),
                            "getting campaign"));
  s.Bind(1, id);
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return Status::Error("no campaign with id {}", id);
  return ReadCampaign(s);
}

Result<std::optional<CampaignRecord>> Store::LatestCampaign() {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            fmt::format("SELECT {} FROM campaigns ORDER BY id DESC LIMIT 1",
                                        kCampaignColumns),
                            "getting the latest campaign"));
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return std::optional<CampaignRecord>();
  return std::optional<CampaignRecord>(ReadCampaign(s));
}

Result<std::vector<CampaignRecord>> Store::Campaigns() {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_, fmt::format("SELECT {} FROM campaigns ORDER BY id", kCampaignColumns),
                            "listing campaigns"));
  return CollectRows<CampaignRecord>(s, ReadCampaign);
}

Status Store::ClaimCampaign(int64_t id, int64_t pid) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "UPDATE campaigns SET status = 'running', stop_requested = 0, pid = ?2, "
                            "message = '', updated_at = " WS_STORE_NOW " WHERE id = ?1",
                            "claiming campaign"));
  s.Bind(1, id).Bind(2, pid);
  return s.Run();
}

Status Store::SetCampaignStatus(int64_t id, const std::string& status, const std::string& message) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "UPDATE campaigns SET status = ?2, message = ?3, updated_at = "
                            WS_STORE_NOW " WHERE id = ?1",
                            "setting campaign status"));
  s.Bind(1, id).Bind(2, status).Bind(3, message);
  return s.Run();
}

Status Store::RequestCampaignStop(int64_t id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "UPDATE campaigns SET stop_requested = 1, updated_at = " WS_STORE_NOW
                            " WHERE id = ?1",
                            "requesting campaign stop"));
  s.Bind(1, id);
  return s.Run();
}

Status Store::AddCampaignWallSeconds(int64_t id, double seconds) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "UPDATE campaigns SET wall_seconds = wall_seconds + ?2, updated_at = "
                            WS_STORE_NOW " WHERE id = ?1",
                            "adding campaign wall time"));
  s.Bind(1, id).Bind(2, seconds);
  return s.Run();
}

Status Store::PutCampaignProblem(const CampaignProblemRecord& p) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "INSERT INTO campaign_problems (campaign_id, problem, params_json, "
                            "seed_kernel_id, status) VALUES (?1, ?2, ?3, ?4, ?5) "
                            "ON CONFLICT (campaign_id, problem) DO UPDATE SET "
                            "params_json = excluded.params_json, "
                            "seed_kernel_id = excluded.seed_kernel_id, status = excluded.status",
                            "putting campaign problem"));
  s.Bind(1, p.campaign_id).Bind(2, p.problem).Bind(3, p.params_json).Bind(4, p.seed_kernel_id)
      .Bind(5, p.status);
  return s.Run();
}

Result<std::vector<CampaignProblemRecord>> Store::CampaignProblems(int64_t campaign_id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "SELECT campaign_id, problem, params_json, seed_kernel_id, status "
                            "FROM campaign_problems WHERE campaign_id = ?1 ORDER BY problem",
                            "listing campaign problems"));
  s.Bind(1, campaign_id);
  std::vector<CampaignProblemRecord> out;
  WS_RETURN_IF_ERROR(ForEachRow(s, [&](Stmt&) {
    CampaignProblemRecord p;
    p.campaign_id = s.Int(0);
    p.problem = s.Text(1);
    p.params_json = s.Text(2);
    p.seed_kernel_id = OptionalInt(s, 3);
    p.status = s.Text(4);
    out.push_back(std::move(p));
  }));
  return out;
}

Status Store::SetCampaignProblemStatus(int64_t campaign_id, const std::string& problem,
                                       const std::string& status) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "UPDATE campaign_problems SET status = ?3 "
                            "WHERE campaign_id = ?1 AND problem = ?2",
                            "setting campaign problem status"));
  s.Bind(1, campaign_id).Bind(2, problem).Bind(3, status);
  return s.Run();
}

Result<int64_t> Store::StartAttempt(const AttemptRecord& a) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "INSERT INTO attempts (campaign_id, problem, agent, parent_kernel_id, "
                            "status) VALUES (?1, ?2, ?3, ?4, 'running')",
                            "starting attempt"));
  s.Bind(1, a.campaign_id).Bind(2, a.problem).Bind(3, a.agent).Bind(4, a.parent_kernel_id);
  WS_RETURN_IF_ERROR(s.Run());
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Status Store::FinishAttempt(int64_t id, const std::string& status, const std::string& message,
                            std::optional<int64_t> best_evaluation_id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "UPDATE attempts SET status = ?2, message = ?3, "
                            "best_evaluation_id = ?4, finished_at = " WS_STORE_NOW " WHERE id = ?1",
                            "finishing attempt"));
  s.Bind(1, id).Bind(2, status).Bind(3, message).Bind(4, best_evaluation_id);
  return s.Run();
}

Result<int64_t> Store::InterruptRunningAttempts(int64_t campaign_id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "UPDATE attempts SET status = 'interrupted', "
                            "message = 'the orchestrator stopped during the attempt', "
                            "finished_at = " WS_STORE_NOW
                            " WHERE campaign_id = ?1 AND status = 'running'",
                            "interrupting attempts"));
  s.Bind(1, campaign_id);
  WS_RETURN_IF_ERROR(s.Run());
  return static_cast<int64_t>(sqlite3_changes(db_));
}

Result<std::vector<AttemptRecord>> Store::Attempts(int64_t campaign_id, const std::string& problem) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            fmt::format("SELECT {} FROM attempts WHERE campaign_id = ?1 {} "
                                        "ORDER BY id",
                                        kAttemptColumns, problem.empty() ? "" : "AND problem = ?2"),
                            "listing attempts"));
  s.Bind(1, campaign_id);
  if (!problem.empty())
    s.Bind(2, problem);
  return CollectRows<AttemptRecord>(s, ReadAttempt);
}

Status Store::AddAgentTurn(const AgentTurnRecord& t) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "INSERT INTO agent_turns (campaign_id, attempt_id, agent, input_tokens, "
                            "output_tokens, cached_input_tokens, cost_usd, stop_reason) "
                            "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                            "adding agent turn"));
  s.Bind(1, t.campaign_id)
      .Bind(2, t.attempt_id)
      .Bind(3, t.agent)
      .Bind(4, t.input_tokens)
      .Bind(5, t.output_tokens)
      .Bind(6, t.cached_input_tokens)
      .Bind(7, t.cost_usd)
      .Bind(8, t.stop_reason);
  return s.Run();
}

Result<std::vector<EvaluationRecord>> Store::CampaignEvaluations(int64_t campaign_id,
                                                                 const std::string& problem) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            fmt::format("SELECT {} FROM evaluations WHERE campaign_id = ?1 {} "
                                        "ORDER BY id",
                                        kEvaluationColumns,
                                        problem.empty() ? "" : "AND problem = ?2"),
                            "listing campaign evaluations"));
  s.Bind(1, campaign_id);
  if (!problem.empty())
    s.Bind(2, problem);
  return CollectRows<EvaluationRecord>(s, ReadEvaluation);
}

Result<CampaignSpend> Store::Spend(int64_t campaign_id) {
  CampaignSpend out;
  WS_ASSIGN_OR_RETURN(
      Stmt e, Stmt::Prepare(db_,
                            "SELECT COUNT(*), COALESCE(SUM(gpu_seconds), 0) FROM evaluations "
                            "WHERE campaign_id = ?1",
                            "summing campaign evaluations"));
  e.Bind(1, campaign_id);
  WS_ASSIGN_OR_RETURN(bool row, e.Step());
  if (row) {
    out.evaluations = e.Int(0);
    out.gpu_seconds = e.Double(1);
  }
  WS_ASSIGN_OR_RETURN(
      Stmt t, Stmt::Prepare(db_,
                            "SELECT COALESCE(SUM(input_tokens + output_tokens), 0), "
                            "COALESCE(SUM(cost_usd), 0) FROM agent_turns WHERE campaign_id = ?1",
                            "summing campaign turns"));
  t.Bind(1, campaign_id);
  WS_ASSIGN_OR_RETURN(row, t.Step());
  if (row) {
    out.tokens = t.Int(0);
    out.dollars = t.Double(1);
  }
  WS_ASSIGN_OR_RETURN(CampaignRecord c, GetCampaign(campaign_id));
  out.wall_seconds = c.wall_seconds;
  return out;
}

Result<std::map<std::string, CampaignSpend>> Store::TokenSpendByProblem(int64_t campaign_id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "SELECT a.problem, SUM(t.input_tokens + t.output_tokens), "
                            "SUM(t.cost_usd) FROM agent_turns t "
                            "JOIN attempts a ON a.id = t.attempt_id "
                            "WHERE t.campaign_id = ?1 GROUP BY a.problem",
                            "summing turns per problem"));
  s.Bind(1, campaign_id);
  std::map<std::string, CampaignSpend> out;
  WS_RETURN_IF_ERROR(ForEachRow(s, [&](Stmt&) {
    CampaignSpend& p = out[s.Text(0)];
    p.tokens = s.Int(1);
    p.dollars = s.Double(2);
  }));
  return out;
}

Result<std::vector<AgentStats>> Store::AgentStatistics(std::optional<int64_t> campaign_id) {
  std::map<std::string, AgentStats> by_agent;
  const std::string where = campaign_id ? "WHERE campaign_id = ?1" : "";
  auto stats = [&](const std::string& agent) -> AgentStats& {
    AgentStats& a = by_agent[agent];
    a.agent = agent;
    return a;
  };
  {
    WS_ASSIGN_OR_RETURN(
        Stmt s, Stmt::Prepare(db_,
                              fmt::format("SELECT agent, COUNT(*) FROM attempts {} GROUP BY agent",
                                          where),
                              "counting attempts"));
    if (campaign_id)
      s.Bind(1, *campaign_id);
    WS_RETURN_IF_ERROR(ForEachRow(s, [&](Stmt&) {
      stats(s.Text(0)).attempts = s.Int(1);
    }));
  }
  {
    // A leader's confirmation runs (--confirm-runs) are the campaign's work, not its agent's.
    WS_ASSIGN_OR_RETURN(
        Stmt s, Stmt::Prepare(db_,
                              fmt::format("SELECT agent, verdict, COUNT(*) FROM evaluations {} "
                                          "{} purpose != 'confirm' GROUP BY agent, verdict",
                                          where, campaign_id ? "AND" : "WHERE"),
                              "counting verdicts"));
    if (campaign_id)
      s.Bind(1, *campaign_id);
    WS_RETURN_IF_ERROR(ForEachRow(s, [&](Stmt&) {
      stats(s.Text(0)).verdicts[s.Text(1)] = s.Int(2);
    }));
  }
  {
    WS_ASSIGN_OR_RETURN(
        Stmt s, Stmt::Prepare(db_,
                              fmt::format("SELECT agent, SUM(input_tokens), SUM(output_tokens), "
                                          "SUM(cost_usd) FROM agent_turns {} GROUP BY agent",
                                          where),
                              "summing turns"));
    if (campaign_id)
      s.Bind(1, *campaign_id);
    WS_RETURN_IF_ERROR(ForEachRow(s, [&](Stmt&) {
      AgentStats& a = stats(s.Text(0));
      a.input_tokens = s.Int(1);
      a.output_tokens = s.Int(2);
      a.cost_usd = s.Double(3);
    }));
  }
  std::vector<AgentStats> out;
  for (auto& [_, a] : by_agent)
    out.push_back(std::move(a));
  return out;
}

Status Store::PutJob(const JobRecord& j) {
  WS_ASSIGN_OR_RETURN(
      Stmt s,
      Stmt::Prepare(db_,
                    "INSERT INTO jobs (id, campaign_id, kind, executor, state, tries, external_id, "
                    "node, gpu_index, message, evaluation_id) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
                    "ON CONFLICT (id) DO UPDATE SET state = excluded.state, "
                    "tries = excluded.tries, external_id = excluded.external_id, "
                    "node = excluded.node, gpu_index = excluded.gpu_index, "
                    "message = excluded.message, "
                    "evaluation_id = COALESCE(excluded.evaluation_id, jobs.evaluation_id), "
                    "updated_at = " WS_STORE_NOW,
                    "putting job"));
  s.Bind(1, j.id)
      .Bind(2, j.campaign_id)
      .Bind(3, j.kind)
      .Bind(4, j.executor)
      .Bind(5, j.state)
      .Bind(6, j.tries)
      .Bind(7, j.external_id)
      .Bind(8, j.node)
      .Bind(9, j.gpu_index)
      .Bind(10, j.message)
      .Bind(11, j.evaluation_id);
  return s.Run();
}

Result<std::vector<JobRecord>> Store::Jobs(std::optional<int64_t> campaign_id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            fmt::format("SELECT id, campaign_id, kind, executor, state, tries, "
                                        "external_id, node, gpu_index, message, evaluation_id, "
                                        "created_at, updated_at FROM jobs {} ORDER BY rowid",
                                        campaign_id ? "WHERE campaign_id = ?1" : ""),
                            "listing jobs"));
  if (campaign_id)
    s.Bind(1, *campaign_id);
  return CollectRows<JobRecord>(s, [](const Stmt& r) {
    JobRecord j;
    j.id = r.Text(0);
    j.campaign_id = OptionalInt(r, 1);
    j.kind = r.Text(2);
    j.executor = r.Text(3);
    j.state = r.Text(4);
    j.tries = r.Int(5);
    j.external_id = r.Text(6);
    j.node = r.Text(7);
    j.gpu_index = OptionalInt(r, 8);
    j.message = r.Text(9);
    j.evaluation_id = OptionalInt(r, 10);
    j.created_at = r.Text(11);
    j.updated_at = r.Text(12);
    return j;
  });
}

}  // namespace ws
