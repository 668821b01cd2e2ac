// Session, subreaper, pidfd and signal operations. See setsid(2), prctl(2) (PR_SET_CHILD_SUBREAPER,
// PR_GET_CHILD_SUBREAPER), pidfd_open(2), pidfd_send_signal(2), kill(2), poll(2), fcntl(2)
// (F_DUPFD_CLOEXEC).
//
// Signals go through pidfds wherever we hold one: a pidfd names one process for its whole life,
// so a recycled pid can never receive a signal meant for a job that already ended.
#include "process.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <chrono>
#include <climits>
#include <mutex>
#include <system_error>
#include <thread>

#include "args.h"
#include "errors.h"
#include "fd.h"
#include "reaper.h"

namespace heph {
namespace {

// A short pause before polling again after ENOMEM/EAGAIN, so a starved kernel is not spun on.
constexpr auto kPollRetryDelay = std::chrono::milliseconds(10);

// Blocks until the pidfd reports its process's exit. Returns 0 then, or the errno of a watch that
// failed (the process may still be alive).
int WaitForExit(int pidfd) {
  for (;;) {
    struct pollfd pfd{pidfd, POLLIN, 0};
    int ready = poll(&pfd, 1, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOMEM || errno == EAGAIN) {
        std::this_thread::sleep_for(kPollRetryDelay);
        continue;
      }
      return errno;
    }
    if (ready == 0) continue;  // no timeout was given: cannot happen
    // POLLIN: the process exited; POLLHUP: it has also been reaped (kernel 6.9+ adds it then).
    if (pfd.revents & (POLLIN | POLLHUP)) return 0;
    if (pfd.revents & POLLNVAL) return EBADF;  // our own copy was closed under us
    return EIO;
  }
}

}  // namespace

// setsid() -> the new session id. Throws EPERM when already a process group leader.
Napi::Value Setsid(const Napi::CallbackInfo& info) {
  pid_t sid = setsid();
  if (sid < 0) throw ErrnoError(info.Env(), errno, "setsid");
  return Napi::Number::New(info.Env(), sid);
}

// setChildSubreaper(): orphaned descendants are reparented to this process instead of init.
Napi::Value SetChildSubreaper(const Napi::CallbackInfo& info) {
  if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) throw ErrnoError(info.Env(), errno, "prctl(PR_SET_CHILD_SUBREAPER)");
  return info.Env().Undefined();
}

// isChildSubreaper() -> boolean, read back from the kernel.
Napi::Value IsChildSubreaper(const Napi::CallbackInfo& info) {
  int value = 0;
  if (prctl(PR_GET_CHILD_SUBREAPER, &value, 0, 0, 0) != 0) throw ErrnoError(info.Env(), errno, "prctl(PR_GET_CHILD_SUBREAPER)");
  return Napi::Boolean::New(info.Env(), value != 0);
}

// pidfdOpen(pid) -> fd (close-on-exec). Throws ESRCH when no such process exists.
Napi::Value PidfdOpen(const Napi::CallbackInfo& info) {
  pid_t pid = PidArg(info, 0, "pidfdOpen(pid)");
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) throw ErrnoError(info.Env(), errno, "pidfd_open");
  return Napi::Number::New(info.Env(), fd);
}

// pidfdSendSignal(pidfd, signal) -> true if sent, false if the process has already exited.
Napi::Value PidfdSendSignal(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0, "pidfdSendSignal(pidfd, signal)", "pidfd");
  int sig = SignalArg(info, 1, "pidfdSendSignal(pidfd, signal)");
  if (syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == ESRCH) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "pidfd_send_signal");
}

// signalPid(pid, signal) -> true if sent, false on ESRCH. For processes found in a cgroup or
// /proc scan, which we hold no pidfd for; negative pids address process groups.
Napi::Value SignalPid(const Napi::CallbackInfo& info) {
  const char* where = "signalPid(pid, signal)";
  // -INT_MAX, not INT_MIN: the kernel cannot negate INT_MIN into a group id.
  pid_t pid = static_cast<pid_t>(IntegerArg(info, 0, where, "pid", -INT_MAX, INT_MAX));
  if (pid == 0 || pid == -1) {
    ThrowArgumentError(info.Env(), where, "pid", "neither 0 nor -1 (they address every process we may signal)", info[0]);
  }
  int sig = SignalArg(info, 1, where);
  if (kill(pid, sig) == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == ESRCH) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "kill");
}

// signalChildGroup(pid, signal) -> true if the process group led by `pid`, a job leader we spawned,
// was signalled; false once that leader has been reaped (or for a pid we never spawned). Checked
// and sent under the child-table lock, which the reaper holds while it reaps: until then the
// leader is at least a zombie, so its pid, which is also its group id (it called setsid), cannot
// have been recycled as a stranger's group.
Napi::Value SignalChildGroup(const Napi::CallbackInfo& info) {
  const char* where = "signalChildGroup(pid, signal)";
  pid_t pid = PidArg(info, 0, where);
  int sig = SignalArg(info, 1, where);
  std::lock_guard<std::mutex> table(ChildTableLock());
  if (!IsChildRegisteredLocked(pid)) return Napi::Boolean::New(info.Env(), false);
  if (kill(-pid, sig) == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == ESRCH) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "kill");
}

// closeFd(fd)
Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0, "closeFd(fd)", "fd");
  if (close(fd) != 0 && errno != EINTR) throw ErrnoError(info.Env(), errno, "close");
  return info.Env().Undefined();
}

// watchPidfd(pidfd, callback): callback() runs once, on the JS thread, when the process exits;
// callback(error) instead if the watch itself failed (the process may still live; what to do then
// is the caller's decision). Throws EBADF when `pidfd` is not an open pidfd. A thread blocks in
// poll(2) on its own copy of the descriptor, so the event loop never waits and closing `pidfd`
// later cannot turn into a false "exited"; the thread does not keep the loop alive.
// Used for the supervisor's watch on its parent: unlike PR_SET_PDEATHSIG it follows the parent
// process, not the thread that happened to spawn us.
Napi::Value WatchPidfd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "watchPidfd(pidfd, callback)";
  int pidfd = FdArg(info, 0, where, "pidfd");
  Napi::Function callback = FunctionArg(info, 1, where, "callback");
  Fd own(fcntl(pidfd, F_DUPFD_CLOEXEC, 0));
  if (own.get() < 0) throw ErrnoError(env, errno, "fcntl(F_DUPFD_CLOEXEC)");
  // Signal 0 only checks: EBADF unless this is a pidfd; ESRCH (exited) and EPERM still are one.
  if (syscall(SYS_pidfd_send_signal, own.get(), 0, nullptr, 0) != 0 && errno != ESRCH && errno != EPERM) {
    throw ErrnoError(env, errno, "pidfd_send_signal");
  }
  auto tsfn = Napi::ThreadSafeFunction::New(env, callback, "heph-pidfd-watch", 0, 1);
  tsfn.Unref(env);
  int fd = own.get();
  try {
    std::thread([fd, tsfn]() mutable {
      int err = WaitForExit(fd);
      close(fd);  // before the callback: once it runs, the watch holds nothing
      tsfn.BlockingCall([err](Napi::Env call_env, Napi::Function js_callback) {
        if (err == 0) js_callback.Call({});
        else js_callback.Call({ErrnoError(call_env, err, "poll").Value()});
      });
      tsfn.Release();
    }).detach();
  } catch (const std::system_error& error) {
    tsfn.Release();
    throw ErrnoError(env, error.code().value(), "pthread_create");
  }
  own.release();  // the thread closes it
  return env.Undefined();
}

}  // namespace heph
