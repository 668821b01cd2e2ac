// A descriptor the addon owns until it hands it to JavaScript, so that every error path closes
// what it opened (a throw unwinds through the destructor). See close(2): on Linux the descriptor
// is released even when close reports an error, so there is nothing to retry.
#pragma once

#include <unistd.h>

namespace heph {

class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  // Hands the descriptor over: the caller closes it from now on.
  int release() {
    int fd = fd_;
    fd_ = -1;
    return fd;
  }
  void Reset(int fd = -1) {
    if (fd_ >= 0) close(fd_);
    fd_ = fd;
  }

 private:
  int fd_ = -1;
};

}  // namespace heph
