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
  /// `sql` prepared, with `args` bound to ?1, ?2, ... in order.
  template <typename... Args>
  static Result<Stmt> Prepare(sqlite3* db, std::string_view sql, std::string_view op,
                              const Args&... args) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr) !=
        SQLITE_OK) {
      return SqliteError(db, op);
    }
    Stmt s(db, stmt, op);
    s.BindAll(args...);
    return s;
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
  /// Binds `args` to ?1, ?2, ... in order.
  template <typename... Args>
  Stmt& BindAll(const Args&... args) {
    int i = 0;
    (Bind(++i, args), ...);
    return *this;
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
  /// Reads columns 0, 1, ... into `outs` in order, each as its type says (NULL: nullopt).
  template <typename... Outs>
  void Read(Outs&... outs) const {
    int col = 0;
    (Get(col++, outs), ...);
  }

 private:
  Stmt(sqlite3* db, sqlite3_stmt* stmt, std::string_view op) : db_(db), stmt_(stmt), op_(op) {}
  Stmt& Check(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK)
      bind_rc_ = rc;
    return *this;
  }
  void Get(int col, std::string& v) const { v = Text(col); }
  void Get(int col, int64_t& v) const { v = Int(col); }
  void Get(int col, int& v) const { v = static_cast<int>(Int(col)); }
  void Get(int col, bool& v) const { v = Int(col) != 0; }
  void Get(int col, double& v) const { v = Double(col); }
  void Get(int col, std::optional<int64_t>& v) const {
    v = IsNull(col) ? std::nullopt : std::optional<int64_t>(Int(col));
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  std::string_view op_;  // a literal at every call site
  int bind_rc_ = SQLITE_OK;
};

// Runs `sql`, a statement that returns no rows, with `args` bound to ?1, ?2, ...
template <typename... Args>
Status RunStatement(sqlite3* db, std::string_view sql, std::string_view op, const Args&... args) {
  WS_ASSIGN_OR_RETURN(Stmt s, Stmt::Prepare(db, sql, op, args...));
  return s.Run();
}

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

// In kEvaluationColumns' order.
EvaluationRecord ReadEvaluation(const Stmt& s) {
  EvaluationRecord e;
  s.Read(e.id, e.kernel_id, e.problem, e.params_json, e.knobs_json, e.gpu, e.arch, e.driver,
         e.verdict, e.message, e.resources_json, e.time_us, e.sol_fraction, e.created_at,
         e.campaign_id, e.attempt_id, e.agent, e.purpose, e.gpu_seconds, e.flagged, e.flag_reason,
         e.sandbox_json, e.deep_json, e.job_id, e.node, e.gpu_index);
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
  WS_RETURN_IF_ERROR(
      RunStatement(db_,
                   "INSERT INTO kernels (problem, hash, source, origin, parent_id, campaign_id, "
                   "agent, library_json) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) "
                   "ON CONFLICT (problem, hash) DO NOTHING",
                   "putting kernel", k.problem, k.hash, k.source, k.origin, k.parent_id,
                   k.campaign_id, k.agent, nlohmann::json(k.library_headers).dump()));
  WS_ASSIGN_OR_RETURN(Stmt find,
                      Stmt::Prepare(db_, "SELECT id FROM kernels WHERE problem = ?1 AND hash = ?2",
                                    "looking up kernel", k.problem, k.hash));
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
                            "getting kernel", id));
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return Status::Error("getting kernel: no kernel with id {}", id);
  KernelRecord k;
  std::string library_json;
  s.Read(k.id, k.problem, k.hash, k.source, k.origin, k.parent_id, k.created_at, k.campaign_id,
         k.agent, library_json);
  // Written by PutKernel only; a row that does not parse reads as no headers.
  auto library = nlohmann::json::parse(library_json, nullptr, false);
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
    WS_ASSIGN_OR_RETURN(Stmt find,
                        Stmt::Prepare(db_, "SELECT id FROM evaluations WHERE job_id = ?1",
                                      "finding a job's evaluation", e.job_id));
    WS_ASSIGN_OR_RETURN(bool row, find.Step());
    if (row)
      return find.Int(0);
  }
  WS_RETURN_IF_ERROR(RunStatement(
      db_,
      "INSERT INTO evaluations (kernel_id, problem, params_json, knobs_json, gpu, "
      "arch, driver, verdict, message, resources_json, time_us, sol_fraction, "
      "campaign_id, attempt_id, agent, purpose, gpu_seconds, flagged, flag_reason, "
      "sandbox_json, deep_json, job_id, node, gpu_index) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, "
      "COALESCE(NULLIF(?16, ''), 'eval'), ?17, ?18, ?19, "
      "COALESCE(NULLIF(?20, ''), '{}'), COALESCE(NULLIF(?21, ''), '{}'), "
      "NULLIF(?22, ''), ?23, ?24)",
      "adding evaluation", e.kernel_id, e.problem, e.params_json, e.knobs_json, e.gpu, e.arch,
      e.driver, e.verdict, e.message, e.resources_json, e.time_us, e.sol_fraction, e.campaign_id,
      e.attempt_id, e.agent, e.purpose, e.gpu_seconds, e.flagged ? 1 : 0, e.flag_reason,
      e.sandbox_json, e.deep_json, e.job_id, e.node, e.gpu_index));
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
    timing.BindAll(id, t.shape_json, t.kind, t.median_us, t.min_us, t.p90_us, t.stdev_us,
                   t.iterations, t.sol_us);
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
      ShapeTiming& st = e.timings.emplace_back();
      t.Read(st.shape_json, st.kind, st.median_us, st.min_us, st.p90_us, st.stdev_us,
             st.iterations, st.sol_us);
    }));
  }
  return out;
}

Status Store::PutCeilings(const CeilingsRecord& c) {
  return RunStatement(
      db_,
      "INSERT INTO ceilings (gpu, copy_bytes_per_s, bf16_flops_per_s, "
      "fp8_flops_per_s, measured_at) "
      "VALUES (?1, ?2, ?3, ?4, COALESCE(NULLIF(?5, ''), " WS_STORE_NOW ")) "
      "ON CONFLICT (gpu) DO UPDATE SET copy_bytes_per_s = excluded.copy_bytes_per_s, "
      "bf16_flops_per_s = excluded.bf16_flops_per_s, "
      "fp8_flops_per_s = excluded.fp8_flops_per_s, "
      "measured_at = excluded.measured_at",
      "putting ceilings", c.gpu, c.copy_bytes_per_s, c.bf16_flops_per_s, c.fp8_flops_per_s,
      c.measured_at);
}

Result<std::optional<CeilingsRecord>> Store::GetCeilings(const std::string& gpu) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "SELECT gpu, copy_bytes_per_s, bf16_flops_per_s, fp8_flops_per_s, "
                            "measured_at FROM ceilings WHERE gpu = ?1",
                            "getting ceilings", gpu));
  WS_ASSIGN_OR_RETURN(bool row, s.Step());
  if (!row)
    return std::optional<CeilingsRecord>();
  CeilingsRecord c;
  s.Read(c.gpu, c.copy_bytes_per_s, c.bf16_flops_per_s, c.fp8_flops_per_s, c.measured_at);
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
    double sol_fraction = 0, time_us = 0;
    d.Read(l.kernel_id, l.kernel_hash, l.origin, sol_fraction, l.knobs_json, l.agent,
           l.sandbox_json, l.deep_json, time_us);
    l.sol_fraction = sol_fraction * time_us / b.median_us;  // its SOL time over the median
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
  return RunStatement(db_, "UPDATE evaluations SET flagged = 1, flag_reason = ?2 WHERE id = ?1",
                      "flagging evaluation", evaluation_id, reason);
}

// ---- Campaigns ----------------------------------------------------------------------------------

namespace {

constexpr const char* kCampaignColumns =
    "id, config_json, status, stop_requested, pid, wall_seconds, message, created_at, updated_at";

CampaignRecord ReadCampaign(const Stmt& s) {
  CampaignRecord c;
  s.Read(c.id, c.config_json, c.status, c.stop_requested, c.pid, c.wall_seconds, c.message,
         c.created_at, c.updated_at);
  return c;
}

constexpr const char* kAttemptColumns =
    "id, campaign_id, problem, agent, parent_kernel_id, status, message, best_evaluation_id, "
    "started_at, finished_at";

AttemptRecord ReadAttempt(const Stmt& s) {
  AttemptRecord a;
  s.Read(a.id, a.campaign_id, a.problem, a.agent, a.parent_kernel_id, a.status, a.message,
         a.best_evaluation_id, a.started_at, a.finished_at);
  return a;
}

}  // namespace

Result<int64_t> Store::CreateCampaign(const std::string& config_json, int64_t pid) {
  WS_RETURN_IF_ERROR(RunStatement(
      db_, "INSERT INTO campaigns (config_json, status, pid) VALUES (?1, 'running', ?2)",
      "creating campaign", config_json, pid));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Result<CampaignRecord> Store::GetCampaign(int64_t id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s,
      Stmt::Prepare(db_, fmt::format("SELECT {} FROM campaigns WHERE id = ?1", kCampaignColumns),
                    "getting campaign", id));
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
  return RunStatement(db_,
                      "UPDATE campaigns SET status = 'running', stop_requested = 0, pid = ?2, "
                      "message = '', updated_at = " WS_STORE_NOW " WHERE id = ?1",
                      "claiming campaign", id, pid);
}

Status Store::SetCampaignStatus(int64_t id, const std::string& status, const std::string& message) {
  return RunStatement(db_,
                      "UPDATE campaigns SET status = ?2, message = ?3, updated_at = "
                      WS_STORE_NOW " WHERE id = ?1",
                      "setting campaign status", id, status, message);
}

Status Store::RequestCampaignStop(int64_t id) {
  return RunStatement(db_,
                      "UPDATE campaigns SET stop_requested = 1, updated_at = " WS_STORE_NOW
                      " WHERE id = ?1",
                      "requesting campaign stop", id);
}

Status Store::AddCampaignWallSeconds(int64_t id, double seconds) {
  return RunStatement(db_,
                      "UPDATE campaigns SET wall_seconds = wall_seconds + ?2, updated_at = "
                      WS_STORE_NOW " WHERE id = ?1",
                      "adding campaign wall time", id, seconds);
}

Status Store::PutCampaignProblem(const CampaignProblemRecord& p) {
  return RunStatement(db_,
                      "INSERT INTO campaign_problems (campaign_id, problem, params_json, "
                      "seed_kernel_id, status) VALUES (?1, ?2, ?3, ?4, ?5) "
                      "ON CONFLICT (campaign_id, problem) DO UPDATE SET "
                      "params_json = excluded.params_json, "
                      "seed_kernel_id = excluded.seed_kernel_id, status = excluded.status",
                      "putting campaign problem", p.campaign_id, p.problem, p.params_json,
                      p.seed_kernel_id, p.status);
}

Result<std::vector<CampaignProblemRecord>> Store::CampaignProblems(int64_t campaign_id) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            "SELECT campaign_id, problem, params_json, seed_kernel_id, status "
                            "FROM campaign_problems WHERE campaign_id = ?1 ORDER BY problem",
                            "listing campaign problems", campaign_id));
  return CollectRows<CampaignProblemRecord>(s, [](const Stmt& r) {
    CampaignProblemRecord p;
    r.Read(p.campaign_id, p.problem, p.params_json, p.seed_kernel_id, p.status);
    return p;
  });
}

Status Store::SetCampaignProblemStatus(int64_t campaign_id, const std::string& problem,
                                       const std::string& status) {
  return RunStatement(db_,
                      "UPDATE campaign_problems SET status = ?3 "
                      "WHERE campaign_id = ?1 AND problem = ?2",
                      "setting campaign problem status", campaign_id, problem, status);
}

Result<int64_t> Store::StartAttempt(const AttemptRecord& a) {
  WS_RETURN_IF_ERROR(RunStatement(
      db_,
      "INSERT INTO attempts (campaign_id, problem, agent, parent_kernel_id, "
      "status) VALUES (?1, ?2, ?3, ?4, 'running')",
      "starting attempt", a.campaign_id, a.problem, a.agent, a.parent_kernel_id));
  return static_cast<int64_t>(sqlite3_last_insert_rowid(db_));
}

Status Store::FinishAttempt(int64_t id, const std::string& status, const std::string& message,
                            std::optional<int64_t> best_evaluation_id) {
  return RunStatement(db_,
                      "UPDATE attempts SET status = ?2, message = ?3, "
                      "best_evaluation_id = ?4, finished_at = " WS_STORE_NOW " WHERE id = ?1",
                      "finishing attempt", id, status, message, best_evaluation_id);
}

Result<int64_t> Store::InterruptRunningAttempts(int64_t campaign_id) {
  WS_RETURN_IF_ERROR(RunStatement(db_,
                                  "UPDATE attempts SET status = 'interrupted', "
                                  "message = 'the orchestrator stopped during the attempt', "
                                  "finished_at = " WS_STORE_NOW
                                  " WHERE campaign_id = ?1 AND status = 'running'",
                                  "interrupting attempts", campaign_id));
  return static_cast<int64_t>(sqlite3_changes(db_));
}

Result<std::vector<AttemptRecord>> Store::Attempts(int64_t campaign_id, const std::string& problem) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            fmt::format("SELECT {} FROM attempts WHERE campaign_id = ?1 {} "
                                        "ORDER BY id",
                                        kAttemptColumns, problem.empty() ? "" : "AND problem = ?2"),
                            "listing attempts", campaign_id));
  if (!problem.empty())
    s.Bind(2, problem);
  return CollectRows<AttemptRecord>(s, ReadAttempt);
}

Status Store::AddAgentTurn(const AgentTurnRecord& t) {
  return RunStatement(db_,
                      "INSERT INTO agent_turns (campaign_id, attempt_id, agent, input_tokens, "
                      "output_tokens, cached_input_tokens, cost_usd, stop_reason) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
                      "adding agent turn", t.campaign_id, t.attempt_id, t.agent, t.input_tokens,
                      t.output_tokens, t.cached_input_tokens, t.cost_usd, t.stop_reason);
}

Result<std::vector<EvaluationRecord>> Store::CampaignEvaluations(int64_t campaign_id,
                                                                 const std::string& problem) {
  WS_ASSIGN_OR_RETURN(
      Stmt s, Stmt::Prepare(db_,
                            fmt::format("SELECT {} FROM evaluations WHERE campaign_id = ?1 {} "
                                        "ORDER BY id",
                                        kEvaluationColumns,
                                        problem.empty() ? "" : "AND problem = ?2"),
                            "listing campaign evaluations", campaign_id));
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
                            "summing campaign evaluations", campaign_id));
  WS_ASSIGN_OR_RETURN(bool row, e.Step());
  if (row)
    e.Read(out.evaluations, out.gpu_seconds);
  WS_ASSIGN_OR_RETURN(
      Stmt t, Stmt::Prepare(db_,
                            "SELECT COALESCE(SUM(input_tokens + output_tokens), 0), "
                            "COALESCE(SUM(cost_usd), 0) FROM agent_turns WHERE campaign_id = ?1",
                            "summing campaign turns", campaign_id));
  WS_ASSIGN_OR_RETURN(row, t.Step());
  if (row)
    t.Read(out.tokens, out.dollars);
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
                            "summing turns per problem", campaign_id));
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
  // Every row of `sql`, its ?1 the campaign when there is one.
  auto for_each_row = [&](const std::string& sql, std::string_view op, auto on_row) -> Status {
    WS_ASSIGN_OR_RETURN(Stmt s, Stmt::Prepare(db_, sql, op));
    if (campaign_id)
      s.Bind(1, *campaign_id);
    return ForEachRow(s, on_row);
  };
  WS_RETURN_IF_ERROR(for_each_row(
      fmt::format("SELECT agent, COUNT(*) FROM attempts {} GROUP BY agent", where),
      "counting attempts", [&](Stmt& s) { stats(s.Text(0)).attempts = s.Int(1); }));
  // A leader's confirmation runs (--confirm-runs) are the campaign's work, not its agent's.
  WS_RETURN_IF_ERROR(for_each_row(
      fmt::format("SELECT agent, verdict, COUNT(*) FROM evaluations {} "
                  "{} purpose != 'confirm' GROUP BY agent, verdict",
                  where, campaign_id ? "AND" : "WHERE"),
      "counting verdicts", [&](Stmt& s) { stats(s.Text(0)).verdicts[s.Text(1)] = s.Int(2); }));
  WS_RETURN_IF_ERROR(for_each_row(
      fmt::format("SELECT agent, SUM(input_tokens), SUM(output_tokens), SUM(cost_usd) "
                  "FROM agent_turns {} GROUP BY agent",
                  where),
      "summing turns", [&](Stmt& s) {
        AgentStats& a = stats(s.Text(0));
        a.input_tokens = s.Int(1);
        a.output_tokens = s.Int(2);
        a.cost_usd = s.Double(3);
      }));
  std::vector<AgentStats> out;
  for (auto& [_, a] : by_agent)
    out.push_back(std::move(a));
  return out;
}

Status Store::PutJob(const JobRecord& j) {
  return RunStatement(
      db_,
      "INSERT INTO jobs (id, campaign_id, kind, executor, state, tries, external_id, "
      "node, gpu_index, message, evaluation_id) "
      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) "
      "ON CONFLICT (id) DO UPDATE SET state = excluded.state, "
      "tries = excluded.tries, external_id = excluded.external_id, "
      "node = excluded.node, gpu_index = excluded.gpu_index, "
      "message = excluded.message, "
      "evaluation_id = COALESCE(excluded.evaluation_id, jobs.evaluation_id), "
      "updated_at = " WS_STORE_NOW,
      "putting job", j.id, j.campaign_id, j.kind, j.executor, j.state, j.tries, j.external_id,
      j.node, j.gpu_index, j.message, j.evaluation_id);
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
    r.Read(j.id, j.campaign_id, j.kind, j.executor, j.state, j.tries, j.external_id, j.node,
           j.gpu_index, j.message, j.evaluation_id, j.created_at, j.updated_at);
    return j;
  });
}

}  // namespace ws
