#include "common/temp_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <mutex>

namespace novaserve {

namespace {

// The temporary file to unlink when SIGINT, SIGTERM or SIGHUP ends the process before commit():
// one per process (a command writes one output); a second TempOutput at once is cleaned up by
// its destructor only. A fixed buffer because the handler may only make async-signal-safe calls
// (unlink, raise), not touch a std::string.
char g_pending_path[4096];
std::atomic<bool> g_pending{false};

void unlink_pending_and_reraise(int sig) {
  if (g_pending.load()) ::unlink(g_pending_path);
  ::raise(sig);  // SA_RESETHAND restored the default action: the process ends as it would have
}

// Installs the handler for the signals that are still at their default action (a program that
// handles them itself, like `serve`, keeps its handlers).
void install_signal_cleanup() {
  static std::once_flag once;
  std::call_once(once, [] {
    for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
      struct sigaction old {};
      if (::sigaction(sig, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) continue;
      struct sigaction sa {};
      sa.sa_handler = unlink_pending_and_reraise;
      sa.sa_flags = SA_RESETHAND;
      sigemptyset(&sa.sa_mask);
      ::sigaction(sig, &sa, nullptr);
    }
  });
}

}  // namespace

Result<std::unique_ptr<TempOutput>> TempOutput::create(const std::string& final_path) {
  auto t = std::unique_ptr<TempOutput>(new TempOutput());
  t->final_ = final_path;
  t->path_ = final_path + ".tmp-" + std::to_string(::getpid());
  // O_EXCL: never clobber a file we did not create; 0666 lets the umask decide, as for OUT.
  const int fd = ::open(t->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    // The temporary name is ours, not the user's: the error names it only when a file of that
    // name is what stands in the way.
    const int err = errno;
    return Err(ErrorCode::kIo, "cannot write " + final_path + ": " +
                                   (err == EEXIST ? t->path_ + ": " : std::string()) +
                                   std::strerror(err));
  }
  ::close(fd);
  t->created_ = true;
  install_signal_cleanup();
  if (t->path_.size() < sizeof(g_pending_path) && !g_pending.load()) {
    std::memcpy(g_pending_path, t->path_.c_str(), t->path_.size() + 1);
    g_pending.store(true);
    t->signal_slot_ = true;
  }
  return t;
}

TempOutput::~TempOutput() {
  if (signal_slot_) g_pending.store(false);
  if (created_ && !committed_) ::unlink(path_.c_str());
}

Status TempOutput::commit() {
  if (std::rename(path_.c_str(), final_.c_str()) != 0) {
    return Err(ErrorCode::kIo,
               "cannot rename " + path_ + " to " + final_ + ": " + std::strerror(errno));
  }
  committed_ = true;
  if (signal_slot_) {
    g_pending.store(false);
    signal_slot_ = false;
  }
  return {};
}

}  // namespace novaserve
