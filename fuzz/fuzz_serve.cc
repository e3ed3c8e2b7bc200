// libFuzzer target: the dashboard's HTTP front (orchestrator/serve.cc) as a client on the network
// reaches it: raw bytes on a TCP connection to a running server over a populated store (the
// dashboard tests' fixture: kernels, a hostile one among them, and a campaign), with a token so
// the actions' paths run too. Every request must get a reply or a closed connection; a crash or a
// sanitizer report in any server thread is a bug.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

#include "orchestrator/serve.h"
#include "tests/serve_test_util.h"

namespace {

std::unique_ptr<ws::Server> g_server;  // serves until the process ends
uint16_t g_port = 0;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  char tmpl[] = "/tmp/ws_fuzz_serve_XXXXXX";
  if (mkdtemp(tmpl) == nullptr) std::abort();
  const ws::serve_test::Fixture f = ws::serve_test::Populate(tmpl);
  ws::ServeOptions o;
  o.workspace = f.workspace;
  o.problems_dir = f.problems_dir;
  o.port = 0;
  o.token = "fuzz-token";
  o.threads = 2;
  auto s = ws::Server::Start(o);
  if (!s.ok()) {
    std::fprintf(stderr, "%s\n", s.status().message().c_str());
    std::abort();
  }
  g_server = std::move(*s);
  g_port = g_server->port();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return 0;
  timeval tv{2, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(g_port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0) {
    size_t sent = 0;
    while (sent < size) {
      const ssize_t n = send(fd, data + sent, size - sent, MSG_NOSIGNAL);
      if (n <= 0) break;
      sent += static_cast<size_t>(n);
    }
    shutdown(fd, SHUT_WR);
    char buf[65536];
    while (recv(fd, buf, sizeof buf, 0) > 0) {
    }
  }
  close(fd);
  return 0;
}
