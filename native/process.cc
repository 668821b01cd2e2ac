// Session, subreaper, pidfd and signal operations. See setsid(2), prctl(2) (PR_SET_CHILD_SUBREAPER,
// PR_GET_CHILD_SUBREAPER, PR_SET_PDEATHSIG), pidfd_open(2), pidfd_send_signal(2), kill(2),
// sigaction(2), poll(2), pipe2(2).
//
// Signals go through pidfds wherever we hold one: a pidfd names one process for its whole life,
// so a recycled pid can never receive a signal meant for a job that already ended.
#include "process.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <climits>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "args.h"
#include "errors.h"
#include "fd.h"
#include "reaper.h"

namespace heph {
namespace {

// A short pause before polling again after ENOMEM/EAGAIN, so a starved kernel is not spun on.
constexpr auto kPollRetryDelay = std::chrono::milliseconds(10);

// Blocks until one of `fds` is readable: the exit of a pidfd's process (POLLIN, or POLLHUP once it
// is also reaped, kernel 6.9+), or a byte in a pipe. Sets `which` to its index and returns 0, or
// returns the errno of a watch that failed (the process may still be alive).
int WaitForReadable(struct pollfd* fds, nfds_t count, nfds_t* which) {
  for (;;) {
    int ready = poll(fds, count, -1);
    if (ready < 0) {
      if (errno == EINTR) continue;
      if (errno == ENOMEM || errno == EAGAIN) {
        std::this_thread::sleep_for(kPollRetryDelay);
        continue;
      }
      return errno;
    }
    for (nfds_t i = 0; i < count; i++) {
      if (fds[i].revents & (POLLIN | POLLHUP)) {
        *which = i;
        return 0;
      }
      if (fds[i].revents & POLLNVAL) return EBADF;  // our own copy was closed under us
      if (fds[i].revents) return EIO;
    }
    // ready == 0: no timeout was given, cannot happen; poll again.
  }
}

// The parent-death signal (prctl PR_SET_PDEATHSIG), as the supervisor's early word of its
// runtime's death. A SIGKILLed process closes its files only after its last thread has torn down
// its memory (do_exit: exit_mm, then exit_files), and its pidfd reads as exited later still; the
// kernel sends the parent-death signal when the thread that spawned us exits, which is before
// that teardown unless that thread happens to be the process's last (measured here: 13-21 ms
// before the channel's EOF for a runtime of ~200 MB, 0-2.4 ms for a bare Node). A real-time
// signal Node and libuv leave alone (SIGUSR1 is Node's inspector signal).
int ParentDeathSignal() { return SIGRTMIN + 4; }

// Set once by WatchParent before the handler is installed; read by the handler.
std::atomic<pid_t> g_watched_parent{0};
std::atomic<int> g_parent_signal_pipe{-1};
// A file whose write of "1" kills every job (the subtree's cgroup.kill), or -1: written at the
// parent's death before anything else, by the handler itself (see KillOnParentDeath).
std::atomic<int> g_kill_on_parent_death{-1};

// Async-signal-safe (one write); a failed write is left to the supervisor's own shutdown.
void KillEveryJobNow() {
  int fd = g_kill_on_parent_death.load();
  if (fd >= 0) {
    ssize_t ignored = write(fd, "1", 1);
    (void)ignored;
  }
}

// Async-signal-safe: an atomic load, a write(2), errno kept. Only the kernel's parent-death signal
// counts: it comes as SI_USER from the exiting parent's thread group, and no other process can
// send SI_USER with the parent's pid (kill(2) stamps the sender's own; rt_sigqueueinfo(2) refuses
// non-negative codes for other processes), so a stray signal from elsewhere is ignored.
void OnParentDeathSignal(int, siginfo_t* info, void*) {
  int saved = errno;
  if (info->si_code == SI_USER && info->si_pid == g_watched_parent.load()) {
    KillEveryJobNow();
    char byte = 1;
    ssize_t ignored = write(g_parent_signal_pipe.load(), &byte, 1);
    (void)ignored;  // the pipe is non-blocking: a full one already holds the news
  }
  errno = saved;
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

// setNotDumpable(): prctl(PR_SET_DUMPABLE, 0). A process of the same uid (a job) can then neither
// ptrace this one nor take its descriptors with pidfd_getfd(2) nor read /proc/<pid>/fd, environ or
// maps (all need PTRACE_MODE_*; see ptrace(2) "Ptrace access mode checking", proc(5)). Children
// inherit it until execve(2) resets it. Root (CAP_SYS_PTRACE) is not stopped by it.
Napi::Value SetNotDumpable(const Napi::CallbackInfo& info) {
  if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) != 0) throw ErrnoError(info.Env(), errno, "prctl(PR_SET_DUMPABLE)");
  return info.Env().Undefined();
}

// exitNow(code): _exit(2), without the process's atexit handlers or Node's platform teardown.
// Node's exit can wait for good there (nodejs/node#54918: a background compile waits for a
// garbage collection the exiting main thread never runs); a supervisor must not outlive its work.
Napi::Value ExitNow(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  if (info.Length() < 1 || !info[0].IsNumber()) ThrowTypeError(env, "exitNow(code): code must be a number");
  _exit(info[0].As<Napi::Number>().Int32Value() & 0xff);
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
// and sent with the child table held, which the reaper needs to reap a registered child: until then the
// leader is at least a zombie, so its pid, which is also its group id (it called setsid), cannot
// have been recycled as a stranger's group.
Napi::Value SignalChildGroup(const Napi::CallbackInfo& info) {
  const char* where = "signalChildGroup(pid, signal)";
  pid_t pid = PidArg(info, 0, where);
  int sig = SignalArg(info, 1, where);
  ChildTableHold table;
  if (!table.IsRegistered(pid)) return Napi::Boolean::New(info.Env(), false);
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

// setNonBlocking(fd): O_NONBLOCK on the file description (a pipe's other end keeps its own flags).
Napi::Value SetNonBlocking(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0, "setNonBlocking(fd)", "fd");
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags | O_NONBLOCK) != 0) throw ErrnoError(info.Env(), errno, "fcntl");
  return info.Env().Undefined();
}

// closeInheritedFds(lastKept) -> how many were closed: every descriptor above `lastKept` that is
// not close-on-exec. Those are what the process that exec'd us leaked (Node and libuv open
// everything close-on-exec). One fcntl(F_GETFD) per descriptor of /proc/self/fd; the numbers are
// read first and closed after, so the directory's own descriptor is never among them.
Napi::Value CloseInheritedFds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int last_kept = FdArg(info, 0, "closeInheritedFds(lastKept)", "lastKept");
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) throw ErrnoError(env, errno, "opendir(/proc/self/fd)");
  int own = dirfd(dir);
  std::vector<int> candidates;
  errno = 0;
  while (struct dirent* entry = readdir(dir)) {
    char* end = nullptr;
    long fd = strtol(entry->d_name, &end, 10);
    if (*end != '\0' || end == entry->d_name || fd <= last_kept || fd > INT_MAX || fd == own) continue;
    candidates.push_back(static_cast<int>(fd));
  }
  int read_error = errno;
  closedir(dir);
  if (read_error != 0) throw ErrnoError(env, read_error, "readdir(/proc/self/fd)");
  uint32_t closed = 0;
  for (int fd : candidates) {
    int flags = fcntl(fd, F_GETFD);
    if (flags < 0 || (flags & FD_CLOEXEC) != 0) continue;  // gone meanwhile, or ours
    close(fd);
    closed++;
  }
  return Napi::Number::New(env, closed);
}

// watchParent(pid, callback) -> boolean: false when `pid` is no longer our parent (it died before
// the watch began and we were reparented). Otherwise callback() runs once, on the JS thread, when
// the parent dies, seen by the parent-death signal (usually the earlier word) or by its pidfd (the
// whole process has exited: this covers a parent that died before the prctl below), or
// callback(error) if the watch itself failed.
// Once per process: the signal's handler and the pipe are process-wide.
Napi::Value WatchParent(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "watchParent(pid, callback)";
  pid_t parent = PidArg(info, 0, where);
  Napi::Function callback = FunctionArg(info, 1, where, "callback");
  if (g_watched_parent.load() != 0) throw Napi::Error::New(env, "watchParent: the parent is already watched");

  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, parent, 0)));
  if (pidfd.get() < 0) {
    if (errno == ESRCH) return Napi::Boolean::New(env, false);
    throw ErrnoError(env, errno, "pidfd_open");
  }
  // Still our parent after the open, so the pidfd names it and not a recycled pid (a parent is
  // not reaped before its children are reparented).
  if (getppid() != parent) return Napi::Boolean::New(env, false);
  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC | O_NONBLOCK) != 0) throw ErrnoError(env, errno, "pipe2");
  Fd signal_read(pipe_fds[0]);
  int signal_write = pipe_fds[1];  // the handler's, for the life of the process
  g_parent_signal_pipe.store(signal_write);
  g_watched_parent.store(parent);
  struct sigaction action {};
  action.sa_sigaction = OnParentDeathSignal;
  action.sa_flags = SA_SIGINFO | SA_RESTART;
  sigemptyset(&action.sa_mask);
  if (sigaction(ParentDeathSignal(), &action, nullptr) != 0) throw ErrnoError(env, errno, "sigaction");
  // A parent that dies between the check above and this prctl sends no signal; its pidfd still
  // reads as exited, so the watch below reports it all the same.
  if (prctl(PR_SET_PDEATHSIG, ParentDeathSignal(), 0, 0, 0) != 0) throw ErrnoError(env, errno, "prctl(PR_SET_PDEATHSIG)");

  auto tsfn = Napi::ThreadSafeFunction::New(env, callback, "heph-parent-watch", 0, 1);
  tsfn.Unref(env);
  int exit_fd = pidfd.get();
  int signal_fd = signal_read.get();
  try {
    std::thread([exit_fd, signal_fd, tsfn]() mutable {
      struct pollfd fds[2] = {{signal_fd, POLLIN, 0}, {exit_fd, POLLIN, 0}};
      nfds_t which = 0;
      int err = WaitForReadable(fds, 2, &which);
      if (err == 0 && which == 1) KillEveryJobNow();  // the handler did it when the signal came
      close(exit_fd);  // the signal pipe stays: the handler may still write to it
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
  pidfd.release();  // the thread closes it
  signal_read.release();
  return Napi::Boolean::New(env, true);
}

// killOnParentDeath(fd): from now on the parent's death (as watchParent sees it) writes "1" to
// `fd` at once, from the signal handler itself, before any thread wakes or any JavaScript runs.
// The caller decides what `fd` is (the subtree's cgroup.kill) and keeps it open for the life of
// the process: a handler may be writing to it at any moment, so it is never closed or replaced.
Napi::Value KillOnParentDeath(const Napi::CallbackInfo& info) {
  int fd = FdArg(info, 0, "killOnParentDeath(fd)", "fd");
  int expected = -1;
  if (!g_kill_on_parent_death.compare_exchange_strong(expected, fd)) {
    throw Napi::Error::New(info.Env(), "killOnParentDeath: a file is already armed");
  }
  return info.Env().Undefined();
}

}  // namespace heph
