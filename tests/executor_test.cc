// The executor seam without a GPU: the batch driver against a scripted fake executor (results
// handed over once per job id, lost and cancelled jobs retried within a bound, late results of
// replaced tries dropped, a stop cancelling what is left); the store's job-id idempotence; job
// specs and results as JSON; the local executor (one runner per GPU, compile-only over the real
// evaluator); the Slurm sbatch arguments; a campaign whose executor loses a job.
#include "orchestrator/executor.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "orchestrator/campaign.h"
#include "orchestrator/job.h"
#include "orchestrator/slurm.h"
#include "orchestrator/store.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;

const std::string kSourceDir = WS_SOURCE_DIR;

JobSpec Spec(const std::string& id, JobKind kind = JobKind::kGpu) {
  JobSpec s;
  s.id = id;
  s.kind = kind;
  s.problem = "p";
  s.source_name = id;
  return s;
}

JobResult OkResult(const std::string& id, int try_number) {
  JobResult r;
  r.job_id = id;
  r.try_number = try_number;
  r.ok = true;
  r.node = "n" + std::to_string(try_number);
  r.result.verdict = Verdict::kNotRun;
  return r;
}

// A scripted executor: every try of every job finishes on the next poll with a result, unless
// the script says the try is lost (reported kLost, no result) or late (its result appears only
// after the job's next try has delivered).
class FakeExecutor : public Executor {
 public:
  std::string name() const override { return "fake"; }
  std::string Describe() const override { return "fake"; }
  int gpu_slots() const override { return 1; }

  Status Submit(const std::vector<JobSpec>& jobs) override {
    for (const auto& j : jobs) {
      submitted.push_back({j.id, j.try_number});
      live[j.id] = j.try_number;
    }
    return Status::Ok();
  }
  Result<std::vector<JobStatus>> Poll() override {
    std::vector<JobStatus> out;
    for (const auto& [id, t] : live) {
      JobStatus st;
      st.job_id = id;
      st.try_number = t;
      st.state = lose.count({id, t}) ? JobState::kLost : JobState::kRunning;
      out.push_back(st);
    }
    return out;
  }
  Status Cancel(const std::string& id) override {
    cancelled.insert(id);
    live.erase(id);
    return Status::Ok();
  }
  Result<std::vector<JobResult>> Collect() override {
    std::vector<JobResult> out;
    for (const auto& [id, t] : live) {
      if (!lose.count({id, t}))
        out.push_back(OkResult(id, t));
    }
    // Late results: the lost try delivers after all (a node that came back), and again.
    for (const auto& [id, t] : late) {
      if (delivered.count(id)) {
        out.push_back(OkResult(id, t));
        out.push_back(OkResult(id, t));
      }
    }
    for (const auto& r : out) delivered.insert(r.job_id);
    for (const auto& r : out) live.erase(r.job_id);
    return out;
  }

  std::vector<std::pair<std::string, int>> submitted;
  std::map<std::string, int> live;  // id -> its latest try
  std::set<std::pair<std::string, int>> lose, late;
  std::set<std::string> cancelled, delivered;
};

TEST(RunBatchTest, EveryJobsResultIsHandedOverOnce) {
  FakeExecutor ex;
  std::vector<JobSpec> jobs = {Spec("a"), Spec("b"), Spec("c", JobKind::kCompile)};
  std::map<std::string, int> seen;
  BatchOptions bo;
  bo.poll_seconds = 0.001;
  auto out = RunBatch(ex, jobs, bo, [&](const JobSpec& s, const JobResult& r) {
    EXPECT_EQ(s.id, r.job_id);
    ++seen[r.job_id];
    return Status::Ok();
  });
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->results, 3);
  EXPECT_EQ(out->retries, 0);
  EXPECT_EQ(seen, (std::map<std::string, int>{{"a", 1}, {"b", 1}, {"c", 1}}));
}

TEST(RunBatchTest, DuplicateIdsInABatchAreRefused) {
  FakeExecutor ex;
  auto out = RunBatch(ex, {Spec("a"), Spec("a")}, {},
                      [](const JobSpec&, const JobResult&) { return Status::Ok(); });
  EXPECT_FALSE(out.ok());
  EXPECT_TRUE(ex.submitted.empty());
}

TEST(RunBatchTest, LostJobIsRetriedAndItsLateResultIsNotCountedAgain) {
  FakeExecutor ex;
  ex.lose = {{"b", 1}};
  ex.late = {{"b", 1}};  // try 1 delivers twice after try 2 already did
  std::map<std::string, int> seen;
  std::vector<std::string> states;
  BatchOptions bo;
  bo.poll_seconds = 0.001;
  bo.on_state = [&](const JobSpec& s, const JobStatus& st) {
    states.push_back(fmt::format("{}#{}:{}", s.id, st.try_number, JobStateName(st.state)));
  };
  auto out = RunBatch(ex, {Spec("a"), Spec("b")}, bo, [&](const JobSpec&, const JobResult& r) {
    ++seen[r.job_id];
    EXPECT_TRUE(r.job_id != "b" || r.try_number == 2) << "try 1 of b was lost";
    return Status::Ok();
  });
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->retries, 1);
  EXPECT_EQ(seen, (std::map<std::string, int>{{"a", 1}, {"b", 1}}));
  EXPECT_EQ(ex.submitted, (std::vector<std::pair<std::string, int>>{{"a", 1}, {"b", 1}, {"b", 2}}));
  auto has = [&](const std::string& s) {
    return std::find(states.begin(), states.end(), s) != states.end();
  };
  EXPECT_TRUE(has("b#1:lost"));
  EXPECT_TRUE(has("b#2:queued"));
  EXPECT_TRUE(has("b#2:done"));
}

TEST(RunBatchTest, RetriesAreBounded) {
  FakeExecutor ex;
  ex.lose = {{"a", 1}, {"a", 2}, {"a", 3}};
  BatchOptions bo;
  bo.poll_seconds = 0.001;
  bo.max_tries = 3;
  int calls = 0;
  auto out = RunBatch(ex, {Spec("a"), Spec("z")}, bo, [&](const JobSpec&, const JobResult&) {
    ++calls;
    return Status::Ok();
  });
  ASSERT_FALSE(out.ok());
  EXPECT_NE(out.status().message().find("in 3 tries"), std::string::npos) << out.status().message();
  EXPECT_EQ(ex.submitted.size(), 4u);  // a three times, z once
  EXPECT_LE(calls, 1);
}

TEST(RunBatchTest, StopCancelsWhatIsLeftAndDropsItsResults) {
  FakeExecutor ex;
  ex.lose = {{"b", 1}, {"c", 1}};  // never finish on their own
  int polls = 0;
  BatchOptions bo;
  bo.poll_seconds = 0.001;
  bo.max_tries = 100;
  bo.stop = [&]() { return ++polls > 3 ? std::string("budget spent") : std::string(); };
  std::set<std::string> seen;
  // b and c are lost on every try the script knows (try 1); later tries never finish either.
  for (int t = 2; t < 100; ++t) {
    ex.lose.insert({"b", t});
    ex.lose.insert({"c", t});
  }
  auto out =
      RunBatch(ex, {Spec("a"), Spec("b"), Spec("c")}, bo, [&](const JobSpec&, const JobResult& r) {
        seen.insert(r.job_id);
        return Status::Ok();
      });
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(out->stopped, "budget spent");
  EXPECT_EQ(out->cancelled, 2);
  EXPECT_EQ(seen, (std::set<std::string>{"a"}));
  EXPECT_EQ(ex.cancelled, (std::set<std::string>{"b", "c"}));
}

TEST(RunBatchTest, AnEvaluatorErrorIsRetriedThenReported) {
  class Failing : public FakeExecutor {
   public:
    Result<std::vector<JobResult>> Collect() override {
      std::vector<JobResult> out;
      for (const auto& [id, t] : live) {
        JobResult r;
        r.job_id = id;
        r.try_number = t;
        r.ok = t >= 2;  // the first try's evaluator broke (a missing runner on that node)
        r.error = "no runner";
        out.push_back(r);
      }
      live.clear();
      return out;
    }
  } ex;
  BatchOptions bo;
  bo.poll_seconds = 0.001;
  int calls = 0;
  auto out = RunBatch(ex, {Spec("a")}, bo, [&](const JobSpec&, const JobResult& r) {
    ++calls;
    EXPECT_EQ(r.try_number, 2);
    return Status::Ok();
  });
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(out->retries, 1);
}

// ---- The store: one evaluation per job id -------------------------------------------------------

TEST(StoreJobsTest, AnEvaluationIsStoredOncePerJobId) {
  const fs::path dir = fs::path(testing::TempDir()) / ("ws_exec_store_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  auto store = Store::Open((dir / "w.db").string());
  ASSERT_TRUE(store.ok()) << store.status().message();
  KernelRecord k;
  k.problem = "p";
  k.hash = "h";
  k.source = "s";
  auto kid = (*store)->PutKernel(k);
  ASSERT_TRUE(kid.ok());
  auto cid = (*store)->CreateCampaign("{}", 1);
  ASSERT_TRUE(cid.ok());
  EvaluationRecord e;
  e.kernel_id = *kid;
  e.problem = "p";
  e.verdict = "not_run";
  e.campaign_id = *cid;
  e.job_id = "c1-a1-s0-gpu";
  e.node = "node7";
  e.gpu_index = 1;
  e.gpu = "NVIDIA H200";
  bool inserted = false;
  auto first = (*store)->AddEvaluation(e, &inserted);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_TRUE(inserted);
  e.node = "node8";  // a retried try's result, delivered late
  auto second = (*store)->AddEvaluation(e, &inserted);
  ASSERT_TRUE(second.ok()) << second.status().message();
  EXPECT_FALSE(inserted);
  EXPECT_EQ(*first, *second);
  e.job_id = "";  // in-process evaluations have no job id and are never merged
  ASSERT_TRUE((*store)->AddEvaluation(e, &inserted).ok());
  ASSERT_TRUE((*store)->AddEvaluation(e, &inserted).ok());
  auto evals = (*store)->CampaignEvaluations(*cid, "");
  ASSERT_TRUE(evals.ok());
  ASSERT_EQ(evals->size(), 3u);
  EXPECT_EQ((*evals)[0].job_id, "c1-a1-s0-gpu");
  EXPECT_EQ((*evals)[0].node, "node7");
  EXPECT_EQ((*evals)[0].gpu_index, std::optional<int64_t>(1));
  EXPECT_EQ((*evals)[1].job_id, "");
  EXPECT_EQ((*store)->Spend(*cid)->evaluations, 3);

  JobRecord j;
  j.id = "c1-a1-s0-gpu";
  j.campaign_id = *cid;
  j.kind = "gpu";
  j.executor = "slurm";
  j.state = "queued";
  ASSERT_TRUE((*store)->PutJob(j).ok());
  j.state = "done";
  j.tries = 2;
  j.node = "node7";
  j.evaluation_id = *first;
  ASSERT_TRUE((*store)->PutJob(j).ok());
  j.evaluation_id.reset();  // a later state update keeps the evaluation
  ASSERT_TRUE((*store)->PutJob(j).ok());
  auto jobs = (*store)->Jobs(*cid);
  ASSERT_TRUE(jobs.ok());
  ASSERT_EQ(jobs->size(), 1u);
  EXPECT_EQ((*jobs)[0].state, "done");
  EXPECT_EQ((*jobs)[0].tries, 2);
  EXPECT_EQ((*jobs)[0].evaluation_id, std::optional<int64_t>(*first));
  fs::remove_all(dir);
}

// ---- Jobs as JSON -------------------------------------------------------------------------------

TEST(JobJsonTest, SpecAndResultRoundTrip) {
  JobSpec s = Spec("c3-a9-s2-gpu");
  s.try_number = 2;
  s.problems_dir = "/p";
  s.source = "/* warpsmith:plan {} */";
  s.arch = Arch::kSm100a;
  s.params = {{"rounding", "rceil"}};
  s.knobs = {{"ROWS", 8}};
  s.include_hidden = false;
  s.include_bench = false;
  s.timing_iterations = 20;
  s.ceilings.push_back({"NVIDIA H200", 4.0e12, 9e14, 1.8e15, "t"});
  s.result_path = "/shared/results/x.json";
  auto back = ParseJobSpec(JobSpecJson(s));
  ASSERT_TRUE(back.ok()) << back.status().message();
  EXPECT_EQ(back->id, s.id);
  EXPECT_EQ(back->try_number, 2);
  EXPECT_EQ(back->kind, JobKind::kGpu);
  EXPECT_EQ(back->arch, Arch::kSm100a);
  EXPECT_EQ(back->params, s.params);
  EXPECT_EQ(back->knobs, s.knobs);
  EXPECT_FALSE(back->include_hidden);
  EXPECT_FALSE(back->include_bench);
  EXPECT_EQ(back->timing_iterations, 20);
  ASSERT_EQ(back->ceilings.size(), 1u);
  EXPECT_EQ(back->ceilings[0].fp8_flops_per_s, 1.8e15);
  EXPECT_EQ(back->result_path, s.result_path);
  EXPECT_FALSE(ParseJobSpec(R"({"id":"x","problem":"p","kind":"tpu"})").ok());

  JobResult r = OkResult("c3-a9-s2-gpu", 2);
  r.gpu_index = 1;
  r.seconds = 1.5;
  r.result.verdict = Verdict::kOk;
  r.result.geomean_us = 12.5;
  r.result.ran_on_gpu = true;
  r.result.knobs = {{"ROWS", 8}};
  CaseResult c;
  c.kind = "bench";
  c.shape.symbols = {{"M", 128}, {"K", 7168}};
  c.timing = Timing{12.5, 12.0, 13.0, 12.6, 0.2, 100, true};
  r.result.cases.push_back(c);
  r.result.compile.resources.kernels.push_back({"k", 32, 0, 0, 0, 0});
  DeviceInfo d;
  d.name = "NVIDIA H200";
  d.limits.num_sms = 132;
  r.result.device = d;
  r.result.library_headers = {{"ws/mx.cuh", "#pragma once\n"}};
  auto rb = ParseJobResult(JobResultJson(r));
  ASSERT_TRUE(rb.ok()) << rb.status().message();
  EXPECT_EQ(rb->gpu_index, std::optional<int>(1));
  EXPECT_EQ(rb->node, "n2");
  EXPECT_EQ(rb->result.verdict, Verdict::kOk);
  EXPECT_EQ(rb->result.geomean_us, 12.5);
  ASSERT_EQ(rb->result.cases.size(), 1u);
  EXPECT_EQ(rb->result.cases[0].shape.symbols.at("K"), 7168);
  ASSERT_TRUE(rb->result.cases[0].timing.has_value());
  EXPECT_EQ(rb->result.cases[0].timing->iterations, 100);
  ASSERT_TRUE(rb->result.device.has_value());
  EXPECT_EQ(rb->result.device->name, "NVIDIA H200");
  EXPECT_EQ(rb->result.compile.resources.kernels.at(0).registers, 32);
  EXPECT_EQ(rb->result.library_headers, r.result.library_headers);
}

// ---- The local executor -------------------------------------------------------------------------

TEST(LocalExecutorTest, GpuListParsing) {
  EXPECT_EQ(ParseGpuList("0,1, 3"), (std::vector<std::string>{"0", "1", "3"}));
  EXPECT_EQ(ParseGpuList(""), std::vector<std::string>{});
  EXPECT_EQ(ParseGpuList("GPU-1a2b"), std::vector<std::string>{"GPU-1a2b"});
}

// One runner per GPU: with two GPUs and six timed jobs, at most two run at once, never two on
// the same GPU, and each result names the GPU that timed it.
TEST(LocalExecutorTest, OneTimedJobPerGpuAtATime) {
  std::mutex mu;
  std::map<std::string, std::pair<double, double>> span;  // job -> [start, end)
  std::atomic<int> running{0}, most{0};
  const auto t0 = std::chrono::steady_clock::now();
  auto now = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  LocalExecutorOptions lo;
  lo.gpus = {"0", "1"};
  lo.compile_threads = 1;
  lo.evaluate = [&](const EvalRequest& req, const EvaluatorOptions&) -> Result<EvalResult> {
    const double start = now();
    int r = ++running;
    int m = most.load();
    while (r > m && !most.compare_exchange_weak(m, r)) {
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(60));
    --running;
    std::lock_guard<std::mutex> lock(mu);
    span[req.source_name] = {start, now()};
    EvalResult e;
    e.verdict = Verdict::kOk;
    e.ran_on_gpu = true;
    return e;
  };
  auto ex = MakeLocalExecutor(lo);
  EXPECT_EQ(ex->gpu_slots(), 2);
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 6; ++i) {
    JobSpec s = Spec("g" + std::to_string(i));
    s.problems_dir = kSourceDir + "/problems";
    s.problem = "mxfp8_quantize_rowwise";
    jobs.push_back(s);
  }
  std::map<std::string, JobResult> results;
  BatchOptions bo;
  bo.poll_seconds = 0.005;
  auto out = RunBatch(*ex, jobs, bo, [&](const JobSpec&, const JobResult& r) {
    EXPECT_TRUE(r.ok) << r.error;
    results[r.job_id] = r;
    return Status::Ok();
  });
  ASSERT_TRUE(out.ok()) << out.status().message();
  ASSERT_EQ(results.size(), 6u);
  EXPECT_EQ(most.load(), 2) << "both GPUs busy, never more than one job on each";
  std::map<int, std::vector<std::pair<double, double>>> by_gpu;
  for (const auto& [id, r] : results) {
    ASSERT_TRUE(r.gpu_index.has_value()) << id;
    by_gpu[*r.gpu_index].push_back(span.at(id));
  }
  ASSERT_EQ(by_gpu.size(), 2u);
  for (auto& [gpu, spans] : by_gpu) {
    std::sort(spans.begin(), spans.end());
    for (size_t i = 1; i < spans.size(); ++i)
      EXPECT_LE(spans[i - 1].second, spans[i].first) << "two jobs overlapped on GPU " << gpu;
  }
}

TEST(LocalExecutorTest, WithoutGpusGpuJobsAreRefused) {
  LocalExecutorOptions lo;
  lo.compile_threads = 1;
  auto ex = MakeLocalExecutor(lo);
  EXPECT_EQ(ex->gpu_slots(), 0);
  EXPECT_FALSE(ex->Submit({Spec("g")}).ok());
}

// Compile-only over the real evaluator: the starting kernel's knob settings compile on the
// thread pool, each job's result comes back once with a not_run verdict and no GPU.
TEST(LocalExecutorTest, CompileOnlyOverTheRealEvaluator) {
  const fs::path ws =
      fs::path(testing::TempDir()) / ("ws_exec_compile_" + std::to_string(getpid()));
  fs::remove_all(ws);
  LocalExecutorOptions lo;
  lo.compile_threads = 2;
  lo.eval_opts.workspace = ws.string();
  lo.eval_opts.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  auto ex = MakeLocalExecutor(lo);
  const std::string problem = "mxfp8_quantize_rowwise";
  std::ifstream in(kSourceDir + "/problems/" + problem + "/starting.cu");
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  auto plan = ParsePlan(source);
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  ASSERT_FALSE(plan->knobs.empty());
  const auto& [knob, values] = *plan->knobs.begin();
  std::vector<JobSpec> jobs;
  for (size_t i = 0; i < std::min<size_t>(3, values.size()); ++i) {
    JobSpec s = Spec("compile" + std::to_string(i), JobKind::kCompile);
    s.problem = problem;
    s.problems_dir = kSourceDir + "/problems";
    s.source = source;
    s.knobs = {{knob, values[i]}};
    jobs.push_back(s);
  }
  std::map<std::string, int> seen;
  auto out = RunBatch(*ex, jobs, {}, [&](const JobSpec& s, const JobResult& r) {
    ++seen[r.job_id];
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.result.verdict, Verdict::kNotRun) << r.result.message;
    EXPECT_TRUE(r.result.compile.ok) << r.result.compile.log;
    EXPECT_EQ(r.result.knobs.at(knob), s.knobs.at(knob));
    EXPECT_FALSE(r.gpu_index.has_value());
    EXPECT_FALSE(r.result.ran_on_gpu);
    return Status::Ok();
  });
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(seen.size(), jobs.size());
  for (const auto& [id, n] : seen) EXPECT_EQ(n, 1) << id;
  fs::remove_all(ws);
}

// More than one GPU: each GPU job runs as `warpsmith job run` in its own process that sees only
// its GPU (CUDA_VISIBLE_DEVICES). Without a GPU here the jobs are compile-only, which still takes
// the whole path: spec file, pinned process, result file, the GPU index the process reports.
TEST(LocalExecutorTest, PinnedProcessesSeeOnlyTheirGpu) {
  const fs::path ws = fs::path(testing::TempDir()) / ("ws_exec_pinned_" + std::to_string(getpid()));
  fs::remove_all(ws);
  LocalExecutorOptions lo;
  lo.job_env["WARPSMITH_JOB_DELAY_S"] = "1";  // both runners get a job
  lo.gpus = {"0", "1"};
  lo.pin_processes = true;
  lo.job_binary = std::string(WS_BINARY_DIR) + "/warpsmith";
  lo.compile_threads = 1;
  lo.eval_opts.workspace = ws.string();
  auto ex = MakeLocalExecutor(lo);
  std::ifstream in(kSourceDir + "/problems/mxfp8_quantize_rowwise/starting.cu");
  std::string source((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<JobSpec> jobs;
  for (int i = 0; i < 2; ++i) {
    JobSpec s = Spec("pinned" + std::to_string(i));
    s.problem = "mxfp8_quantize_rowwise";
    s.problems_dir = kSourceDir + "/problems";
    s.source = source;
    s.compile_only = true;
    jobs.push_back(s);
  }
  std::set<int> gpus;
  auto out = RunBatch(*ex, jobs, {}, [&](const JobSpec&, const JobResult& r) {
    EXPECT_TRUE(r.ok) << r.error;
    EXPECT_EQ(r.result.verdict, Verdict::kNotRun) << r.result.message;
    EXPECT_TRUE(r.gpu_index.has_value());
    if (r.gpu_index)
      gpus.insert(*r.gpu_index);
    return Status::Ok();
  });
  ASSERT_TRUE(out.ok()) << out.status().message();
  EXPECT_EQ(gpus, (std::set<int>{0, 1}));
  // The index as the job process itself saw it in CUDA_VISIBLE_DEVICES.
  for (const char* f : {"pinned0.1.result.json", "pinned1.1.result.json"}) {
    auto text = ReadFile((ws / "jobs" / f).string());
    ASSERT_TRUE(text.ok()) << text.status().message();
    auto r = ParseJobResult(*text);
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_TRUE(r->gpu_index.has_value()) << f;
  }
  fs::remove_all(ws);
}

// Cancelling a running pinned job kills its process: no result ever comes.
TEST(LocalExecutorTest, CancelKillsARunningJob) {
  const fs::path ws = fs::path(testing::TempDir()) / ("ws_exec_cancel_" + std::to_string(getpid()));
  fs::remove_all(ws);
  LocalExecutorOptions lo;
  lo.job_env["WARPSMITH_JOB_DELAY_S"] = "5";
  lo.gpus = {"0", "1"};
  lo.pin_processes = true;
  lo.job_binary = std::string(WS_BINARY_DIR) + "/warpsmith";
  lo.compile_threads = 1;
  lo.eval_opts.workspace = ws.string();
  auto ex = MakeLocalExecutor(lo);
  JobSpec s = Spec("victim");
  s.problem = "mxfp8_quantize_rowwise";
  s.problems_dir = kSourceDir + "/problems";
  s.compile_only = true;
  ASSERT_TRUE(ex->Submit({s}).ok());
  bool running = false;
  for (int i = 0; i < 100 && !running; ++i) {
    auto st = ex->Poll();
    ASSERT_TRUE(st.ok());
    running = !st->empty() && (*st)[0].state == JobState::kRunning;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ASSERT_TRUE(running);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // the process has started
  const auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(ex->Cancel("victim").ok());
  ex.reset();  // joins the runners: returns once the killed process is reaped
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(4))
      << "the job's 5 s wait was cut short";
  EXPECT_FALSE(fs::exists(ws / "jobs" / "victim.1.result.json"));
  fs::remove_all(ws);
}

// ---- Slurm: the submission line -----------------------------------------------------------------

TEST(SlurmArgsTest, GpuJobsAskForOneGpuAndCompileJobsForNone) {
  SlurmOptions so;
  so.partition = "eval";
  so.account = "kernels";
  so.time = "10";
  auto gpu = SbatchArgs(so, JobKind::kGpu, 4, "/s/%a.out");
  auto cpu = SbatchArgs(so, JobKind::kCompile, 1, "/s/%a.out");
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  EXPECT_TRUE(has(gpu, "--gres=gpu:1"));
  EXPECT_FALSE(has(cpu, "--gres=gpu:1"));
  for (const auto* a : {&gpu, &cpu}) {
    EXPECT_TRUE(has(*a, "--parsable"));
    EXPECT_TRUE(has(*a, "--no-requeue")) << "retries are ours, bounded";
    EXPECT_TRUE(has(*a, "--partition=eval"));
    EXPECT_TRUE(has(*a, "--account=kernels"));
    EXPECT_TRUE(has(*a, "--time=10"));
  }
  EXPECT_TRUE(has(gpu, "--array=0-3"));
  EXPECT_TRUE(has(cpu, "--array=0-0"));
  EXPECT_FALSE(has(SbatchArgs(SlurmOptions{}, JobKind::kGpu, 1, "o"), "--partition="));
}

// ---- A campaign through a lossy executor --------------------------------------------------------

// Forwards to a local executor, but the first try of every third job is lost: never run, reported
// lost. Its retry runs.
class LossyExecutor : public Executor {
 public:
  explicit LossyExecutor(std::unique_ptr<Executor> inner) : inner_(std::move(inner)) {}
  std::string name() const override { return "lossy"; }
  std::string Describe() const override { return "lossy " + inner_->Describe(); }
  int gpu_slots() const override { return inner_->gpu_slots(); }
  Status Submit(const std::vector<JobSpec>& jobs) override {
    std::vector<JobSpec> pass;
    for (const auto& j : jobs) {
      if (j.try_number == 1 && seen_++ % 3 == 1) {
        lost_[j.id] = j.try_number;
        continue;
      }
      lost_.erase(j.id);
      pass.push_back(j);
    }
    return inner_->Submit(pass);
  }
  Result<std::vector<JobStatus>> Poll() override {
    WS_ASSIGN_OR_RETURN(auto out, inner_->Poll());
    for (const auto& [id, t] : lost_) out.push_back({id, t, JobState::kLost, "", "", {}, "gone"});
    return out;
  }
  Status Cancel(const std::string& id) override {
    lost_.erase(id);
    return inner_->Cancel(id);
  }
  Result<std::vector<JobResult>> Collect() override { return inner_->Collect(); }

 private:
  std::unique_ptr<Executor> inner_;
  std::map<std::string, int> lost_;
  int seen_ = 0;
};

TEST(ExecutorCampaignTest, LostJobsAreRetriedAndEveryEvaluationCountedOnce) {
  const fs::path dir =
      fs::path(testing::TempDir()) / ("ws_exec_campaign_" + std::to_string(getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  LocalExecutorOptions lo;
  lo.compile_threads = 2;
  lo.eval_opts.workspace = (dir / "ws").string();
  lo.eval_opts.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  LossyExecutor ex(MakeLocalExecutor(lo));

  CampaignConfig c;
  c.problems = "mxfp8_quantize_rowwise";
  c.compile_only = true;
  c.budget.evaluations = 6;
  c.tuner_batch = 3;
  CampaignEnv env;
  env.workspace = (dir / "ws").string();
  env.problems_dir = kSourceDir + "/problems";
  env.kernels_dir = kSourceDir + "/kernels";
  env.eval_opts = lo.eval_opts;
  env.out = nullptr;
  env.executor = &ex;
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_TRUE(id.ok()) << id.status().message();

  auto store = Store::Open((dir / "ws" / "warpsmith.db").string());
  ASSERT_TRUE(store.ok());
  auto evals = (*store)->CampaignEvaluations(*id, "");
  ASSERT_TRUE(evals.ok());
  EXPECT_EQ(evals->size(), 6u);
  std::set<std::string> job_ids, knobs;
  for (const auto& e : *evals) {
    EXPECT_FALSE(e.job_id.empty());
    job_ids.insert(e.job_id);
    knobs.insert(e.knobs_json);
  }
  EXPECT_EQ(job_ids.size(), 6u);
  EXPECT_EQ(knobs.size(), 6u);
  auto jobs = (*store)->Jobs(*id);
  ASSERT_TRUE(jobs.ok());
  int retried = 0;
  for (const auto& j : *jobs) {
    EXPECT_EQ(j.state, "done") << j.id;
    EXPECT_TRUE(j.evaluation_id.has_value()) << j.id;
    retried += j.tries > 1;
  }
  EXPECT_EQ(jobs->size(), 6u);
  EXPECT_EQ(retried, 2) << "every third job's first try was lost";
  auto status = CampaignStatusText(**store, *id);
  ASSERT_TRUE(status.ok());
  EXPECT_NE(status->find("jobs per node"), std::string::npos) << *status;
  fs::remove_all(dir);
}

// A resumed campaign marks the jobs a killed orchestrator left queued or running as lost: their
// results are never collected, and `campaign status` must not show them as still running.
TEST(ExecutorCampaignTest, ResumeMarksJobsLeftRunningLost) {
  const fs::path dir =
      fs::path(testing::TempDir()) / ("ws_exec_resume_" + std::to_string(getpid()));
  fs::remove_all(dir);
  CampaignConfig c;
  c.problems = "mxfp8_quantize_rowwise";
  c.compile_only = true;
  c.budget.evaluations = 2;
  c.tuner_batch = 2;
  CampaignEnv env;
  env.workspace = (dir / "ws").string();
  env.problems_dir = kSourceDir + "/problems";
  env.kernels_dir = kSourceDir + "/kernels";
  env.eval_opts.workspace = env.workspace;
  env.eval_opts.compile_worker = std::string(WS_BINARY_DIR) + "/ws_compile";
  env.out = nullptr;
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_TRUE(id.ok()) << id.status().message();
  {
    auto store = Store::Open((dir / "ws" / "warpsmith.db").string());
    ASSERT_TRUE(store.ok());
    JobRecord j;
    j.id = "left-behind";
    j.campaign_id = *id;
    j.kind = "gpu";
    j.executor = "local";
    j.state = "running";
    ASSERT_TRUE((*store)->PutJob(j).ok());
  }
  ASSERT_TRUE(RunCampaign(*id, env).ok());
  auto store = Store::Open((dir / "ws" / "warpsmith.db").string());
  ASSERT_TRUE(store.ok());
  auto jobs = (*store)->Jobs(*id);
  ASSERT_TRUE(jobs.ok());
  int found = 0;
  for (const auto& j : *jobs) {
    if (j.id == "left-behind") {
      ++found;
      EXPECT_EQ(j.state, "lost");
    } else {
      EXPECT_EQ(j.state, "done") << j.id;
    }
  }
  EXPECT_EQ(found, 1);
  EXPECT_EQ((*store)->Spend(*id)->evaluations, 2);
  fs::remove_all(dir);
}

// --deep-winners through the executor: a would-be leaderboard winner's GPU job is followed by a
// deep-mode job, and only that one is recorded; so the leaderboard's winner is deep-checked.
TEST(ExecutorCampaignTest, DeepWinnersAreEvaluatedAgainInDeepMode) {
  const fs::path dir = fs::path(testing::TempDir()) / ("ws_exec_deep_" + std::to_string(getpid()));
  fs::remove_all(dir);
  std::atomic<int> deep_runs{0};
  CampaignConfig c;
  c.problems = "mxfp8_quantize_rowwise";
  c.budget.evaluations = 6;
  c.tuner_batch = 3;
  c.deep_winners = true;
  CampaignEnv env;
  env.workspace = (dir / "ws").string();
  env.problems_dir = kSourceDir + "/problems";
  env.kernels_dir = kSourceDir + "/kernels";
  env.eval_opts.workspace = env.workspace;
  env.out = nullptr;
  env.probe_device = false;
  DeviceInfo d;
  d.name = "Fake GPU";
  d.arch = "sm_90a";
  env.device = d;
  env.evaluate = [&](const EvalRequest& req, const EvaluatorOptions&) -> Result<EvalResult> {
    EvalResult r;
    auto plan = ParsePlan(req.source);
    if (!plan.ok())
      return Status::Error("fake: {}", plan.status().message());
    double t = 10;
    for (const auto& [k, values] : plan->knobs) {
      auto it = req.knobs.find(k);
      r.knobs[k] = it == req.knobs.end() ? values.front() : it->second;
      t += static_cast<double>(r.knobs[k] % 7);
    }
    r.compile.ok = true;
    if (req.compile_only) {
      r.verdict = Verdict::kNotRun;
      return r;
    }
    r.verdict = Verdict::kOk;
    r.ran_on_gpu = true;
    r.device = req.device;
    r.geomean_us = t;
    if (req.deep) {
      ++deep_runs;
      r.deep = {{"memcheck", "clean"}, {"racecheck", "clean"}, {"initcheck", "clean"}};
    }
    return r;
  };
  Result<int64_t> id = StartCampaign(c, env);
  ASSERT_TRUE(id.ok()) << id.status().message();
  auto store = Store::Open((dir / "ws" / "warpsmith.db").string());
  ASSERT_TRUE(store.ok());
  auto evals = (*store)->CampaignEvaluations(*id, "");
  ASSERT_TRUE(evals.ok());
  EXPECT_EQ(evals->size(), 6u);
  int deep = 0;
  for (const auto& e : *evals) {
    const bool is_deep = e.job_id.size() > 5 && e.job_id.substr(e.job_id.size() - 5) == "-deep";
    deep += is_deep;
    EXPECT_EQ(is_deep, e.deep_json.find("memcheck") != std::string::npos) << e.job_id;
  }
  EXPECT_GE(deep, 1);
  EXPECT_EQ(deep, deep_runs.load()) << "every deep run is recorded, in place of its GPU job";
  auto board = (*store)->Leaderboard("mxfp8_quantize_rowwise");
  ASSERT_TRUE(board.ok());
  ASSERT_EQ(board->size(), 1u);
  EXPECT_NE((*board)[0].deep_json.find("memcheck"), std::string::npos)
      << "the winner was deep-checked";
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ws
