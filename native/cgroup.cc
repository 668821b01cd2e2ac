// cgroup v2 helpers. See cgroups(7), the kernel's Documentation/admin-guide/cgroup-v2.rst
// ("cgroup.kill", "cgroup.events"), rmdir(2).
//
// Policy (when to kill, how long to retry a busy rmdir) is the caller's; these only execute.
#include "cgroup.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "args.h"
#include "errors.h"
#include "fd.h"

namespace heph {

// cgroupCreate(path): mkdir. EEXIST is an error: a job's cgroup is never reused, because after
// cgroup.kill a cgroup also kills processes that join it later.
Napi::Value CgroupCreate(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, 0, "cgroupCreate(path)", "path");
  if (mkdir(path.c_str(), 0755) != 0) throw ErrnoError(info.Env(), errno, "mkdir", path);
  return info.Env().Undefined();
}

// cgroupRemove(path) -> true when removed (or already gone), false on EBUSY (not empty yet: the
// caller retries after the next "populated 0").
Napi::Value CgroupRemove(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, 0, "cgroupRemove(path)", "path");
  if (rmdir(path.c_str()) == 0 || errno == ENOENT) return Napi::Boolean::New(info.Env(), true);
  if (errno == EBUSY) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "rmdir", path);
}

// cgroupKill(path): SIGKILL every process in the cgroup and its descendants, atomically with
// respect to forks (kernel 5.14+).
Napi::Value CgroupKill(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, 0, "cgroupKill(path)", "path") + "/cgroup.kill";
  Fd fd(open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    throw ErrnoError(info.Env(), errno, "open", path);
  }
  ssize_t written;
  do written = write(fd.get(), "1", 1);
  while (written < 0 && errno == EINTR);
  if (written < 0) throw ErrnoError(info.Env(), errno, "write", path);
  if (written != 1) throw ErrnoError(info.Env(), EIO, "write", path);
  return Napi::Boolean::New(info.Env(), true);
}

// cgroupPopulated(path) -> boolean from cgroup.events ("populated 0|1"); false when the cgroup is gone.
Napi::Value CgroupPopulated(const Napi::CallbackInfo& info) {
  std::string path = PathArg(info, 0, "cgroupPopulated(path)", "path") + "/cgroup.events";
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
    throw ErrnoError(info.Env(), errno, "open", path);
  }
  char buffer[256];
  ssize_t got;
  do got = read(fd.get(), buffer, sizeof buffer - 1);
  while (got < 0 && errno == EINTR);
  if (got < 0) throw ErrnoError(info.Env(), errno, "read", path);
  buffer[got] = '\0';
  const char* field = std::strstr(buffer, "populated ");
  if (field == nullptr) throw ErrnoError(info.Env(), EPROTO, "read", path);
  return Napi::Boolean::New(info.Env(), field[10] == '1');
}

}  // namespace heph
