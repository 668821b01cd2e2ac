// Session, subreaper and pidfd operations. See setsid(2), prctl(2) (PR_SET_CHILD_SUBREAPER,
// PR_GET_CHILD_SUBREAPER), pidfd_open(2), pidfd_send_signal(2), poll(2).
//
// Signals go through pidfds wherever we hold one: a pidfd names one process for its whole life,
// so a recycled pid can never receive a signal meant for a job that already ended.
#include "process.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

#include "errors.h"

namespace heph {
namespace {

int IntArg(const Napi::CallbackInfo& info, size_t index, const char* signature, const char* name) {
  if (info.Length() <= index || !info[index].IsNumber()) {
    ThrowTypeError(info.Env(), std::string(signature) + ": " + name + " must be an integer");
  }
  return info[index].As<Napi::Number>().Int32Value();
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
  int pid = IntArg(info, 0, "pidfdOpen(pid)", "pid");
  int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
  if (fd < 0) throw ErrnoError(info.Env(), errno, "pidfd_open");
  return Napi::Number::New(info.Env(), fd);
}

// pidfdSendSignal(pidfd, signal) -> true if sent, false if the process has already exited.
Napi::Value PidfdSendSignal(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "pidfdSendSignal(pidfd, signal)", "pidfd");
  int sig = IntArg(info, 1, "pidfdSendSignal(pidfd, signal)", "signal");
  if (syscall(SYS_pidfd_send_signal, fd, sig, nullptr, 0) == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == ESRCH) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "pidfd_send_signal");
}

// signalPid(pid, signal) -> true if sent, false on ESRCH. For processes found in a cgroup or
// /proc scan, which we hold no pidfd for; negative pids address process groups.
Napi::Value SignalPid(const Napi::CallbackInfo& info) {
  int pid = IntArg(info, 0, "signalPid(pid, signal)", "pid");
  int sig = IntArg(info, 1, "signalPid(pid, signal)", "signal");
  if (pid == 0 || pid == -1) ThrowTypeError(info.Env(), "signalPid: pid 0 and -1 would address every process we can reach");
  if (kill(pid, sig) == 0) return Napi::Boolean::New(info.Env(), true);
  if (errno == ESRCH) return Napi::Boolean::New(info.Env(), false);
  throw ErrnoError(info.Env(), errno, "kill");
}

// closeFd(fd)
Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  int fd = IntArg(info, 0, "closeFd(fd)", "fd");
  if (close(fd) != 0 && errno != EINTR) throw ErrnoError(info.Env(), errno, "close");
  return info.Env().Undefined();
}

// watchPidfd(pidfd, callback): callback() runs once, on the JS thread, when the process exits.
// A thread blocks in poll(2) so the event loop never does; it does not keep the loop alive.
// Used for the supervisor's watch on its parent: unlike PR_SET_PDEATHSIG it follows the parent
// process, not the thread that happened to spawn us.
Napi::Value WatchPidfd(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fd = IntArg(info, 0, "watchPidfd(pidfd, callback)", "pidfd");
  if (info.Length() < 2 || !info[1].IsFunction()) ThrowTypeError(env, "watchPidfd(pidfd, callback): callback must be a function");
  auto tsfn = Napi::ThreadSafeFunction::New(env, info[1].As<Napi::Function>(), "heph-pidfd-watch", 0, 1);
  tsfn.Unref(env);
  std::thread([fd, tsfn]() mutable {
    struct pollfd pfd{fd, POLLIN, 0};
    while (poll(&pfd, 1, -1) < 0 && errno == EINTR) {}
    tsfn.BlockingCall();
    tsfn.Release();
  }).detach();
  return env.Undefined();
}

}  // namespace heph
