// What the dashboard tests share: a store populated with a baseline, an improved kernel, a
// hostile kernel (its source closes the page's <pre> and opens a script) and a campaign, and a
// small blocking HTTP client.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>

#include "base/files.h"
#include "orchestrator/store.h"

namespace ws::serve_test {

inline const std::string kBaselineSource =
    "/* warpsmith:plan {\"kernel\": \"k\", \"grid\": [\"M\"], \"block\": [128]} */\n"
    "__global__ void k(const float* x, float* y) {\n"
    "  y[threadIdx.x] = x[threadIdx.x];\n"
    "}\n";
inline const std::string kFastSource =
    "/* warpsmith:plan {\"kernel\": \"k\", \"grid\": [\"M\"], \"block\": [256]} */\n"
    "__global__ void k(const float* x, float* y) {\n"
    "  // four per thread\n"
    "  y[threadIdx.x] = x[threadIdx.x];\n"
    "}\n";
// Would retitle the page and mark the document if it ever ran.
inline const std::string kHostileScript =
    "</pre><script>alert(1);document.title='PWNED';"
    "document.documentElement.setAttribute('data-pwned','1')</script>";
inline const std::string kHostileSource =
    "/* warpsmith:plan {\"kernel\": \"k\", \"grid\": [\"M\"], \"block\": [64]} */\n"
    "// " +
    kHostileScript +
    "\n"
    "__global__ void k(const float* x, float* y) { y[0] = x[0]; }\n";
inline const std::string kHostileReason = "<img src=x onerror=alert(2)>";

inline std::unique_ptr<Store> OpenStore(const std::string& path) {
  auto r = Store::Open(path);
  if (!r.ok()) {
    std::fprintf(stderr, "%s\n", r.status().message().c_str());
    std::abort();
  }
  return std::move(*r);
}

struct Fixture {
  std::string root, workspace, problems_dir;
  int64_t baseline_kernel = 0, fast_kernel = 0, hostile_kernel = 0, campaign = 0;
};

// Builds <root>/ws/warpsmith.db and <root>/problems/toy/{spec.json,baseline.cu}.
inline Fixture Populate(const std::string& root) {
  namespace fs = std::filesystem;
  Fixture f;
  f.root = root;
  f.workspace = root + "/ws";
  f.problems_dir = root + "/problems";
  fs::create_directories(f.workspace);
  fs::create_directories(f.problems_dir + "/toy");
  (void)WriteFileAtomic(f.problems_dir + "/toy/spec.json", "{}\n");
  (void)WriteFileAtomic(f.problems_dir + "/toy/baseline.cu", kBaselineSource);
  auto store = OpenStore(f.workspace + "/warpsmith.db");
  f.campaign =
      *store->CreateCampaign(R"({"problems":"toy","budget":{"evaluations":100},"seed":"hand"})", 1);
  (void)store->PutCampaignProblem({f.campaign, "toy", "{}", std::nullopt, "active"});

  // Kernel records by field: the struct grows with the schema.
  const auto kernel = [](const std::string& hash, const std::string& source,
                         const std::string& origin, std::optional<int64_t> parent) {
    KernelRecord k;
    k.problem = "toy";
    k.hash = hash;
    k.source = source;
    k.origin = origin;
    k.parent_id = parent;
    return k;
  };
  KernelRecord base = kernel("h-base", kBaselineSource, "file:problems/toy/baseline.cu", {});
  f.baseline_kernel = *store->PutKernel(base);
  KernelRecord fast = kernel("h-fast", kFastSource, "tuner", f.baseline_kernel);
  fast.campaign_id = f.campaign;
  fast.agent = "tuner";
  f.fast_kernel = *store->PutKernel(fast);
  KernelRecord hostile = kernel("h-hostile", kHostileSource, "agent:<b>model</b>", f.fast_kernel);
  hostile.campaign_id = f.campaign;
  hostile.agent = "openai:<script>x</script>";
  hostile.library_headers = {{"ws/<i>evil</i>.cuh", "</pre><script>alert(2)</script>\n"}};
  f.hostile_kernel = *store->PutKernel(hostile);

  auto eval = [&](int64_t kernel, double time_us, double sol, double stdev, bool in_campaign,
                  const std::string& agent) {
    EvaluationRecord e;
    e.kernel_id = kernel;
    e.problem = "toy";
    e.params_json = "{}";
    e.knobs_json = R"({"ROWS":4})";
    e.gpu = "NVIDIA H200";
    e.arch = "sm_90a";
    e.verdict = "ok";
    e.message = "";
    e.resources_json = R"({"registers":32})";
    e.time_us = time_us;
    e.sol_fraction = sol;
    e.timings.push_back({R"({"M":1024})", "bench", time_us, time_us * 0.98, time_us * 1.05, stdev,
                         100, time_us * sol});
    if (in_campaign)
      e.campaign_id = f.campaign;
    e.agent = agent;
    e.gpu_seconds = 2.5;
    return *store->AddEvaluation(e);
  };
  eval(f.baseline_kernel, 20.0, 0.2, 0.1, false, "");
  eval(f.fast_kernel, 10.0, 0.4, 0.1, true, "tuner");
  const int64_t hostile_eval = eval(f.hostile_kernel, 8.0, 0.95, 2.0, true, hostile.agent);
  (void)store->FlagEvaluation(hostile_eval, kHostileReason);
  // A rejected candidate with a hostile message.
  EvaluationRecord bad;
  bad.kernel_id = f.hostile_kernel;
  bad.problem = "toy";
  bad.verdict = "wrong_answer";
  bad.message = "mismatch " + kHostileScript;
  bad.campaign_id = f.campaign;
  bad.agent = hostile.agent;
  (void)*store->AddEvaluation(bad);
  return f;
}

struct Response {
  int status = 0;
  std::map<std::string, std::string> headers;  // lower-case names
  std::string body;
};

inline Response Fetch(uint16_t port, const std::string& method, const std::string& target,
                      const std::map<std::string, std::string>& headers = {},
                      const std::string& body = "") {
  namespace net = boost::asio;
  namespace http = boost::beast::http;
  net::io_context ioc;
  net::ip::tcp::socket sock(ioc);
  sock.connect({net::ip::make_address("127.0.0.1"), port});
  http::request<http::string_body> req{http::string_to_verb(method), target, 11};
  req.set(http::field::host, fmt::format("127.0.0.1:{}", port));
  for (const auto& [k, v] : headers) req.set(k, v);
  req.body() = body;
  req.prepare_payload();
  http::write(sock, req);
  boost::beast::flat_buffer buf;
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 << 20);
  if (method == "HEAD")
    parser.skip(true);
  http::read(sock, buf, parser);
  Response r;
  r.status = parser.get().result_int();
  for (const auto& h : parser.get()) {
    std::string name(h.name_string());
    for (auto& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    r.headers[name] = std::string(h.value());
  }
  r.body = parser.get().body();
  return r;
}

// Sends raw bytes and returns whatever comes back before the server closes (or 5 s pass).
inline std::string Raw(uint16_t port, const std::string& bytes) {
  namespace net = boost::asio;
  net::io_context ioc;
  net::ip::tcp::socket sock(ioc);
  sock.connect({net::ip::make_address("127.0.0.1"), port});
  // The server may answer and hang up before it has read everything (a 400 on the first bad
  // line): a failed write or shutdown then is expected, and the answer is still there to read.
  boost::system::error_code ignored;
  net::write(sock, net::buffer(bytes), ignored);
  sock.shutdown(net::ip::tcp::socket::shutdown_send, ignored);
  struct timeval tv {
    5, 0
  };
  ::setsockopt(sock.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  std::string out;
  char chunk[4096];
  for (;;) {
    ssize_t n = ::recv(sock.native_handle(), chunk, sizeof chunk, 0);
    if (n <= 0)
      break;
    out.append(chunk, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace ws::serve_test
