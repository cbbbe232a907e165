#include "common/temp_output.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace novaserve {

Result<std::unique_ptr<TempOutput>> TempOutput::create(const std::string& final_path) {
  auto t = std::unique_ptr<TempOutput>(new TempOutput());
  t->final_ = final_path;
  t->path_ = final_path + ".tmp-" + std::to_string(::getpid());
  // O_EXCL: never clobber a file we did not create; 0666 lets the umask decide, as for OUT.
  const int fd = ::open(t->path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    return Err(ErrorCode::kIo, "cannot write " + final_path + ": cannot create " + t->path_ + ": " +
                                   std::strerror(errno));
  }
  ::close(fd);
  t->created_ = true;
  return t;
}

TempOutput::~TempOutput() {
  if (created_ && !committed_) ::unlink(path_.c_str());
}

Status TempOutput::commit() {
  if (std::rename(path_.c_str(), final_.c_str()) != 0) {
    return Err(ErrorCode::kIo,
               "cannot rename " + path_ + " to " + final_ + ": " + std::strerror(errno));
  }
  committed_ = true;
  return {};
}

}  // namespace novaserve
