#include "orchestrator/serve.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <map>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "base/files.h"
#include "evaluator/evaluator.h"
#include "orchestrator/html.h"
#include "orchestrator/store.h"
#include "orchestrator/views.h"

namespace ws {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;
using json = nlohmann::json;
namespace fs = std::filesystem;

namespace {

constexpr const char* kCsp =
    "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'none'; "
    "frame-ancestors 'none'; base-uri 'none'";

constexpr const char* kStyle = R"css(
body { font: 14px/1.4 system-ui, sans-serif; margin: 0; color: #222; }
nav { background: #223; padding: 8px 16px; }
nav a { color: #fff; }
main { padding: 8px 16px; }
table { border-collapse: collapse; margin: 8px 0; }
th, td { border: 1px solid #ccc; padding: 3px 6px; text-align: left; vertical-align: top; }
th { background: #eef; }
td.n { text-align: right; font-variant-numeric: tabular-nums; }
tr.v-bad td { color: #844; }
pre { background: #f6f6f6; padding: 8px; overflow: auto; max-height: 40em; }
pre.diff .add { color: #060; background: #efe; }
pre.diff .del { color: #900; background: #fee; }
pre.diff .hunk { color: #55a; }
pre.diff .head { font-weight: bold; }
.flag { background: #fd8; border-radius: 3px; padding: 0 4px; font-size: 12px; }
.muted { color: #777; }
dl { display: grid; grid-template-columns: max-content auto; gap: 2px 12px; }
dt { font-weight: bold; }
dd { margin: 0; }
)css";

struct Reply {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
  std::vector<std::pair<std::string, std::string>> headers;
};

Reply JsonReply(int status, const json& j) {
  return {status, "application/json", j.dump(2) + "\n", {}};
}

Reply ErrorReply(int status, const std::string& message, bool as_json) {
  if (as_json)
    return JsonReply(status, {{"error", message}});
  return {status, "text/html; charset=utf-8", ErrorPage(status, message), {}};
}

// "%2F" and friends; nullopt for a malformed escape or a decoded NUL or slash.
std::optional<std::string> PercentDecode(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    if (i + 2 >= s.size() || !std::isxdigit(static_cast<unsigned char>(s[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      return std::nullopt;
    }
    const char c = static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
    if (c == '\0' || c == '/')
      return std::nullopt;
    out += c;
    i += 2;
  }
  return out;
}

std::optional<int64_t> ParseId(const std::string& s) {
  if (s.empty() || s.size() > 18)
    return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

// Equal-time comparison, so the token cannot be guessed byte by byte from response times.
bool SameSecret(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() != b.size();
  for (size_t i = 0; i < a.size(); ++i) diff |= a[i] ^ b[i % std::max<size_t>(b.size(), 1)];
  return diff == 0 && !b.empty();
}

std::string HostName(const std::string& host) {
  if (!host.empty() && host[0] == '[') {
    size_t close = host.find(']');
    return close == std::string::npos ? host : host.substr(0, close + 1);
  }
  size_t colon = host.find(':');
  return colon == std::string::npos ? host : host.substr(0, colon);
}

}  // namespace

struct Server::Impl {
  ServeOptions opts;
  net::io_context ioc;
  tcp::acceptor acceptor{ioc};
  std::vector<std::thread> threads;
  uint16_t port = 0;
  bool loopback = true;
  std::mutex mu;
  std::condition_variable cv;
  bool stopped = false;
  std::atomic<int64_t> request_seq{0};

  net::awaitable<void> Accept();
  net::awaitable<void> Session(tcp::socket sock);
  Reply Handle(const http::request<http::string_body>& req);
  Reply Get(const std::vector<std::string>& parts, const std::string& query, bool api);
  Reply Post(const std::vector<std::string>& parts);
  Reply Reverify(Store& store, int64_t kernel_id);
  Result<std::unique_ptr<Store>> OpenStore() {
    return Store::Open(opts.workspace + "/warpsmith.db");
  }
};

net::awaitable<void> Server::Impl::Accept() {
  for (;;) {
    boost::system::error_code ec;
    tcp::socket sock = co_await acceptor.async_accept(net::redirect_error(net::use_awaitable, ec));
    if (ec) {
      if (ec == net::error::operation_aborted || !acceptor.is_open())
        co_return;
      continue;
    }
    net::co_spawn(acceptor.get_executor(), Session(std::move(sock)), net::detached);
  }
}

net::awaitable<void> Server::Impl::Session(tcp::socket sock) {
  beast::tcp_stream stream(std::move(sock));
  beast::flat_buffer buf;
  for (;;) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 << 10);
    parser.body_limit(64 << 10);
    stream.expires_after(std::chrono::seconds(30));  // a slow or silent client lets go
    boost::system::error_code ec;
    co_await http::async_read(stream, buf, parser, net::redirect_error(net::use_awaitable, ec));
    if (ec == http::error::end_of_stream || ec == beast::error::timeout ||
        ec == net::error::operation_aborted) {
      break;
    }
    Reply reply;
    bool keep_alive = false;
    if (ec) {
      // A request the parser refuses: say so and close.
      reply = ErrorReply(ec == http::error::body_limit ? 413 : 400,
                         "malformed request: " + ec.message(), false);
    } else {
      const auto& req = parser.get();
      keep_alive = req.keep_alive();
      try {
        reply = Handle(req);
      } catch (const std::exception& e) {
        reply = ErrorReply(500, std::string("internal error: ") + e.what(), false);
      }
      if (opts.log) {
        std::fprintf(stderr, "serve: %s %s -> %d\n", std::string(req.method_string()).c_str(),
                     std::string(req.target()).c_str(), reply.status);
      }
    }
    http::response<http::string_body> res{static_cast<http::status>(reply.status), 11};
    res.set(http::field::server, "warpsmith");
    res.set(http::field::content_type, reply.content_type);
    res.set("Content-Security-Policy", kCsp);
    res.set("X-Content-Type-Options", "nosniff");
    res.set("X-Frame-Options", "DENY");
    res.set("Referrer-Policy", "no-referrer");
    res.set(http::field::cache_control, "no-store");
    for (const auto& [k, v] : reply.headers) res.set(k, v);
    const bool head = !ec && parser.get().method() == http::verb::head;
    res.body() = head ? "" : std::move(reply.body);
    res.prepare_payload();
    if (head)
      res.content_length(reply.body.size());
    res.keep_alive(keep_alive);
    stream.expires_after(std::chrono::seconds(30));
    co_await http::async_write(stream, res, net::redirect_error(net::use_awaitable, ec));
    if (ec || !keep_alive)
      break;
  }
  boost::system::error_code ignored;
  stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
  stream.socket().close(ignored);
}

Reply Server::Impl::Handle(const http::request<http::string_body>& req) {
  const std::string target(req.target());
  const bool api = target.rfind("/api/", 0) == 0 || target == "/api";
  if (target.empty() || target[0] != '/')
    return ErrorReply(400, "bad request target", api);
  // A page bound to loopback answers only to loopback names: a DNS-rebinding site that points
  // its own name at 127.0.0.1 gets nothing.
  const std::string host(req[http::field::host]);
  if (host.empty())
    return ErrorReply(400, "no Host header", api);
  if (loopback) {
    const std::string name = HostName(host);
    if (name != "127.0.0.1" && name != "localhost" && name != "[::1]" && name != opts.bind) {
      return ErrorReply(421, "this server answers to loopback names only", api);
    }
  }
  std::string path = target, query;
  if (size_t q = target.find('?'); q != std::string::npos) {
    path = target.substr(0, q);
    query = target.substr(q + 1);
  }
  std::vector<std::string> parts;
  size_t start = 1;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    if (slash == std::string::npos)
      slash = path.size();
    if (slash > start) {
      auto seg = PercentDecode(std::string_view(path).substr(start, slash - start));
      if (!seg)
        return ErrorReply(400, "malformed path", api);
      parts.push_back(*seg);
    }
    start = slash + 1;
  }
  if (!parts.empty() && parts[0] == "api")
    parts.erase(parts.begin());
  if (req.method() == http::verb::get || req.method() == http::verb::head) {
    return Get(parts, query, api);
  }
  if (req.method() != http::verb::post) {
    Reply r = ErrorReply(405, "method not allowed", api);
    r.headers.push_back({"Allow", "GET, HEAD, POST"});
    return r;
  }
  if (!api)
    return ErrorReply(405, "actions live under /api/", false);
  // Cross-site requests: a browser names the page's origin; only this server's own is taken.
  // (The token must come in the Authorization header, which no cross-site form or image can
  // set, and no cookie is ever honoured.)
  const std::string origin(req[http::field::origin]);
  if (!origin.empty() && origin != "http://" + host) {
    return ErrorReply(403, "cross-origin request refused", true);
  }
  const std::string site(req["Sec-Fetch-Site"]);
  if (!site.empty() && site != "same-origin" && site != "none") {
    return ErrorReply(403, "cross-site request refused", true);
  }
  if (opts.token.empty()) {
    return ErrorReply(403, "read-only: start `warpsmith serve` with --token to allow actions",
                      true);
  }
  const std::string auth(req[http::field::authorization]);
  const std::string bearer = "Bearer ";
  if (auth.rfind(bearer, 0) != 0 || !SameSecret(auth.substr(bearer.size()), opts.token)) {
    Reply r = ErrorReply(401, "an action needs Authorization: Bearer TOKEN", true);
    r.headers.push_back({"WWW-Authenticate", "Bearer"});
    return r;
  }
  return Post(parts);
}

Reply Server::Impl::Get(const std::vector<std::string>& parts, const std::string& query, bool api) {
  if (parts.size() == 2 && parts[0] == "static" && parts[1] == "style.css" && !api) {
    return {200, "text/css; charset=utf-8", kStyle, {}};
  }
  auto store = OpenStore();
  if (!store.ok())
    return ErrorReply(500, store.status().message(), api);
  Store& s = **store;
  PageOptions page;
  page.can_act = !opts.token.empty();
  auto fail = [&](const Status& st) { return ErrorReply(500, st.message(), api); };

  if (parts.empty() || (parts.size() == 1 && parts[0] == "leaderboard")) {
    if (parts.empty() && api)
      return ErrorReply(404, "no such route", api);
    std::string problem;
    if (query.rfind("problem=", 0) == 0) {
      auto p = PercentDecode(query.substr(8));
      if (!p)
        return ErrorReply(400, "malformed query", api);
      problem = *p;
    }
    auto rows = LeaderboardJson(s, problem, opts.problems_dir);
    if (!rows.ok())
      return fail(rows.status());
    if (api)
      return JsonReply(200, *rows);
    auto campaigns = CampaignsJson(s);
    if (!campaigns.ok())
      return fail(campaigns.status());
    return {200, "text/html; charset=utf-8", LeaderboardPage(*rows, *campaigns, page), {}};
  }
  if (parts.size() == 2 && parts[0] == "problems") {
    auto p = ProblemJson(s, parts[1], opts.problems_dir);
    if (!p.ok())
      return fail(p.status());
    if (!*p)
      return ErrorReply(404, "no such problem", api);
    if (api)
      return JsonReply(200, **p);
    return {200, "text/html; charset=utf-8", ProblemPage(**p, page), {}};
  }
  if (parts.size() == 2 && parts[0] == "kernels") {
    auto id = ParseId(parts[1]);
    if (!id)
      return ErrorReply(404, "no such kernel", api);
    auto k = KernelJson(s, *id, opts.problems_dir);
    if (!k.ok())
      return fail(k.status());
    if (!*k)
      return ErrorReply(404, "no such kernel", api);
    if (api)
      return JsonReply(200, **k);
    return {200, "text/html; charset=utf-8", KernelPage(**k, page), {}};
  }
  if (parts.size() == 1 && parts[0] == "campaigns") {
    auto all = CampaignsJson(s);
    if (!all.ok())
      return fail(all.status());
    if (api)
      return JsonReply(200, *all);
    return {200, "text/html; charset=utf-8", LeaderboardPage(json::array(), *all, page), {}};
  }
  if (parts.size() == 2 && parts[0] == "campaigns") {
    auto id = ParseId(parts[1]);
    if (!id)
      return ErrorReply(404, "no such campaign", api);
    auto c = CampaignJson(s, *id);
    if (!c.ok())
      return fail(c.status());
    if (!*c)
      return ErrorReply(404, "no such campaign", api);
    if (api)
      return JsonReply(200, **c);
    // A running campaign's page follows it: a meta refresh, so no script is needed.
    if ((**c).value("status", "") == "running")
      page.refresh_s = 5;
    return {200, "text/html; charset=utf-8", CampaignPage(**c, page), {}};
  }
  return ErrorReply(404, "no such page", api);
}

Reply Server::Impl::Post(const std::vector<std::string>& parts) {
  if (parts.size() != 3)
    return ErrorReply(404, "no such action", true);
  auto id = ParseId(parts[1]);
  if (!id)
    return ErrorReply(404, "no such object", true);
  auto store = OpenStore();
  if (!store.ok())
    return ErrorReply(500, store.status().message(), true);
  if (parts[0] == "campaigns" && parts[2] == "stop") {
    auto c = (*store)->GetCampaign(*id);
    if (!c.ok())
      return ErrorReply(404, "no such campaign", true);
    if (Status st = (*store)->RequestCampaignStop(*id); !st.ok())
      return ErrorReply(500, st.message(), true);
    return JsonReply(
        202, {{"campaign_id", *id},
              {"stop_requested", true},
              {"status", c->status},
              {"note", c->status == "running" ? "it stops after the current step"
                                              : "it is not running; a resume would stop at once"}});
  }
  if (parts[0] == "kernels" && parts[2] == "reverify")
    return Reverify(**store, *id);
  return ErrorReply(404, "no such action", true);
}

// Records the request under <workspace>/requests/ (the kernel's source, and the problem,
// params, knobs and arch of its newest evaluation) and, when this machine has a GPU and the
// server knows its warpsmith binary, runs `warpsmith eval` on it in the background; the new
// evaluation lands in the store like any other.
Reply Server::Impl::Reverify(Store& store, int64_t kernel_id) {
  auto k = store.GetKernel(kernel_id);
  if (!k.ok())
    return ErrorReply(404, "no such kernel", true);
  auto evals = store.Evaluations(k->problem, 0);
  if (!evals.ok())
    return ErrorReply(500, evals.status().message(), true);
  // Its newest evaluation that ran on a GPU, else its newest at all.
  const EvaluationRecord* last = nullptr;
  for (const auto& e : *evals) {  // newest first
    if (e.kernel_id != kernel_id)
      continue;
    if (!last || (last->gpu.empty() && !e.gpu.empty()))
      last = &e;
    if (!last->gpu.empty())
      break;
  }
  const std::string arch = last && !last->arch.empty() ? last->arch : "sm_90a";
  json params = last ? json::parse(last->params_json, nullptr, false) : json::object();
  json knobs = last ? json::parse(last->knobs_json, nullptr, false) : json::object();
  if (!params.is_object())
    params = json::object();
  if (!knobs.is_object())
    knobs = json::object();
  const auto now = std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::system_clock::now().time_since_epoch())
                       .count();
  const std::string dir = opts.workspace + "/requests";
  const std::string stem =
      fmt::format("{}/reverify-k{}-{}-{}", dir, kernel_id, now, request_seq.fetch_add(1));
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec)
    return ErrorReply(500, "cannot create " + dir + ": " + ec.message(), true);
  if (Status st = WriteFileAtomic(stem + ".cu", k->source); !st.ok())
    return ErrorReply(500, st.message(), true);
  // Re-verified against the library headers it was recorded with, so it stays the same kernel.
  if (Status st = WriteLibraryHeaders(k->library_headers, stem + ".library"); !st.ok())
    return ErrorReply(500, st.message(), true);
  json request = {{"action", "reverify"},   {"kernel_id", kernel_id}, {"problem", k->problem},
                  {"params", params},       {"knobs", knobs},         {"arch", arch},
                  {"source", stem + ".cu"}, {"requested_at_ms", now}};
  std::vector<std::string> argv;
  std::string why;
  if (opts.warpsmith_exe.empty()) {
    why = "this server runs no evaluations (no warpsmith binary given)";
  } else {
    EvaluatorOptions eo;
    eo.workspace = opts.workspace;
    auto device = ProbeDevice(eo, &why);
    if (!device.ok()) {
      why = device.status().message();
    } else if (*device) {
      argv = {opts.warpsmith_exe, "--workspace", opts.workspace};
      if (!opts.problems_dir.empty())
        argv.insert(argv.end(), {"--problems-dir", opts.problems_dir});
      argv.insert(argv.end(), {"eval", k->problem, stem + ".cu", "--arch", arch, "--json"});
      if (!k->library_headers.empty())
        argv.insert(argv.end(), {"--kernel-library", stem + ".library"});
      for (const auto& [name, v] : params.items()) {
        argv.insert(argv.end(),
                    {"--set", name + "=" + (v.is_string() ? v.get<std::string>() : v.dump())});
      }
      for (const auto& [name, v] : knobs.items()) {
        argv.insert(argv.end(),
                    {"--knob", name + "=" + (v.is_string() ? v.get<std::string>() : v.dump())});
      }
    }
  }
  request["runs"] = !argv.empty();
  request["why_not_run"] = argv.empty() ? json(why) : json(nullptr);
  request["output"] = argv.empty() ? json(nullptr) : json(stem + ".out.json");
  if (Status st = WriteFileAtomic(stem + ".json", request.dump(2) + "\n"); !st.ok())
    return ErrorReply(500, st.message(), true);
  if (!argv.empty()) {
    const std::string out = stem + ".out.json";
    // Everything the child needs is built before fork: a threaded process's child may only make
    // async-signal-safe calls.
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(a.data());
    cargv.push_back(nullptr);
    pid_t pid = ::fork();
    if (pid == 0) {
      int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      if (fd >= 0) {
        ::dup2(fd, 1);
        ::dup2(fd, 2);
      }
      ::execv(cargv[0], cargv.data());
      ::_exit(127);
    }
    if (pid < 0)
      return ErrorReply(500, "cannot start warpsmith eval", true);
    std::thread([pid] { ::waitpid(pid, nullptr, 0); }).detach();  // reaps it
  }
  request["request"] = stem + ".json";
  return JsonReply(202, request);
}

Result<std::unique_ptr<Server>> Server::Start(const ServeOptions& opts) {
  auto impl = std::make_unique<Impl>();
  impl->opts = opts;
  boost::system::error_code ec;
  const net::ip::address addr = net::ip::make_address(opts.bind, ec);
  if (ec)
    return Status::Error("--bind {}: not an IP address", opts.bind);
  impl->loopback = addr.is_loopback();
  if (!impl->loopback && opts.token.empty()) {
    return Status::Error("binding {} (not loopback) needs a token (--token or WARPSMITH_TOKEN)",
                         opts.bind);
  }
  {
    std::error_code fec;
    fs::create_directories(opts.workspace, fec);
    if (fec)
      return Status::Error("cannot create the workspace {}: {}", opts.workspace, fec.message());
  }
  WS_ASSIGN_OR_RETURN(auto store, impl->OpenStore());  // creates and migrates it once
  store.reset();
  try {
    tcp::endpoint ep(addr, opts.port);
    impl->acceptor.open(ep.protocol());
    impl->acceptor.set_option(net::socket_base::reuse_address(true));
    impl->acceptor.bind(ep);
    impl->acceptor.listen();
    impl->port = impl->acceptor.local_endpoint().port();
  } catch (const boost::system::system_error& e) {
    return Status::Error("cannot listen on {}:{}: {}", opts.bind, opts.port, e.what());
  }
  Impl* s = impl.get();
  net::co_spawn(s->ioc, s->Accept(), net::detached);
  for (int i = 0; i < std::max(1, opts.threads); ++i)
    s->threads.emplace_back([s] { s->ioc.run(); });
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Server::~Server() {
  Stop();
}

uint16_t Server::port() const {
  return impl_->port;
}

std::string Server::url() const {
  const bool v6 = impl_->opts.bind.find(':') != std::string::npos;
  return fmt::format("http://{}{}{}:{}", v6 ? "[" : "", impl_->opts.bind, v6 ? "]" : "",
                     impl_->port);
}

void Server::Wait() {
  std::unique_lock<std::mutex> lock(impl_->mu);
  impl_->cv.wait(lock, [&] { return impl_->stopped; });
}

void Server::Stop() {
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    if (impl_->stopped)
      return;
    impl_->stopped = true;
  }
  impl_->cv.notify_all();
  impl_->ioc.stop();
  for (auto& t : impl_->threads) {
    if (t.joinable() && t.get_id() != std::this_thread::get_id())
      t.join();
  }
  boost::system::error_code ignored;
  impl_->acceptor.close(ignored);
}

}  // namespace ws
