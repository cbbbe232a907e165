// Crash-safe replacement of an output file: write to a private temporary file next to it, then
// rename it over the destination only when the output is complete.
#pragma once

#include <memory>
#include <string>

#include "common/result.h"

namespace novaserve {

/// A temporary file `FINAL.tmp-PID` that becomes `FINAL` on commit().
///
/// Guarantees: create() makes the temporary file itself (O_EXCL), so it never clobbers a file it
/// did not create, and an unwritable destination directory fails before any work is done. Until
/// commit() succeeds, `FINAL` is not touched: an existing file there keeps its bytes whatever
/// happens to the write. commit() is one rename(2) in the same directory, so readers of `FINAL`
/// see either the old file or the complete new one (POSIX rename atomicity), never a partial one.
/// Destroying the object without a successful commit() unlinks the temporary file, and so does
/// SIGINT, SIGTERM or SIGHUP before commit() (for the first TempOutput of the process, where those
/// signals still have their default action: the handler unlinks it and re-raises the signal).
///
/// Usage: create(), write the data to path() (open it as you like; it exists, empty), close it,
/// then commit(). The PID suffix keeps concurrent processes apart; one process must not hold two
/// TempOutputs for the same final path at once (the second create() fails). Not thread-safe.
class TempOutput {
 public:
  /// Creates the empty file `final_path + ".tmp-" + getpid()` with mode 0666 (less the umask, as
  /// a plain open() of `final_path` would give). Errors: kIo naming `final_path`, the temporary
  /// path and the reason (the directory is missing or not writable, or the temporary name exists
  /// already: EEXIST).
  static Result<std::unique_ptr<TempOutput>> create(const std::string& final_path);
  /// Unlinks the temporary file unless commit() succeeded.
  ~TempOutput();
  TempOutput(const TempOutput&) = delete;
  TempOutput& operator=(const TempOutput&) = delete;

  /// The temporary file to write.
  const std::string& path() const { return path_; }
  /// Renames path() over the final path (replacing any file there). Call it only after the data
  /// is written and the file closed successfully. Errors: kIo naming both paths and the reason;
  /// the temporary file is then still removed on destruction.
  Status commit();

 private:
  TempOutput() = default;

  std::string path_;
  std::string final_;
  bool created_ = false;
  bool committed_ = false;
  bool signal_slot_ = false;  // path_ is the one the signal handler unlinks
};

}  // namespace novaserve
