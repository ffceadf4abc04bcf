#pragma once
// SPDX-License-Identifier: Apache-2.0

// Test fixture: a real `redis-server` on a free 127.0.0.1 port with a temporary directory, no
// persistence, and a password on the default user. The destructor always stops it (SIGTERM, then
// SIGKILL) and removes the directory; the child also gets SIGKILL if the test process dies
// (PR_SET_PDEATHSIG). `available()` is false when no redis-server binary is on PATH, and tests
// then skip with a message. Admin commands go through hiredis directly, not through the code
// under test.

#include <hiredis/hiredis.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace hc_test {

class redis_server {
 public:
  static constexpr const char* admin_password = "admin-pass-for-tests";

  /// The redis-server binary on PATH, or "" if absent.
  static std::string binary() {
    const char* path = std::getenv("PATH");
    std::string p = path ? path : "/usr/bin:/usr/sbin";
    std::size_t start = 0;
    while (start <= p.size()) {
      const std::size_t end = p.find(':', start);
      const std::string dir =
          p.substr(start, end == std::string::npos ? std::string::npos : end - start);
      const std::string cand = (dir.empty() ? "." : dir) + "/redis-server";
      if (::access(cand.c_str(), X_OK) == 0) return cand;
      if (end == std::string::npos) break;
      start = end + 1;
    }
    return "";
  }
  static bool available() { return !binary().empty(); }

  redis_server() : binary_(binary()) {
    if (binary_.empty()) throw std::runtime_error("redis-server not on PATH");
    char tmpl[] = "/tmp/hc-redis-XXXXXX";
    if (::mkdtemp(tmpl) == nullptr) throw std::runtime_error("mkdtemp failed");
    dir_ = tmpl;
    // The free port may be taken between probing and the server's bind (tests run in
    // parallel): try a few ports before giving up.
    for (int attempt = 0;; ++attempt) {
      port_ = free_port();
      try {
        start();
        return;
      } catch (const std::exception&) {
        if (attempt == 4) {
          std::error_code ec;
          std::filesystem::remove_all(dir_, ec);
          throw;
        }
      }
    }
  }
  redis_server(const redis_server&) = delete;
  redis_server& operator=(const redis_server&) = delete;
  ~redis_server() {
    stop();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  [[nodiscard]] int port() const noexcept { return port_; }
  [[nodiscard]] bool running() const noexcept { return pid_ > 0; }

  /// Starts (or restarts, on the same port) and waits until it answers PING.
  void start() {
    if (pid_ > 0) return;
    const std::string port = std::to_string(port_);
    std::vector<std::string> args{binary_,
                                  "--port",
                                  port,
                                  "--bind",
                                  "127.0.0.1",
                                  "--dir",
                                  dir_,
                                  "--save",
                                  "",
                                  "--appendonly",
                                  "no",
                                  "--daemonize",
                                  "no",
                                  "--logfile",
                                  dir_ + "/redis.log",
                                  "--requirepass",
                                  admin_password};
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t parent = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) throw std::runtime_error("fork failed");
    if (pid == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);
      ::execv(argv[0], argv.data());
      ::_exit(127);
    }
    pid_ = pid;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
      if (ping()) return;
      int status = 0;
      if (::waitpid(pid_, &status, WNOHANG) == pid_) {
        pid_ = -1;
        throw std::runtime_error("redis-server exited at start (see " + dir_ + "/redis.log)");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    stop();
    throw std::runtime_error("redis-server did not answer within 10 s");
  }

  /// Stops the server (SIGTERM, SIGKILL after 5 s) and reaps it. Data is lost (no persistence).
  void stop() noexcept {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGCONT);  // in case it was paused
    ::kill(pid_, SIGTERM);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    int status = 0;
    while (::waitpid(pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    pid_ = -1;
  }

  /// SIGSTOP / SIGCONT: the server keeps its socket but answers nothing (a hung server).
  void pause() const noexcept {
    if (pid_ > 0) ::kill(pid_, SIGSTOP);
  }
  void resume() const noexcept {
    if (pid_ > 0) ::kill(pid_, SIGCONT);
  }

  /// Runs one admin command (as the default user) and returns its reply rendered as text:
  /// strings and statuses verbatim, integers in decimal, nil as "(nil)", errors as "ERR:<msg>".
  std::string command(const std::vector<std::string>& args) const {
    redisContext* c = admin();
    if (c == nullptr) throw std::runtime_error("admin connection failed");
    std::vector<const char*> argv;
    std::vector<std::size_t> lens;
    for (const auto& a : args) {
      argv.push_back(a.data());
      lens.push_back(a.size());
    }
    auto* r = static_cast<redisReply*>(
        redisCommandArgv(c, static_cast<int>(argv.size()), argv.data(), lens.data()));
    std::string out;
    if (r == nullptr) {
      out = "IOERR";
    } else {
      switch (r->type) {
        case REDIS_REPLY_STRING:
        case REDIS_REPLY_STATUS:
          out.assign(r->str, r->len);
          break;
        case REDIS_REPLY_ERROR:
          out = "ERR:" + std::string(r->str, r->len);
          break;
        case REDIS_REPLY_INTEGER:
          out = std::to_string(r->integer);
          break;
        case REDIS_REPLY_NIL:
          out = "(nil)";
          break;
        default:
          out = "(array)";
          break;
      }
      freeReplyObject(r);
    }
    redisFree(c);
    return out;
  }

 private:
  static int free_port() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) throw std::runtime_error("socket failed");
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = 0;
    socklen_t len = sizeof addr;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
      ::close(fd);
      throw std::runtime_error("bind to 127.0.0.1:0 failed");
    }
    ::close(fd);
    return ntohs(addr.sin_port);
  }

  redisContext* admin() const {
    timeval tv{1, 0};
    redisContext* c = redisConnectWithTimeout("127.0.0.1", port_, tv);
    if (c == nullptr) return nullptr;
    if (c->err != 0) {
      redisFree(c);
      return nullptr;
    }
    redisSetTimeout(c, tv);
    auto* r = static_cast<redisReply*>(redisCommand(c, "AUTH %s", admin_password));
    const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
    if (r != nullptr) freeReplyObject(r);
    if (!ok) {
      redisFree(c);
      return nullptr;
    }
    return c;
  }

  bool ping() const {
    redisContext* c = admin();
    if (c == nullptr) return false;
    auto* r = static_cast<redisReply*>(redisCommand(c, "PING"));
    const bool ok = r != nullptr && r->type == REDIS_REPLY_STATUS;
    if (r != nullptr) freeReplyObject(r);
    redisFree(c);
    return ok;
  }

  std::string binary_;
  std::string dir_;
  int port_ = 0;
  pid_t pid_ = -1;
};

}  // namespace hc_test
