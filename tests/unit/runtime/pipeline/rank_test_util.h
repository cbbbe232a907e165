// Helpers of the multi-process pipeline tests (rank_link_test.cpp, rank_faults_test.cpp): a
// listener on a free loopback port, hellos, and raw loopback connections that play stray peers.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "runtime/pipeline/rank_listener.h"

namespace novaserve {

inline const HelloCheck kNoCheck = [](const nlohmann::json&) { return std::string(); };

inline nlohmann::json hello(int rank, int world) {
  return {{"op", "hello"}, {"rank", rank}, {"world_size", world}};
}

/// A listener on a free port of 127.0.0.1; null after a test failure.
inline std::unique_ptr<RankListener> listen_local() {
  auto listener = RankListener::listen({"127.0.0.1", 0});
  EXPECT_TRUE(listener.ok()) << listener.error().message;
  return listener.ok() ? std::move(listener.value()) : nullptr;
}

/// A loopback TCP connection to `port` (its descriptor, -1 when it failed), left open.
inline int connect_raw(uint16_t port) {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

/// A loopback TCP connection that sends `bytes` and closes.
inline void send_raw(uint16_t port, const std::string& bytes) {
  const int fd = connect_raw(port);
  if (fd >= 0) {
    EXPECT_EQ(::write(fd, bytes.data(), bytes.size()), static_cast<ssize_t>(bytes.size()));
    ::close(fd);
  }
}

/// A port of 127.0.0.1 that was free a moment ago (bound, then released).
inline uint16_t free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len), 0);
  ::close(fd);
  return ntohs(a.sin_port);
}

}  // namespace novaserve
