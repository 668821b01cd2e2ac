// Directory-relative file operations. See openat(2) (O_PATH, O_NOFOLLOW, O_DIRECTORY), mkdirat(2),
// statx(2) (AT_SYMLINK_NOFOLLOW), readlinkat(2), unlinkat(2) (AT_REMOVEDIR), path_resolution(7).
//
// Every name is one path component (ComponentArg, dirs.h). Which levels to trust is the caller's decision
// (supervisor/locks/lock-dir.ts); these only execute and report.
#include "dirs.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <string>
#include <vector>

#include "args.h"
#include "errors.h"

namespace heph {
namespace {

const char* TypeName(mode_t mode) {
  if (S_ISDIR(mode)) return "directory";
  if (S_ISREG(mode)) return "file";
  if (S_ISLNK(mode)) return "symlink";
  return "other";
}

}  // namespace

std::string ComponentArg(const Napi::CallbackInfo& info, size_t index, const char* where) {
  std::string name = PathArg(info, index, where, "name");
  if (name.find('/') != std::string::npos || name == "." || name == "..") {
    ThrowArgumentError(info.Env(), where, "name", "one path component (no '/', not '.' or '..')", info[index]);
  }
  return name;
}

// openDirAt(dirfd, name) -> an O_PATH descriptor (close-on-exec) of the directory `name` in
// `dirfd`. Never follows a symlink: one at `name` fails with ENOTDIR, as a file does.
Napi::Value OpenDirAt(const Napi::CallbackInfo& info) {
  const char* where = "openDirAt(dirfd, name)";
  int dirfd = FdArg(info, 0, where, "dirfd");
  std::string name = ComponentArg(info, 1, where);
  int fd = openat(dirfd, name.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) throw ErrnoError(info.Env(), errno, "openat", name);
  return Napi::Number::New(info.Env(), fd);
}

// mkdirAt(dirfd, name, mode) -> true when made, false when `name` already exists (as anything:
// the caller looks at what it is).
Napi::Value MkdirAt(const Napi::CallbackInfo& info) {
  const char* where = "mkdirAt(dirfd, name, mode)";
  int dirfd = FdArg(info, 0, where, "dirfd");
  std::string name = ComponentArg(info, 1, where);
  mode_t mode = static_cast<mode_t>(IntegerArg(info, 2, where, "mode", 0, 07777));
  if (mkdirat(dirfd, name.c_str(), mode) == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == EEXIST) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "mkdirat", name);
}

// statAt(dirfd, name) -> {type, mode, uid, nlink} of `name` itself (a symlink is reported as one,
// never followed), or null when there is no such entry. `mode` holds the permission bits with
// set-id and sticky (& 07777); `type` is directory, file, symlink or other. Through statx(2)
// (glibc 2.28) rather than fstatat, whose 64-bit symbol is glibc 2.33's.
Napi::Value StatAt(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "statAt(dirfd, name)";
  int dirfd = FdArg(info, 0, where, "dirfd");
  std::string name = ComponentArg(info, 1, where);
  struct statx st;
  if (statx(dirfd, name.c_str(), AT_SYMLINK_NOFOLLOW | AT_STATX_SYNC_AS_STAT, STATX_TYPE | STATX_MODE | STATX_UID | STATX_NLINK, &st) != 0) {
    if (errno == ENOENT) return env.Null();
    throw ErrnoError(env, errno, "statx", name);
  }
  const unsigned int needed = STATX_TYPE | STATX_MODE | STATX_UID | STATX_NLINK;
  if ((st.stx_mask & needed) != needed) throw ErrnoError(env, EIO, "statx", name);
  Napi::Object out = Napi::Object::New(env);
  out.Set("type", Napi::String::New(env, TypeName(st.stx_mode)));
  out.Set("mode", Napi::Number::New(env, st.stx_mode & 07777));
  out.Set("uid", Napi::Number::New(env, st.stx_uid));
  out.Set("nlink", Napi::Number::New(env, st.stx_nlink));
  return out;
}

// readLinkAt(dirfd, name) -> the target of the symlink `name` (EINVAL when it is not one).
Napi::Value ReadLinkAt(const Napi::CallbackInfo& info) {
  const char* where = "readLinkAt(dirfd, name)";
  int dirfd = FdArg(info, 0, where, "dirfd");
  std::string name = ComponentArg(info, 1, where);
  std::vector<char> buffer(PATH_MAX);
  ssize_t length = readlinkat(dirfd, name.c_str(), buffer.data(), buffer.size());
  if (length < 0) throw ErrnoError(info.Env(), errno, "readlinkat", name);
  // A target of PATH_MAX bytes or more was cut: no path we could open anyway.
  if (static_cast<size_t>(length) >= buffer.size()) throw ErrnoError(info.Env(), ENAMETOOLONG, "readlinkat", name);
  return Napi::String::New(info.Env(), buffer.data(), static_cast<size_t>(length));
}

// unlinkAt(dirfd, name, directory) -> true when removed, false when there was no such entry.
// `directory` removes an empty directory (AT_REMOVEDIR) instead of a file.
Napi::Value UnlinkAt(const Napi::CallbackInfo& info) {
  const char* where = "unlinkAt(dirfd, name, directory)";
  int dirfd = FdArg(info, 0, where, "dirfd");
  std::string name = ComponentArg(info, 1, where);
  bool directory = BooleanArg(info, 2, where, "directory");
  if (unlinkat(dirfd, name.c_str(), directory ? AT_REMOVEDIR : 0) == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == ENOENT) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "unlinkat", name);
}

}  // namespace heph
