// Job spawning. See clone3(2) (CLONE_VM, CLONE_VFORK, CLONE_INTO_CGROUP, CLONE_PIDFD), vfork(2),
// fork(2), setsid(2), close_range(2), execve(2), signal-safety(7), rt_sigaction(2) and
// rt_sigprocmask(2) ("C library/kernel differences"), pidfd_open(2), cgroups(7) ("cgroup.procs"),
// mmap(2), getrlimit(2), waitpid(2).
//
// Two ways to start a job leader, both ending in execve of /bin/sh:
// - vfork (the normal path): clone3 with CLONE_VM | CLONE_VFORK | CLONE_PIDFD, and CLONE_INTO_CGROUP
//   when a cgroup is given, on a child stack of our own, as posix_spawn(3) does. Nothing of the
//   ~50 MB Node process is copied (a fork copies its page tables); this thread sleeps until the
//   child has exec'd or exited, so the call answers exactly when execve has succeeded. The child
//   shares our memory: it touches only its own stack and `ChildPlan::failure`, which is how an
//   exec failure comes back ({stage, errno}, read once the child is gone).
// - fork (fallback for kernels without clone3 or CLONE_INTO_CGROUP, for architectures without
//   our clone3 entry, and for tests through forceFork): the child joins the cgroup by writing to
//   cgroup.procs, and an exec failure comes back through a close-on-exec pipe (EOF: exec done).
// Either way the child runs only async-signal-safe code between clone and exec: the parent is a
// multithreaded Node process, so anything that may take a lock (malloc, stdio) could deadlock, and
// with CLONE_VM anything that writes shared state would corrupt the parent. Everything the child
// needs (argv, envp, paths) is prepared before the clone, and every signal is blocked around it.
// A spawn that throws leaves nothing behind: every descriptor it opened is closed, and a child
// that exists by then is killed and reaped here, before the reaper could report it.
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "args.h"
#include "clone3.h"
#include "errors.h"
#include "fd.h"
#include "reaper.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace heph {
namespace {

// Where in the child a failure happened; reported to the parent with the errno. 0: none.
enum Stage : int { kSignals = 1, kSetsid, kCgroup, kChdir, kDup, kCloexec, kExec, kCtty };

const char* StageName(int stage) {
  switch (stage) {
    case kSignals: return "sigprocmask";
    case kSetsid: return "setsid";
    case kCgroup: return "cgroup.procs";
    case kChdir: return "chdir";
    case kDup: return "dup2";
    case kCloexec: return "close_range";
    case kExec: return "execve";
    case kCtty: return "ioctl(TIOCSCTTY)";
    default: return "spawn";
  }
}

// The kernel's signal set is _NSIG bits; glibc's sigset_t is larger, and its sigfillset and
// sigprocmask leave out the two signals glibc keeps for itself (32, 33). Raw system calls with
// the kernel's size reach those too.
constexpr size_t kKernelSigsetBytes = _NSIG / 8;

struct ChildFailure {
  int stage;  // a Stage, or 0 while nothing failed
  int err;
};

struct ChildPlan {
  const char* shell;
  const char* cwd;
  char* const* argv;
  char* const* envp;
  int stdin_fd;        // becomes fd 0
  int stdout_fd;       // becomes fd 1
  int stderr_fd;       // becomes fd 2
  int ctty_fd;         // a terminal's slave (pty.cc) made the controlling terminal, or -1
  int cgroup_procs_fd; // fork path only: "0" written here moves the child into the job's cgroup
  int report_fd;       // fork path only: write end of the close-on-exec error pipe; -1 otherwise
  int max_fd;          // fallback bound when close_range is unavailable
  // vfork path: written by the child in our memory (CLONE_VM) just before it exits; we read it
  // once clone3 has returned, which CLONE_VFORK holds back until the child has exec'd or exited.
  ChildFailure failure;
};

// Marks the code that runs in the child between clone and exec: never instrumented by a sanitizer
// (its runtime is not async-signal-safe, and on the vfork path it would find the child on a stack
// it does not know and report its own bookkeeping as an error).
#define HEPH_CHILD_CODE [[gnu::no_sanitize_address, gnu::no_sanitize_undefined]]

// Runs in the child. errno here is the sleeping parent thread's (the child shares its thread
// pointer on the vfork path), which that thread does not read after the clone.
HEPH_CHILD_CODE [[noreturn]] void ChildFail(ChildPlan* plan, int stage) {
  ChildFailure failure{stage, errno};
  plan->failure = failure;
  if (plan->report_fd >= 0) {
    ssize_t ignored = write(plan->report_fd, &failure, sizeof failure);
    (void)ignored;
  }
  _exit(127);
}

// Runs in the child. Async-signal-safe calls only, and no write to memory but its own stack and
// plan->failure.
HEPH_CHILD_CODE [[noreturn]] void ChildMain(ChildPlan* plan) {
  // Default disposition for every signal. Node handles some (a handler must never run here: on
  // the vfork path it would run on the parent's memory) and ignores others (SIGPIPE), and an
  // ignored signal would stay ignored across execve. An all-zero kernel sigaction is SIG_DFL, no
  // flags, empty mask, whatever the architecture's field order. EINVAL for SIGKILL/SIGSTOP: fine.
  static const unsigned char kDefaultAction[64] = {};
  for (int sig = 1; sig < _NSIG; sig++) {
    if (sig != SIGKILL && sig != SIGSTOP) syscall(SYS_rt_sigaction, sig, kDefaultAction, nullptr, kKernelSigsetBytes);
  }
  // Then an empty mask: the parent blocked everything around the clone, and we inherited that.
  static const unsigned char kEmptySet[kKernelSigsetBytes] = {};
  if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, kEmptySet, nullptr, kKernelSigsetBytes) != 0) ChildFail(plan, kSignals);

  if (setsid() < 0) ChildFail(plan, kSetsid);
  // A session leader without a terminal takes this one (ioctl_tty(2)); fds 0-2 are it below.
  if (plan->ctty_fd >= 0 && ioctl(plan->ctty_fd, TIOCSCTTY, 0) != 0) ChildFail(plan, kCtty);
  if (plan->cgroup_procs_fd >= 0 && write(plan->cgroup_procs_fd, "0", 1) != 1) ChildFail(plan, kCgroup);
  if (chdir(plan->cwd) != 0) ChildFail(plan, kChdir);
  if (dup2(plan->stdin_fd, 0) < 0 || dup2(plan->stdout_fd, 1) < 0 || dup2(plan->stderr_fd, 2) < 0) ChildFail(plan, kDup);
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    // Kernels before 5.11: mark every possible descriptor by hand.
    for (int fd = 3; fd < plan->max_fd; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  execve(plan->shell, plan->argv, plan->envp);
  ChildFail(plan, kExec);
}

// The vfork child's entry, called on the child stack by CloneWithStack.
HEPH_CHILD_CODE int ChildEntry(void* plan) { ChildMain(static_cast<ChildPlan*>(plan)); }

// Every signal blocked for the calling thread while it lives, glibc's own two included, so no
// handler runs in a child between clone and the child's reset; the previous mask is back on
// Restore() or at scope exit.
class AllSignalsBlocked {
 public:
  explicit AllSignalsBlocked(Napi::Env env) {
    unsigned char all[kKernelSigsetBytes];
    std::memset(all, 0xff, sizeof all);
    if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, all, saved_, kKernelSigsetBytes) != 0) {
      throw ErrnoError(env, errno, "rt_sigprocmask");
    }
  }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;
  ~AllSignalsBlocked() { Restore(); }
  // Cannot fail: the mask is one the kernel handed us.
  void Restore() {
    if (!blocked_) return;
    syscall(SYS_rt_sigprocmask, SIG_SETMASK, saved_, nullptr, kKernelSigsetBytes);
    blocked_ = false;
  }

 private:
  unsigned char saved_[kKernelSigsetBytes];
  bool blocked_ = true;
};

// For a child whose spawn failed after it was created: the caller holds the child-table lock, so
// the reaper cannot have reaped it and `pid` still names it. SIGKILL, then reap it here.
void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);  // our own unreaped child: cannot fail
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
}

void MakePipe(Napi::Env env, Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw ErrnoError(env, errno, "pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
}

// A bigger pipe means fewer wakeups for a job that floods; failure (pipe-max-size) is harmless.
void GrowPipe(int fd) { fcntl(fd, F_SETPIPE_SZ, 1 << 20); }

std::vector<std::string> StringArray(Napi::Env env, Napi::Value value, const char* name) {
  const char* where = "spawn(options)";
  const char* rule = "an array of strings without NUL";
  if (!value.IsArray()) ThrowArgumentError(env, where, name, rule, value);
  Napi::Array array = value.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); i++) {
    Napi::Value item = array.Get(i);
    if (!item.IsString()) ThrowArgumentError(env, where, name, rule, value);
    std::string text = item.As<Napi::String>().Utf8Value();
    if (text.find('\0') != std::string::npos) ThrowArgumentError(env, where, name, rule, value);
    out.push_back(std::move(text));
  }
  return out;
}

std::vector<char*> CStringArray(std::vector<std::string>& strings) {
  std::vector<char*> out;
  out.reserve(strings.size() + 1);
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

// Set once a clone3 said ENOSYS/E2BIG/EINVAL ("this kernel cannot"): every later spawn forks.
std::atomic<bool> g_clone3_unavailable{false};

// The vfork child's stack. The child's frames take well under a kilobyte (no libc call it makes
// uses more than a few hundred bytes); 64 KiB leaves room as glibc's posix_spawn does (32 KiB plus
// the arguments). Made once and kept for the life of the process: CLONE_VFORK means the previous
// child is done with it (exec'd or gone) when clone3 returns, and the child-table lock orders
// spawns. A PROT_NONE guard page below it turns an overflow into a fault in the child instead of
// a write into whatever the kernel placed there.
constexpr size_t kChildStackBytes = 64 * 1024;

struct ChildStack {
  void* low = nullptr;  // lowest usable byte; the guard page is just below
  size_t size = 0;
};
ChildStack g_child_stack;  // guarded by ChildTableLock()

// Maps the child stack unless done already. 0, or the errno of the failed call.
int MapChildStackLocked() {
  if (g_child_stack.low != nullptr) return 0;
  size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  size_t size = (kChildStackBytes + page - 1) / page * page;
  void* map = mmap(nullptr, size + page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_STACK, -1, 0);
  if (map == MAP_FAILED) return errno;
  void* low = static_cast<char*>(map) + page;
  if (mprotect(low, size, PROT_READ | PROT_WRITE) != 0) {
    int err = errno;
    munmap(map, size + page);
    return err;
  }
  g_child_stack = {low, size};
  return 0;
}

// What a spawn path hands back: the child, created, exec'd and registered with the reaper.
struct Spawned {
  pid_t pid = -1;
  Fd pidfd;
};

// The error for a child that failed before or at execve.
Napi::Error ChildError(Napi::Env env, const ChildFailure& failure, const ChildPlan& plan) {
  const char* path = failure.stage == kChdir ? plan.cwd : failure.stage == kExec ? plan.shell : "";
  return ErrnoError(env, failure.err, StageName(failure.stage), path);
}

// Under the child-table lock, so the reaper cannot report the child before it is known.
void RegisterOrKill(Napi::Env env, pid_t pid, double token) {
  try {
    RegisterChildLocked(pid, token);
  } catch (const std::bad_alloc&) {
    KillAndReap(pid);
    throw ErrnoError(env, ENOMEM, "spawn");
  }
}

// The vfork path. False, with nothing created, when this kernel cannot clone3 this way (no clone3,
// or no CLONE_INTO_CGROUP: ENOSYS, E2BIG, EINVAL): the caller falls back to fork.
bool SpawnVfork(Napi::Env env, ChildPlan& plan, int cgroup_fd, double token, Spawned& out) {
  plan.cgroup_procs_fd = -1;
  plan.report_fd = -1;
  plan.failure = ChildFailure{0, 0};
  struct clone_args args;
  std::memset(&args, 0, sizeof args);
  args.flags = CLONE_VM | CLONE_VFORK | CLONE_PIDFD | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0);
  int raw_pidfd = -1;
  args.pidfd = reinterpret_cast<uint64_t>(&raw_pidfd);
  args.exit_signal = SIGCHLD;
  args.cgroup = cgroup_fd >= 0 ? static_cast<uint64_t>(cgroup_fd) : 0;

  AllSignalsBlocked blocked(env);
  std::lock_guard<std::mutex> table(ChildTableLock());
  int stack_err = MapChildStackLocked();
  if (stack_err != 0) throw ErrnoError(env, stack_err, "mmap", "the child stack");
  args.stack = reinterpret_cast<uint64_t>(g_child_stack.low);
  args.stack_size = g_child_stack.size;
  // This thread sleeps in here until the child has exec'd or exited.
  long rc = CloneWithStack(&args, sizeof args, ChildEntry, &plan);
  blocked.Restore();
  if (rc < 0) {
    int err = static_cast<int>(-rc);
    if (err == ENOSYS || err == E2BIG || err == EINVAL) {
      g_clone3_unavailable = true;
      return false;
    }
    throw ErrnoError(env, err, "clone3");
  }
  pid_t pid = static_cast<pid_t>(rc);
  Fd pidfd(raw_pidfd);
  // A child killed before it reached execve also lets us resume, with no failure written: it is
  // then a job that died at once, and the reaper reports how (as posix_spawn treats it).
  ChildFailure failure = plan.failure;
  if (failure.stage != 0) {
    KillAndReap(pid);  // it has exited 127, or is about to
    throw ChildError(env, failure, plan);
  }
  RegisterOrKill(env, pid, token);
  out.pid = pid;
  out.pidfd.Reset(pidfd.release());
  return true;
}

// The fork path: the child joins the cgroup through cgroup.procs and reports an exec failure
// through a close-on-exec pipe; this thread waits on that pipe for exec.
void SpawnFork(Napi::Env env, ChildPlan& plan, const std::string& cgroup, double token, Spawned& out) {
  Fd cgroup_procs;
  if (!cgroup.empty()) {
    std::string procs = cgroup + "/cgroup.procs";
    cgroup_procs.Reset(open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (cgroup_procs.get() < 0) throw ErrnoError(env, errno, "open", procs);
  }
  Fd report_read, report_write;
  MakePipe(env, report_read, report_write);
  plan.cgroup_procs_fd = cgroup_procs.get();
  plan.report_fd = report_write.get();
  plan.failure = ChildFailure{0, 0};

  AllSignalsBlocked blocked(env);
  std::lock_guard<std::mutex> table(ChildTableLock());
  pid_t pid = fork();
  if (pid == 0) ChildMain(&plan);
  if (pid < 0) throw ErrnoError(env, errno, "fork");
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() < 0) {
    // Without a pidfd the job could not be signalled safely: undo the spawn.
    int err = errno;
    KillAndReap(pid);
    throw ErrnoError(env, err, "pidfd_open");
  }
  blocked.Restore();
  report_write.Reset();  // the child's copy is what keeps the pipe open now

  ChildFailure failure{};
  ssize_t got;
  do got = read(report_read.get(), &failure, sizeof failure);
  while (got < 0 && errno == EINTR);
  if (got != 0) {
    int err = got < 0 ? errno : 0;
    // Exec failed (the child has exited 127), or the pipe failed us: no job either way.
    KillAndReap(pid);
    if (got == static_cast<ssize_t>(sizeof failure)) throw ChildError(env, failure, plan);
    throw ErrnoError(env, got < 0 ? err : EPROTO, "read", "the spawn error pipe");
  }
  RegisterOrKill(env, pid, token);
  out.pid = pid;
  out.pidfd.Reset(pidfd.release());
}

}  // namespace

// spawn({shell, command, cwd, env, cgroup, stdin, merge, token, forceFork, ctty?}) ->
//   {pid, pidfd, stdin, stdout, stderr, method}
// `cgroup` is a cgroup directory path or null. `stdin` is "null" or "pipe". With `merge`, stdout
// and stderr share one pipe and `stderr` is -1. With `ctty` (a terminal's slave from openPty; -1 or
// left out: none), the child's controlling terminal and fds 0-2 are that terminal, no pipe is
// made (`stdin` and `merge` do not apply) and stdin, stdout and stderr are -1. Throws an errno
// error naming the failed step.
Napi::Value Spawn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "spawn(options)";
  if (info.Length() != 1 || !info[0].IsObject()) ThrowArgumentError(env, where, "options", "an object", info[0]);
  Napi::Object options = info[0].As<Napi::Object>();
  std::string shell = StringField(options, where, "shell");
  std::string command = StringField(options, where, "command");
  std::string cwd = StringField(options, where, "cwd");
  std::vector<std::string> env_strings = StringArray(env, options.Get("env"), "options.env");
  Napi::Value cgroup_value = options.Get("cgroup");
  bool has_cgroup = !cgroup_value.IsNull();
  if (has_cgroup && !cgroup_value.IsString()) ThrowArgumentError(env, where, "options.cgroup", "a cgroup directory or null", cgroup_value);
  std::string cgroup = has_cgroup ? StringField(options, where, "cgroup", true) : "";
  std::string stdin_mode = StringField(options, where, "stdin");
  if (stdin_mode != "null" && stdin_mode != "pipe") ThrowArgumentError(env, where, "options.stdin", "\"null\" or \"pipe\"", options.Get("stdin"));
  bool merge = BooleanField(options, where, "merge");
  bool force_fork = BooleanField(options, where, "forceFork");
  // 0 is what the reaper reports for an orphan; a job given 0 would read as one.
  double token = static_cast<double>(IntegerField(options, where, "token", 1, kMaxSafeInteger));
  Napi::Value ctty_value = options.Get("ctty");
  int ctty = ctty_value.IsUndefined() ? -1 : static_cast<int>(CheckInteger(ctty_value, where, "options.ctty", -1, INT_MAX));

  std::vector<std::string> argv_strings{"sh", "-c", command};
  std::vector<char*> argv = CStringArray(argv_strings);
  std::vector<char*> envp = CStringArray(env_strings);

  Fd cgroup_dir;
  if (has_cgroup) {
    cgroup_dir.Reset(open(cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (cgroup_dir.get() < 0) throw ErrnoError(env, errno, "open", cgroup);
  }

  Fd stdin_read, stdin_write, out_read, out_write, err_read, err_write;
  if (ctty >= 0) {
    // The terminal is all three; the caller reads and writes its master.
  } else if (stdin_mode == "pipe") {
    MakePipe(env, stdin_read, stdin_write);
  } else {
    stdin_read.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (stdin_read.get() < 0) throw ErrnoError(env, errno, "open", "/dev/null");
  }
  if (ctty < 0) {
    MakePipe(env, out_read, out_write);
    GrowPipe(out_read.get());
  }
  if (ctty < 0 && !merge) {
    MakePipe(env, err_read, err_write);
    GrowPipe(err_read.get());
  }

  struct rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) throw ErrnoError(env, errno, "getrlimit");
  ChildPlan plan{};
  plan.shell = shell.c_str();
  plan.cwd = cwd.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.stdin_fd = ctty >= 0 ? ctty : stdin_read.get();
  plan.stdout_fd = ctty >= 0 ? ctty : out_write.get();
  plan.stderr_fd = ctty >= 0 ? ctty : merge ? out_write.get() : err_write.get();
  plan.ctty_fd = ctty;
  plan.max_fd = nofile.rlim_cur > 65536 || nofile.rlim_cur == RLIM_INFINITY ? 65536 : static_cast<int>(nofile.rlim_cur);

  Spawned spawned;
  const char* method = "clone3";
  if (force_fork || !kHaveCloneWithStack || g_clone3_unavailable || !SpawnVfork(env, plan, cgroup_dir.get(), token, spawned)) {
    method = "fork";
    SpawnFork(env, plan, cgroup, token, spawned);
  }
  NotifyChildSpawned();

  // The child's copies are what keep the pipes open now.
  stdin_read.Reset();
  out_write.Reset();
  err_write.Reset();

  Napi::Object result = Napi::Object::New(env);
  result.Set("pid", Napi::Number::New(env, spawned.pid));
  result.Set("pidfd", Napi::Number::New(env, spawned.pidfd.get()));
  result.Set("stdin", Napi::Number::New(env, stdin_write.get()));
  result.Set("stdout", Napi::Number::New(env, out_read.get()));
  result.Set("stderr", Napi::Number::New(env, err_read.get()));
  result.Set("method", Napi::String::New(env, method));
  // Only now are the descriptors the caller's.
  spawned.pidfd.release();
  stdin_write.release();
  out_read.release();
  err_read.release();
  return result;
}

}  // namespace heph
