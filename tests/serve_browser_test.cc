// The dashboard in headless Chromium (Debian's `chromium`): the leaderboard and the hostile
// kernel's page render their text, no script from the hostile kernel runs, and a screenshot of
// each is saved under the test's temp folder. Skipped, saying so, where chromium is missing.
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "orchestrator/serve.h"
#include "tests/serve_test_util.h"

namespace ws {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

std::string TextOf(const std::string& path) {
  auto r = ReadFile(path);
  return r.ok() ? *r : "";
}

std::string FindChromium() {
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/bin:/bin";
  for (const char* name : {"chromium", "chromium-browser", "google-chrome"}) {
    size_t start = 0;
    while (start <= dirs.size()) {
      size_t colon = dirs.find(':', start);
      if (colon == std::string::npos)
        colon = dirs.size();
      fs::path p = fs::path(dirs.substr(start, colon - start)) / name;
      if (::access(p.c_str(), X_OK) == 0)
        return p.string();
      start = colon + 1;
    }
  }
  return "";
}

// Runs chromium with `args` (stdout to `out`, stderr to `err`) and returns its exit status.
int RunChromium(const std::string& exe, const std::vector<std::string>& args,
                const std::string& profile, const std::string& out, const std::string& err) {
  std::vector<std::string> argv = {exe,
                                   "--headless",
                                   "--no-sandbox",
                                   "--disable-gpu",
                                   "--no-first-run",
                                   "--disable-extensions",
                                   "--disable-dev-shm-usage",
                                   "--user-data-dir=" + profile,
                                   "--virtual-time-budget=3000"};
  argv.insert(argv.end(), args.begin(), args.end());
  std::fflush(nullptr);  // else the child's freopen writes our buffered output again
  pid_t pid = ::fork();
  if (pid == 0) {
    if (!std::freopen(out.c_str(), "w", stdout) || !std::freopen(err.c_str(), "w", stderr))
      ::_exit(126);
    std::vector<char*> c;
    for (auto& a : argv) c.push_back(a.data());
    c.push_back(nullptr);
    ::execv(c[0], c.data());
    ::_exit(127);
  }
  int status = 0;
  ::waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

TEST(ServeBrowserTest, LeaderboardAndHostileKernelRenderAndNoScriptRuns) {
  const std::string chromium = FindChromium();
  if (chromium.empty()) {
    GTEST_SKIP() << "chromium is not installed (scripts/setup.sh installs Debian's chromium); "
                    "the headless browser test did not run";
  }
  const std::string root =
      (fs::temp_directory_path() / fmt::format("ws_serve_browser_{}", ::getpid())).string();
  fs::remove_all(root);
  serve_test::Fixture fx = serve_test::Populate(root);
  ServeOptions o;
  o.workspace = fx.workspace;
  o.problems_dir = fx.problems_dir;
  o.port = 0;
  auto server = Server::Start(o);
  ASSERT_TRUE(server.ok()) << server.status().message();
  const std::string base = (*server)->url();

  struct Case {
    std::string name, path;
    std::vector<std::string> texts;
  };
  const std::vector<Case> cases = {
      {"leaderboard", "/", {"Leaderboard", "toy", "2.50x", "near_speed_of_light"}},
      {"hostile_kernel",
       fmt::format("/kernels/{}", fx.hostile_kernel),
       {"Kernel " + std::to_string(fx.hostile_kernel), "Timing distribution",
        "Diff against its parent",
        // The hostile script shows as text (serialized back as escaped text by the DOM dump).
        "&lt;/pre&gt;&lt;script&gt;alert(1);document.title='PWNED'"}},
  };
  for (const auto& c : cases) {
    const std::string dom = root + "/" + c.name + ".html", log = root + "/" + c.name + ".log";
    const int rc =
        RunChromium(chromium, {"--dump-dom", base + c.path}, root + "/profile", dom, log);
    ASSERT_EQ(rc, 0) << c.name << ": chromium failed; see " << log << "\n" << TextOf(log);
    const std::string text = TextOf(dom);
    for (const auto& t : c.texts) EXPECT_THAT(text, HasSubstr(t)) << c.name;
    // Had the hostile script run, the title would be PWNED and the root element marked.
    EXPECT_THAT(text, Not(HasSubstr("<title>PWNED"))) << c.name;
    EXPECT_THAT(text, Not(HasSubstr("data-pwned=\"1\""))) << c.name;
    EXPECT_THAT(text, HasSubstr("· warpsmith</title>")) << c.name;
    EXPECT_THAT(text, Not(HasSubstr("<script"))) << c.name;  // no script element at all

    const std::string png = root + "/" + c.name + ".png";
    const int src = RunChromium(
        chromium,
        {"--screenshot=" + png, "--window-size=1280,1600", "--hide-scrollbars", base + c.path},
        root + "/profile", root + "/" + c.name + ".shot.out", log);
    ASSERT_EQ(src, 0) << c.name << ": chromium --screenshot failed; see " << log;
    auto bytes = ReadFile(png);
    ASSERT_TRUE(bytes.ok()) << png;
    ASSERT_GT(bytes->size(), 1000u);
    EXPECT_EQ(bytes->substr(1, 3), "PNG");
    std::printf("screenshot of %s: %s\n", c.name.c_str(), png.c_str());
  }
  // The temp folder is kept so the screenshots can be looked at.
}

}  // namespace
}  // namespace ws
