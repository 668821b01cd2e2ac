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

// lockFile(path, exclusive) -> fd holding the lock, or -1 when another open file description
// holds a conflicting lock. The lock is an OFD lock on the whole file: it belongs to this open
// file description, so it is not dropped when some other fd to the same file is closed (as a
// classic F_SETLK lock would be), and it goes away only with the last fd, i.e. when we release
// it or when this process dies.
Napi::Value LockFile(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::string path = PathArg(info, "lockFile(path, exclusive)");
  if (info.Length() < 2 || !info[1].IsBoolean()) ThrowTypeError(env, "lockFile(path, exclusive): exclusive must be a boolean");
  bool exclusive = info[1].As<Napi::Boolean>().Value();
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) throw ErrnoError(env, errno, "open", path);
  struct flock lock;
  std::memset(&lock, 0, sizeof lock);
  lock.l_type = exclusive ? F_WRLCK : F_RDLCK;
  lock.l_whence = SEEK_SET;
  if (fcntl(fd, F_OFD_SETLK, &lock) == 0) return Napi::Number::New(env, fd);
  int err = errno;
  close(fd);
  if (err == EAGAIN || err == EACCES) return Napi::Number::New(env, -1);
  throw ErrnoError(env, err, "fcntl(F_OFD_SETLK)", path);
}

}  // namespace heph
