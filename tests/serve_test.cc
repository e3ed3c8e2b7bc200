// `warpsmith serve` on a loopback ephemeral port against a store populated here: every page and
// API route, escaping of what candidates and agents wrote, the security headers, the token rules
// for actions, malformed requests, and reads while the store is being written.
#include "orchestrator/serve.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "orchestrator/campaign.h"
#include "orchestrator/diff.h"
#include "orchestrator/html.h"
#include "orchestrator/views.h"
#include "tests/serve_test_util.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using json = nlohmann::json;
using serve_test::Fetch;
using serve_test::Raw;
using ::testing::HasSubstr;
using ::testing::Not;

class ServeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = (fs::temp_directory_path() /
             fmt::format("ws_serve_test_{}_{}", ::getpid(),
                         ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(root_);
    fx_ = serve_test::Populate(root_);
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(root_);
  }

  uint16_t Start(const std::string& token = "") {
    ServeOptions o;
    o.workspace = fx_.workspace;
    o.problems_dir = fx_.problems_dir;
    o.port = 0;
    o.token = token;
    auto s = Server::Start(o);
    EXPECT_TRUE(s.ok()) << s.status().message();
    server_ = std::move(*s);
    return server_->port();
  }

  std::string root_;
  serve_test::Fixture fx_;
  std::unique_ptr<Server> server_;
};

TEST_F(ServeTest, LeaderboardPageShowsTheWinnerWithBaselineSpeedupAndFlags) {
  const uint16_t port = Start();
  auto r = Fetch(port, "GET", "/");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.headers["content-type"], HasSubstr("text/html"));
  EXPECT_THAT(r.body, HasSubstr("Leaderboard"));
  EXPECT_THAT(r.body, HasSubstr("href=\"/problems/toy\""));
  EXPECT_THAT(r.body, HasSubstr(fmt::format("href=\"/kernels/{}\"", fx_.hostile_kernel)));
  EXPECT_THAT(r.body, HasSubstr("8.00"));                       // the winner's time
  EXPECT_THAT(r.body, HasSubstr("2.50x (baseline 20.00 us)"));  // 20 us / 8 us
  EXPECT_THAT(r.body, HasSubstr("near_speed_of_light"));
  EXPECT_THAT(r.body, HasSubstr("high_variance"));
  EXPECT_THAT(r.body, HasSubstr(">reviewer<"));
  EXPECT_THAT(r.body, HasSubstr(fmt::format("href=\"/campaigns/{}\"", fx_.campaign)));
  // The agent's name and the reviewer's reason are text.
  EXPECT_THAT(r.body, HasSubstr("openai:&lt;script&gt;x&lt;/script&gt;"));
  EXPECT_THAT(r.body, HasSubstr("&lt;img src=x onerror=alert(2)&gt;"));
  EXPECT_THAT(r.body, Not(HasSubstr("<script")));
  EXPECT_THAT(r.body, Not(HasSubstr("<img")));
  EXPECT_THAT(r.body, Not(HasSubstr("<small>(median of")));  // one run

  // The winner timed twice more (9 and 12 us): ranked by the median of its three runs, 9 us,
  // still ahead of the next kernel's one run at 10 us.
  auto store = serve_test::OpenStore(fx_.workspace + "/warpsmith.db");
  auto evals = store->Evaluations("toy", 0);
  ASSERT_TRUE(evals.ok());
  auto winner = std::find_if(evals->begin(), evals->end(), [&](const EvaluationRecord& e) {
    return e.kernel_id == fx_.hostile_kernel && e.verdict == "ok" && e.time_us == 8.0;
  });
  ASSERT_NE(winner, evals->end());
  for (double us : {9.0, 12.0}) {
    EvaluationRecord again = *winner;
    again.time_us = us;
    ASSERT_TRUE(store->AddEvaluation(again).ok());
  }
  r = Fetch(port, "GET", "/");
  // 8, 9 and 12 us: 4 us apart over the median of 9.
  EXPECT_THAT(r.body, HasSubstr("9.00 <small>(median of 3, 44.4% apart)</small>"));
  EXPECT_THAT(r.body, HasSubstr("2.22x (baseline 20.00 us)"));  // 20 us / 9 us
}

TEST_F(ServeTest, EveryResponseCarriesAStrictCspAndNosniff) {
  const uint16_t port = Start();
  for (const std::string target : {"/", "/api/leaderboard", "/problems/toy", "/kernels/1",
                                   "/campaigns/1", "/nope", "/static/style.css"}) {
    auto r = Fetch(port, "GET", target);
    EXPECT_EQ(r.headers["x-content-type-options"], "nosniff") << target;
    const std::string csp = r.headers["content-security-policy"];
    EXPECT_THAT(csp, HasSubstr("default-src 'none'")) << target;
    EXPECT_THAT(csp, HasSubstr("style-src 'self'")) << target;
    EXPECT_THAT(csp, Not(HasSubstr("unsafe-inline"))) << target;
    EXPECT_THAT(csp, Not(HasSubstr("script-src"))) << target;  // no script at all
    EXPECT_EQ(r.headers["x-frame-options"], "DENY") << target;
  }
}

TEST_F(ServeTest, HostileKernelPageShowsItsSourceAsText) {
  const uint16_t port = Start();
  auto r = Fetch(port, "GET", fmt::format("/kernels/{}", fx_.hostile_kernel));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body,
              HasSubstr("&lt;/pre&gt;&lt;script&gt;alert(1);document.title=&#39;PWNED&#39;"));
  EXPECT_THAT(r.body, Not(HasSubstr("<script")));
  EXPECT_THAT(r.body, Not(HasSubstr("</pre><script")));
  EXPECT_THAT(r.body, Not(HasSubstr("<img")));
  EXPECT_THAT(r.body, Not(HasSubstr("<b>model")));
  // The page's sections.
  for (const char* s : {"Provenance", "Suspicion flags", "Checks", "Plan", "Resources",
                        "Timing distribution", "Diff against its parent",
                        "Diff against the "
                        "baseline",
                        "Source"}) {
    EXPECT_THAT(r.body, HasSubstr(s));
  }
  EXPECT_THAT(r.body, HasSubstr("&quot;block&quot;: [64]"));  // the plan
  EXPECT_THAT(r.body, HasSubstr("registers"));                // the resource report
  EXPECT_THAT(r.body, HasSubstr(">2.000<"));                  // the timing's stdev
  EXPECT_THAT(r.body, HasSubstr("class=\"add\""));            // a diff line added
  EXPECT_THAT(r.body, HasSubstr(fmt::format("href=\"/kernels/{}\"", fx_.fast_kernel)));
  // The library headers it was recorded with, escaped like the source.
  EXPECT_THAT(r.body, HasSubstr("Device library: ws/&lt;i&gt;evil&lt;/i&gt;.cuh"));
  EXPECT_THAT(r.body, HasSubstr("&lt;/pre&gt;&lt;script&gt;alert(2)"));
  EXPECT_THAT(r.body, Not(HasSubstr("<i>evil")));
  auto api = Fetch(port, "GET", fmt::format("/api/kernels/{}", fx_.hostile_kernel));
  ASSERT_EQ(api.status, 200);
  EXPECT_EQ(json::parse(api.body)["library_headers"]["ws/<i>evil</i>.cuh"],
            "</pre><script>alert(2)</script>\n");
}

TEST_F(ServeTest, ProblemPageHasPlotsCandidatesAndLines) {
  const uint16_t port = Start();
  auto r = Fetch(port, "GET", "/problems/toy");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(std::count(r.body.begin(), r.body.end(), '\n') > 0, true);
  size_t svgs = 0;
  for (size_t p = r.body.find("<svg"); p != std::string::npos; p = r.body.find("<svg", p + 1))
    ++svgs;
  EXPECT_EQ(svgs, 2u);  // against evaluations and against spend
  EXPECT_THAT(r.body, HasSubstr("<polyline"));
  EXPECT_THAT(r.body, HasSubstr(">baseline</text>"));
  EXPECT_THAT(r.body, HasSubstr(">speed of light</text>"));
  EXPECT_THAT(r.body, HasSubstr("spend (GPU-seconds)"));
  EXPECT_THAT(r.body, HasSubstr("wrong_answer"));
  EXPECT_THAT(r.body, HasSubstr("mismatch &lt;/pre&gt;&lt;script&gt;"));
  EXPECT_THAT(r.body, Not(HasSubstr("<script")));
}

TEST_F(ServeTest, CampaignPageIsLiveAndShowsSpendPerAgentAndProblem) {
  const uint16_t port = Start();
  auto r = Fetch(port, "GET", fmt::format("/campaigns/{}", fx_.campaign));
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_THAT(r.body, HasSubstr("http-equiv=\"refresh\""));  // running: it reloads itself
  EXPECT_THAT(r.body, HasSubstr("Spend per agent"));
  EXPECT_THAT(r.body, HasSubstr(">tuner<"));
  EXPECT_THAT(r.body, HasSubstr("openai:&lt;script&gt;x&lt;/script&gt;"));
  EXPECT_THAT(r.body, HasSubstr("href=\"/problems/toy\""));
  auto list = Fetch(port, "GET", "/campaigns");
  EXPECT_EQ(list.status, 200);
  EXPECT_THAT(list.body, HasSubstr(fmt::format("href=\"/campaigns/{}\"", fx_.campaign)));
  // Once it is done the page stops reloading.
  auto store = serve_test::OpenStore(fx_.workspace + "/warpsmith.db");
  ASSERT_TRUE(store->SetCampaignStatus(fx_.campaign, "done", "budget spent").ok());
  r = Fetch(port, "GET", fmt::format("/campaigns/{}", fx_.campaign));
  EXPECT_THAT(r.body, Not(HasSubstr("http-equiv=\"refresh\"")));
}

TEST_F(ServeTest, ApiRoutesReturnTheSharedViews) {
  const uint16_t port = Start();
  auto store = serve_test::OpenStore(fx_.workspace + "/warpsmith.db");

  auto lb = Fetch(port, "GET", "/api/leaderboard");
  ASSERT_EQ(lb.status, 200) << lb.body;
  EXPECT_EQ(lb.headers["content-type"], "application/json");
  json rows = json::parse(lb.body);
  // The same builder as `warpsmith leaderboard --json`.
  EXPECT_EQ(rows, *LeaderboardJson(*store, "", fx_.problems_dir));
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["kernel_id"], fx_.hostile_kernel);
  EXPECT_DOUBLE_EQ(rows[0]["speedup"].get<double>(), 2.5);
  EXPECT_EQ(rows[0]["baseline"]["kernel_id"], fx_.baseline_kernel);
  EXPECT_EQ(rows[0]["campaign_id"], fx_.campaign);
  EXPECT_EQ(rows[0]["suspicion"].size(), 3u);
  EXPECT_EQ(rows[0]["evaluations"], 1);
  EXPECT_EQ(json::parse(Fetch(port, "GET", "/api/leaderboard?problem=toy").body), rows);
  EXPECT_EQ(json::parse(Fetch(port, "GET", "/api/leaderboard?problem=other").body), json::array());

  auto p = Fetch(port, "GET", "/api/problems/toy");
  ASSERT_EQ(p.status, 200) << p.body;
  json pj = json::parse(p.body);
  EXPECT_EQ(pj["candidates"].size(), 4u);
  EXPECT_EQ(pj["candidates"][0]["baseline"], true);
  ASSERT_EQ(pj["series"].size(), 1u);
  EXPECT_DOUBLE_EQ(pj["series"][0]["baseline_time_us"].get<double>(), 20.0);
  EXPECT_NEAR(pj["series"][0]["sol_us"].get<double>(), 8.0 * 0.95, 1e-9);
  const json& pts = pj["series"][0]["points"];
  ASSERT_EQ(pts.size(), 3u);  // the rejected one ran on no GPU
  EXPECT_DOUBLE_EQ(pts[2]["best_time_us"].get<double>(), 8.0);
  EXPECT_DOUBLE_EQ(pts[2]["gpu_seconds"].get<double>(), 7.5);

  auto k = Fetch(port, "GET", fmt::format("/api/kernels/{}", fx_.hostile_kernel));
  ASSERT_EQ(k.status, 200) << k.body;
  json kj = json::parse(k.body);
  EXPECT_EQ(kj["source"], serve_test::kHostileSource);  // JSON keeps it verbatim
  EXPECT_EQ(kj["parent_id"], fx_.fast_kernel);
  EXPECT_EQ(kj["diff_parent"], UnifiedDiff(serve_test::kFastSource, serve_test::kHostileSource,
                                           fmt::format("kernel {}", fx_.fast_kernel),
                                           fmt::format("kernel {}", fx_.hostile_kernel)));
  EXPECT_THAT(kj["diff_baseline"].get<std::string>(), HasSubstr("--- problems/toy/baseline.cu"));
  EXPECT_EQ(kj["plan"]["json"]["block"], json::array({64}));
  EXPECT_EQ(kj["evaluations"].size(), 2u);
  EXPECT_EQ(kj["checks"]["verified"], true);
  std::set<std::string> flags;
  for (const auto& f : kj["suspicion"]) flags.insert(f["flag"].get<std::string>());
  EXPECT_EQ(flags, (std::set<std::string>{"near_speed_of_light", "high_variance", "reviewer"}));
  EXPECT_EQ(kj["resources"]["registers"], 32);

  auto c = Fetch(port, "GET", fmt::format("/api/campaigns/{}", fx_.campaign));
  ASSERT_EQ(c.status, 200) << c.body;
  json cj = json::parse(c.body);
  EXPECT_EQ(cj["id"], fx_.campaign);
  EXPECT_EQ(cj["status"], "running");
  // Everything `campaign status --json` says is there.
  json cli = json::parse(*CampaignStatusJson(*store, fx_.campaign));
  for (const auto& [key, v] : cli.items()) {
    if (key != "process_alive") {
      EXPECT_EQ(cj[key], v) << key;
    }
  }
  double gs = 0;
  for (const auto& a : cj["spend_by_agent"]) gs += a["gpu_seconds"].get<double>();
  EXPECT_DOUBLE_EQ(gs, 5.0);
  auto cl = Fetch(port, "GET", "/api/campaigns");
  ASSERT_EQ(cl.status, 200);
  EXPECT_EQ(json::parse(cl.body)[0]["id"], fx_.campaign);
}

TEST_F(ServeTest, UnknownAndMalformedRequestsGet4xxAndTheServerLivesOn) {
  const uint16_t port = Start();
  EXPECT_EQ(Fetch(port, "GET", "/kernels/999").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/api/kernels/999").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/kernels/abc").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/kernels/99999999999999999999999").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/campaigns/77").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/problems/nope").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/problems/..").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/problems/%2e%2e%2fetc").status, 400);  // a decoded slash
  EXPECT_EQ(Fetch(port, "GET", "/problems/%zz").status, 400);
  EXPECT_EQ(Fetch(port, "GET", "/problems/a%00b").status, 400);
  EXPECT_EQ(Fetch(port, "GET", "/no/such/page").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/api/").status, 404);
  EXPECT_EQ(Fetch(port, "GET", "/api/nothing").status, 404);
  EXPECT_EQ(Fetch(port, "PUT", "/").status, 405);
  EXPECT_EQ(Fetch(port, "DELETE", "/api/kernels/1").status, 405);
  auto nf = Fetch(port, "GET", "/api/kernels/999");
  EXPECT_TRUE(json::parse(nf.body).contains("error"));
  EXPECT_THAT(Raw(port, "GARBAGE\r\n\r\n"), HasSubstr("HTTP/1.1 400"));
  EXPECT_THAT(
      Raw(port, "GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nX: " + std::string(40000, 'a') + "\r\n\r\n"),
      HasSubstr("HTTP/1.1 4"));
  EXPECT_THAT(Raw(port,
                  "POST /api/campaigns/1/stop HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                  "Content-Length: 999999999\r\n\r\n"),
              HasSubstr("HTTP/1.1 413"));
  EXPECT_THAT(Raw(port, "GET / HTTP/1.1\r\n\r\n"), HasSubstr("HTTP/1.1 400"));  // no Host
  EXPECT_THAT(Raw(port, "GET nothing HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"),
              HasSubstr("HTTP/1.1 400"));
  EXPECT_EQ(Raw(port, ""), "");  // connect and hang up
  // A rebinding page's Host is refused on a loopback-bound server.
  EXPECT_EQ(Fetch(port, "GET", "/", {{"Host", "evil.example"}}).status, 421);
  EXPECT_EQ(Fetch(port, "GET", "/", {{"Host", fmt::format("localhost:{}", port)}}).status, 200);
  EXPECT_EQ(Fetch(port, "HEAD", "/").status, 200);
  EXPECT_EQ(Fetch(port, "GET", "/").status, 200);
}

TEST_F(ServeTest, WithoutATokenTheServerIsReadOnly) {
  const uint16_t port = Start();
  const std::string stop = fmt::format("/api/campaigns/{}/stop", fx_.campaign);
  EXPECT_EQ(Fetch(port, "POST", stop).status, 403);
  EXPECT_EQ(Fetch(port, "POST", stop, {{"Authorization", "Bearer "}}).status, 403);
  auto store = serve_test::OpenStore(fx_.workspace + "/warpsmith.db");
  EXPECT_FALSE(store->GetCampaign(fx_.campaign)->stop_requested);
}

TEST_F(ServeTest, ActionsNeedTheTokenAndASameOriginRequest) {
  const uint16_t port = Start("s3cret-token");
  const std::string stop = fmt::format("/api/campaigns/{}/stop", fx_.campaign);
  const std::string self = fmt::format("http://127.0.0.1:{}", port);
  auto store = serve_test::OpenStore(fx_.workspace + "/warpsmith.db");
  // Reads need no token.
  EXPECT_EQ(Fetch(port, "GET", "/api/leaderboard").status, 200);
  auto no_auth = Fetch(port, "POST", stop);
  EXPECT_EQ(no_auth.status, 401);
  EXPECT_EQ(no_auth.headers["www-authenticate"], "Bearer");
  EXPECT_EQ(Fetch(port, "POST", stop, {{"Authorization", "Bearer wrong"}}).status, 401);
  EXPECT_EQ(Fetch(port, "POST", stop, {{"Authorization", "Bearer s3cret-toke"}}).status, 401);
  EXPECT_EQ(Fetch(port, "POST", stop, {{"Authorization", "s3cret-token"}}).status, 401);
  EXPECT_EQ(Fetch(port, "POST", stop, {{"Cookie", "token=s3cret-token"}}).status, 401);
  // Cross-site, even with the token.
  EXPECT_EQ(Fetch(port, "POST", stop,
                  {{"Authorization", "Bearer s3cret-token"}, {"Origin", "http://evil.example"}})
                .status,
            403);
  EXPECT_EQ(Fetch(port, "POST", stop,
                  {{"Authorization", "Bearer s3cret-token"}, {"Sec-Fetch-Site", "cross-site"}})
                .status,
            403);
  EXPECT_EQ(
      Fetch(port, "POST", "/campaigns/1/stop", {{"Authorization", "Bearer s3cret-token"}}).status,
      405);  // actions live under /api/
  EXPECT_FALSE(store->GetCampaign(fx_.campaign)->stop_requested);

  auto ok = Fetch(port, "POST", stop, {{"Authorization", "Bearer s3cret-token"}, {"Origin", self}});
  EXPECT_EQ(ok.status, 202) << ok.body;
  EXPECT_TRUE(store->GetCampaign(fx_.campaign)->stop_requested);
  EXPECT_EQ(
      Fetch(port, "POST", "/api/campaigns/99/stop", {{"Authorization", "Bearer s3cret-token"}})
          .status,
      404);

  // Re-verify records a request (this server knows no warpsmith binary, so it runs nothing).
  const std::string rv = fmt::format("/api/kernels/{}/reverify", fx_.fast_kernel);
  EXPECT_EQ(Fetch(port, "POST", rv).status, 401);
  auto r = Fetch(port, "POST", rv, {{"Authorization", "Bearer s3cret-token"}});
  ASSERT_EQ(r.status, 202) << r.body;
  json req = json::parse(r.body);
  EXPECT_EQ(req["kernel_id"], fx_.fast_kernel);
  EXPECT_EQ(req["runs"], false);
  EXPECT_EQ(req["knobs"]["ROWS"], 4);
  EXPECT_EQ(req["arch"], "sm_90a");
  ASSERT_TRUE(fs::exists(req["request"].get<std::string>()));
  EXPECT_EQ(*ReadFile(req["source"].get<std::string>()), serve_test::kFastSource);
  EXPECT_EQ(json::parse(*ReadFile(req["request"].get<std::string>()))["kernel_id"],
            fx_.fast_kernel);
  EXPECT_EQ(
      Fetch(port, "POST", "/api/kernels/999/reverify", {{"Authorization", "Bearer s3cret-token"}})
          .status,
      404);
  EXPECT_EQ(
      Fetch(port, "POST", "/api/kernels/1/explode", {{"Authorization", "Bearer s3cret-token"}})
          .status,
      404);
}

TEST_F(ServeTest, ANonLoopbackAddressNeedsAToken) {
  ServeOptions o;
  o.workspace = fx_.workspace;
  o.port = 0;
  o.bind = "0.0.0.0";
  auto refused = Server::Start(o);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("needs a token"));
  o.bind = "not-an-address";
  o.token = "t";
  EXPECT_FALSE(Server::Start(o).ok());
  o.bind = "0.0.0.0";
  auto s = Server::Start(o);
  ASSERT_TRUE(s.ok()) << s.status().message();
  // Not loopback-bound: any Host may be used to reach it.
  EXPECT_EQ(Fetch((*s)->port(), "GET", "/", {{"Host", "dashboard.example"}}).status, 200);
}

TEST_F(ServeTest, ConcurrentReadsWhileACampaignWrites) {
  const uint16_t port = Start();
  std::atomic<bool> done{false};
  std::atomic<int> written{0};
  std::thread writer([&] {
    auto store = serve_test::OpenStore(fx_.workspace + "/warpsmith.db");
    for (int i = 0; i < 40 && !done; ++i) {
      EvaluationRecord e;
      e.kernel_id = fx_.fast_kernel;
      e.problem = "toy";
      e.gpu = "NVIDIA H200";
      e.verdict = "ok";
      e.time_us = 12.0 + i;
      e.campaign_id = fx_.campaign;
      e.agent = "tuner";
      e.gpu_seconds = 1;
      if (store->AddEvaluation(e).ok())
        ++written;
    }
  });
  std::atomic<int> ok{0}, bad{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&, t] {
      const char* targets[] = {"/",          "/problems/toy", "/api/problems/toy",
                               "/kernels/2", "/campaigns/1",  "/api/leaderboard"};
      for (int i = 0; i < 12; ++i) {
        auto r = Fetch(port, "GET", targets[(t + i) % 6]);
        (r.status == 200 ? ok : bad)++;
      }
    });
  }
  for (auto& r : readers) r.join();
  done = true;
  writer.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_EQ(ok.load(), 96);
  EXPECT_EQ(written.load(), 40);
  auto p = json::parse(Fetch(port, "GET", "/api/problems/toy").body);
  EXPECT_EQ(p["candidates"].size(), 44u);  // the reads see the writes
}

// The real binary: `warpsmith serve --port 0` prints its URL, serves, and exits 0 on SIGTERM.
TEST_F(ServeTest, TheCliServesAndStopsOnSigterm) {
  const std::string exe = std::string(WS_BINARY_DIR) + "/warpsmith";
  ASSERT_TRUE(fs::exists(exe)) << exe;
  auto run = [&](std::vector<std::string> args, int* out_fd) {
    args.insert(args.begin(),
                {exe, "--workspace", fx_.workspace, "--problems-dir", fx_.problems_dir, "serve"});
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    int fds[2];
    EXPECT_EQ(::pipe(fds), 0);
    std::fflush(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    ::close(fds[1]);
    *out_fd = fds[0];
    return pid;
  };
  auto read_line = [](int fd) {
    std::string line;
    char c;
    while (::read(fd, &c, 1) == 1 && c != '\n') line += c;
    return line;
  };
  auto wait_status = [](pid_t pid) {
    int st = 0;
    ::waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  };

  int fd = -1;
  pid_t refused = run({"--bind", "0.0.0.0", "--port", "0"}, &fd);
  EXPECT_THAT(read_line(fd), HasSubstr("needs a token"));
  ::close(fd);
  EXPECT_EQ(wait_status(refused), 2);

  pid_t pid = run({"--port", "0", "--token", "tok"}, &fd);
  const std::string line = read_line(fd);
  ASSERT_THAT(line, HasSubstr("warpsmith serve: http://127.0.0.1:")) << line;
  const uint16_t port = static_cast<uint16_t>(std::stoi(line.substr(line.find("127.0.0.1:") + 10)));
  EXPECT_EQ(Fetch(port, "GET", "/").status, 200);
  EXPECT_EQ(json::parse(Fetch(port, "GET", "/api/leaderboard").body),
            *LeaderboardJson(*serve_test::OpenStore(fx_.workspace + "/warpsmith.db"), "",
                             fx_.problems_dir));
  // The CLI's --json is the API's.
  FILE* cli = ::popen(fmt::format("'{}' --workspace '{}' --problems-dir '{}' leaderboard --json",
                                  exe, fx_.workspace, fx_.problems_dir)
                          .c_str(),
                      "r");
  ASSERT_NE(cli, nullptr);
  std::string cli_out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, cli)) > 0;) cli_out.append(buf, n);
  EXPECT_EQ(::pclose(cli), 0);
  EXPECT_EQ(json::parse(cli_out), json::parse(Fetch(port, "GET", "/api/leaderboard").body));
  // Re-verify through the binary: recorded always; run only where there is a GPU.
  auto r = Fetch(port, "POST", fmt::format("/api/kernels/{}/reverify", fx_.fast_kernel),
                 {{"Authorization", "Bearer tok"}});
  ASSERT_EQ(r.status, 202) << r.body;
  json req = json::parse(r.body);
  EXPECT_TRUE(fs::exists(req["request"].get<std::string>()));
  if (req["runs"] == false) {
    EXPECT_FALSE(req["why_not_run"].get<std::string>().empty());
  }
  ::kill(pid, SIGTERM);
  EXPECT_EQ(wait_status(pid), 0);
  ::close(fd);
}

TEST(DiffTest, UnifiedDiffOfInsertDeleteAndEqual) {
  EXPECT_EQ(UnifiedDiff("a\nb\n", "a\nb\n", "x", "y"), "");
  EXPECT_EQ(UnifiedDiff("a\nb\nc\n", "a\nB\nc\nd\n", "old", "new", 1),
            "--- old\n+++ new\n@@ -1,3 +1,4 @@\n a\n-b\n+B\n c\n+d\n");
  EXPECT_EQ(UnifiedDiff("", "x\n", "old", "new"), "--- old\n+++ new\n@@ -0,0 +1,1 @@\n+x\n");
  // Two changes far apart make two hunks.
  std::string a, b;
  for (int i = 0; i < 20; ++i) {
    a += fmt::format("{}\n", i);
    b += fmt::format("{}\n", i == 2 ? 99 : i == 17 ? 98 : i);
  }
  const std::string d = UnifiedDiff(a, b, "a", "b", 1);
  EXPECT_THAT(d, HasSubstr("@@ -2,3 +2,3 @@\n 1\n-2\n+99\n 3\n"));
  EXPECT_THAT(d, HasSubstr("@@ -17,3 +17,3 @@\n 16\n-17\n+98\n 18\n"));
  // Past the table's size limit every line is replaced; still a correct diff.
  auto lines = DiffLines("p\nq\n", "r\n", 1);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[0].op, '-');
  EXPECT_EQ(lines[2].op, '+');
}

TEST(HtmlTest, EscapesMarkupAndQuotes) {
  EXPECT_EQ(HtmlEscape("</pre><script>a='1'&\"</script>"),
            "&lt;/pre&gt;&lt;script&gt;a=&#39;1&#39;&amp;&quot;&lt;/script&gt;");
  EXPECT_EQ(UrlSegment("a b/c"), "a%20b%2Fc");
  EXPECT_EQ(PlanText("x /* warpsmith:plan {\"a\": 1} */ y"), "{\"a\": 1}");
  EXPECT_EQ(PlanText("no plan"), "");
}

}  // namespace
}  // namespace ws
