// `warpsmith serve`: the dashboard over the store (docs/dashboard.md). Server-rendered pages and
// a JSON API behind each; read-only unless a token is configured, which the two actions (stop a
// campaign, re-verify a kernel) need as `Authorization: Bearer TOKEN`.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "base/status.h"

namespace ws {

struct ServeOptions {
  std::string workspace = ".warpsmith";  // the store is <workspace>/warpsmith.db
  std::string problems_dir;              // for baseline sources; empty: none
  std::string bind = "127.0.0.1";        // anything but loopback needs a token
  uint16_t port = 8737;                  // 0: an ephemeral port
  std::string token;                     // empty: read-only
  int threads = 4;
  /// The warpsmith binary that a re-verify runs (`warpsmith eval`) when this machine has a GPU;
  /// empty: re-verify only records the request under <workspace>/requests/.
  std::string warpsmith_exe;
  bool log = false;  // a line on stderr per request
};

class Server {
 public:
  /// Opens (or creates) the store and starts listening.
  static Result<std::unique_ptr<Server>> Start(const ServeOptions& opts);
  ~Server();  // stops
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  uint16_t port() const;
  std::string url() const;  // http://ADDRESS:PORT
  /// Blocks until Stop() is called from another thread (or a signal handler's thread).
  void Wait();
  /// Stops serving. Idempotent.
  void Stop();

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace ws
