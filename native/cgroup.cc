// cgroup v2 helpers and OFD locks. See cgroups(7), the kernel's Documentation/admin-guide/cgroup-v2.rst
// ("cgroup.kill", "cgroup.events"), rmdir(2), fcntl(2) (F_OFD_SETLK).
//
// Policy (when to kill, how long to retry a busy rmdir) is the caller's; these only execute.
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "errors.h"

namespace heph {
namespace {

std::string PathArg(const Napi::CallbackInfo& info, const char* signature) {
  if (info.Length() < 1 || !info[0].IsString()) ThrowTypeError(info.Env(), std::string(signature) + ": path must be a string");
  std::string path = info[0].As<Napi::String>().Utf8Value();
  if (path.empty() || path.find('\0') != std::string::npos) ThrowTypeError(info.Env(), std::string(signature) + ": path must be non-empty without NUL");
  return path;
}

}  // namespace

// cgroupCreate(path): mkdir. EEXIST is an error: a job's cgroup is never reused, because after
// cgroup.kill a cgroup also kills processes that join it later.
Napi::Value CgroupCreate(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, "cgroupCreate(path)");
  if (mkdir(path.c_str(), 0755) != 0) throw ErrnoError(info.Env(), errno, "mkdir", path);
  return info.Env().Undefined();
}

// cgroupRemove(path) -> true when removed (or already gone), false on EBUSY (not empty yet: the
// caller retries after the next "populated 0").
Napi::Value CgroupRemove(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, "cgroupRemove(path)");
  if (rmdir(path.c_str()) == 0 || errno == ENOENT) return Napi::Boolean::New(info.Env(), true);
  if (errno == EBUSY) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "rmdir", path);
}

// cgroupKill(path): SIGKILL every process in the cgroup and its descendants, atomically with
// respect to forks (kernel 5.14+).
Napi::Value CgroupKill(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, "cgroupKill(path)") + "/cgroup.kill";
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    throw ErrnoError(info.Env(), errno, "open", path);
  }
  ssize_t written = write(fd, "1", 1);
  int err = errno;
  close(fd);
  if (written != 1) throw ErrnoError(info.Env(), err, "write", path);
  return Napi::Boolean::New(info.Env(), true);
}

// cgroupPopulated(path) -> boolean from cgroup.events ("populated 0|1"); false when the cgroup is gone.
Napi::Value CgroupPopulated(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, "cgroupPopulated(path)") + "/cgroup.events";
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    throw ErrnoError(info.Env(), errno, "open", path);
  }
  char buffer[256];
  ssize_t got = read(fd, buffer, sizeof buffer - 1);
  int err = errno;
  close(fd);
  if (got < 0) throw ErrnoError(info.Env(), err, "read", path);
  buffer[got] = '\0';
  const char* field = std::strstr(buffer, "populated ");
  if (field == nullptr) throw ErrnoError(info.Env(), EPROTO, "read", path);
  return Napi::Boolean::New(info.Env(), field[10] == '1');
}

// lockOpen(path) -> fd of a lock file (created 0600, close-on-exec, never through a symlink).
Napi::Value LockOpen(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, "lockOpen(path)");
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw ErrnoError(info.Env(), errno, "open", path);
  return Napi::Number::New(info.Env(), fd);
}

// lockRange(fd, exclusive, start, length) -> true when the OFD lock is held, false when another
// open file description holds a conflicting one. OFD locks belong to the open file description:
// unlike classic F_SETLK locks they are not dropped when some other fd to the same file is closed,
// and they go away only when we close this fd or the process dies.
Napi::Value LockRange(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() != 4 || !info[0].IsNumber() || !info[1].IsBoolean() || !info[2].IsNumber() || !info[3].IsNumber()) {
    ThrowTypeError(env, "lockRange(fd, exclusive, start, length): fd, start and length must be numbers, exclusive a boolean");
  }
  struct flock lock;
  std::memset(&lock, 0, sizeof lock);
  lock.l_type = info[1].As<Napi::Boolean>().Value() ? F_WRLCK : F_RDLCK;
  lock.l_whence = SEEK_SET;
  lock.l_start = static_cast<off_t>(info[2].As<Napi::Number>().Int64Value());
  lock.l_len = static_cast<off_t>(info[3].As<Napi::Number>().Int64Value());
  if (fcntl(info[0].As<Napi::Number>().Int32Value(), F_OFD_SETLK, &lock) == 0) return Napi::Boolean::New(env, true);
  if (errno == EAGAIN || errno == EACCES) return Napi::Boolean::New(env, false);
  throw ErrnoError(env, errno, "fcntl(F_OFD_SETLK)");
}

}  // namespace heph
