// OFD locks. See fcntl(2) ("Open file description locks (non-POSIX)": F_OFD_SETLK), openat(2).
//
// An OFD lock belongs to the open file description, not to a process: every descriptor that
// refers to the description (a dup, a copy inherited or received over a socket) shares it, closing
// one of several leaves it held, and it goes away when the last reference does, or when it is
// unlocked through any of them. The caller (supervisor/locks/) relies on all three.
#include "locks.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "args.h"
#include "dirs.h"
#include "errors.h"

namespace heph {
namespace {

// One F_OFD_SETLK; false with errno set when it failed.
bool SetLock(int fd, short type, off_t start, off_t length) {
  struct flock lock;
  std::memset(&lock, 0, sizeof lock);
  lock.l_type = type;
  lock.l_whence = SEEK_SET;
  lock.l_start = start;
  lock.l_len = length;
  return fcntl(fd, F_OFD_SETLK, &lock) == 0;
}

}  // namespace

// lockOpenAt(dirfd, name) -> fd of the lock file `name` in the directory `dirfd` (created 0600,
// read-write, close-on-exec). Never through a symlink (ELOOP); O_NONBLOCK so that a FIFO planted
// under the name cannot hang the open. What the file turned out to be is the caller's to check.
Napi::Value LockOpenAt(const Napi::CallbackInfo& info) {
  const char* where = "lockOpenAt(dirfd, name)";
  int dirfd = FdArg(info, 0, where, "dirfd");
  std::string name = ComponentArg(info, 1, where);
  int fd = openat(dirfd, name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600);
  if (fd < 0) throw ErrnoError(info.Env(), errno, "openat", name);
  return Napi::Number::New(info.Env(), fd);
}

// lockRange(fd, exclusive, start, length) -> true when the OFD lock is held, false when another
// open file description holds a conflicting one.
Napi::Value LockRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "lockRange(fd, exclusive, start, length)";
  int fd = FdArg(info, 0, where, "fd");
  bool exclusive = BooleanArg(info, 1, where, "exclusive");
  // Offsets a JavaScript number holds exactly; length 0 means "from start on, however far".
  off_t start = static_cast<off_t>(IntegerArg(info, 2, where, "start", 0, kMaxSafeInteger));
  off_t length = static_cast<off_t>(IntegerArg(info, 3, where, "length", 0, kMaxSafeInteger));
  if (SetLock(fd, exclusive ? F_WRLCK : F_RDLCK, start, length)) return Napi::Boolean::New(env, true);
  if (errno == EAGAIN || errno == EACCES) return Napi::Boolean::New(env, false);
  throw ErrnoError(env, errno, "fcntl(F_OFD_SETLK)");
}

// unlockRange(fd, start, length): drops the OFD locks of the open file description `fd` refers to
// on [start, start+length) (length 0: from start on), for every descriptor that shares the
// description (copies kept elsewhere then hold the file open, but lock nothing there).
Napi::Value UnlockRange(const Napi::CallbackInfo& info) {
  const char* where = "unlockRange(fd, start, length)";
  int fd = FdArg(info, 0, where, "fd");
  off_t start = static_cast<off_t>(IntegerArg(info, 1, where, "start", 0, kMaxSafeInteger));
  off_t length = static_cast<off_t>(IntegerArg(info, 2, where, "length", 0, kMaxSafeInteger));
  if (!SetLock(fd, F_UNLCK, start, length)) throw ErrnoError(info.Env(), errno, "fcntl(F_OFD_SETLK, F_UNLCK)");
  return info.Env().Undefined();
}

}  // namespace heph
