// ws_sandbox_probe: tries, one by one, what a sandboxed child must not be able to do, and prints
// one line per attempt: "<op> ok" or "<op> <ERRNO-NAME>". `warpsmith doctor` and the sandbox tests
// run it inside the layers and read the lines. Always exits 0 once the ops are done.
//
//   ws_sandbox_probe socket-inet socket-unix connect:PORT ptrace unshare-user write:PATH
//                    read:PATH exists:PATH env uid
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

extern char** environ;

namespace {

void Report(const std::string& op, int rc) {
  const char* name = rc < 0 ? strerrorname_np(errno) : nullptr;
  std::printf("%s %s\n", op.c_str(), rc >= 0 ? "ok" : (name != nullptr ? name : "error"));
}

void Run(const std::string& op) {
  auto arg = [&](const char* prefix) { return op.substr(std::strlen(prefix)); };
  if (op == "socket-inet") {
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    Report(op, fd);
    if (fd >= 0)
      ::close(fd);
  } else if (op == "socket-unix") {
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    Report(op, fd);
    if (fd >= 0)
      ::close(fd);
  } else if (op.rfind("connect:", 0) == 0) {
    // A TCP connection to 127.0.0.1:PORT.
    int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) {
      Report(op, fd);
      return;
    }
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_port = htons(static_cast<uint16_t>(std::atoi(arg("connect:").c_str())));
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    Report(op, ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)));
    ::close(fd);
  } else if (op == "ptrace") {
    // PTRACE_TRACEME asks nothing of any other process, so only a filter refuses it.
    Report(op, static_cast<int>(::ptrace(PTRACE_TRACEME, 0, nullptr, nullptr)));
  } else if (op == "unshare-user") {
    Report(op, ::unshare(CLONE_NEWUSER));
  } else if (op.rfind("write:", 0) == 0) {
    int fd = ::open(arg("write:").c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    Report(op, fd);
    if (fd >= 0) {
      ::close(fd);
      ::unlink(arg("write:").c_str());
    }
  } else if (op.rfind("read:", 0) == 0) {
    int fd = ::open(arg("read:").c_str(), O_RDONLY | O_CLOEXEC);
    Report(op, fd);
    if (fd >= 0)
      ::close(fd);
  } else if (op.rfind("exists:", 0) == 0) {
    struct stat st;
    Report(op, ::stat(arg("exists:").c_str(), &st));
  } else if (op == "env") {
    for (char** e = environ; e != nullptr && *e != nullptr; ++e) std::printf("env %s\n", *e);
  } else if (op == "uid") {
    std::printf("uid %d\n", static_cast<int>(::getuid()));
  } else {
    std::printf("%s unknown-op\n", op.c_str());
  }
}

}  // namespace

int main(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    Run(argv[i]);
    std::fflush(stdout);
  }
  return 0;
}
