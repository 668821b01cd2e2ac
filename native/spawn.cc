// Job spawning. See clone3(2) (CLONE_INTO_CGROUP, CLONE_PIDFD), fork(2), setsid(2),
// close_range(2), execve(2), signal-safety(7), pidfd_open(2), cgroups(7) ("cgroup.procs"),
// sigprocmask(2), getrlimit(2), waitpid(2).
//
// Between clone and exec the child runs only async-signal-safe code: the parent is a multithreaded
// Node process, so anything that may take a lock (malloc, stdio) could deadlock. Everything the
// child needs (argv, envp, paths) is prepared before the clone. An exec failure is reported as
// {stage, errno} through a close-on-exec pipe; EOF on that pipe means exec succeeded.
// A spawn that throws leaves nothing behind: every descriptor it opened is closed, and a child
// that exists by then is killed and reaped here, before the reaper could report it.
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <new>
#include <string>
#include <vector>

#include "args.h"
#include "errors.h"
#include "fd.h"
#include "reaper.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace heph {
namespace {

// Where in the child a failure happened; reported to the parent with the errno.
enum Stage : int { kSignals = 1, kSetsid, kCgroup, kChdir, kDup, kCloexec, kExec };

const char* StageName(int stage) {
  switch (stage) {
    case kSignals: return "sigprocmask";
    case kSetsid: return "setsid";
    case kCgroup: return "cgroup.procs";
    case kChdir: return "chdir";
    case kDup: return "dup2";
    case kCloexec: return "close_range";
    case kExec: return "execve";
    default: return "spawn";
  }
}

struct ChildPlan {
  const char* shell;
  const char* cwd;
  char* const* argv;
  char* const* envp;
  int stdin_fd;        // becomes fd 0
  int stdout_fd;       // becomes fd 1
  int stderr_fd;       // becomes fd 2
  int cgroup_procs_fd; // fork path only: "0" written here moves the child into the job's cgroup
  int report_fd;       // write end of the close-on-exec error pipe
  int max_fd;          // fallback bound when close_range is unavailable
};

struct ChildFailure {
  int stage;
  int err;
};

[[noreturn]] void ChildFail(const ChildPlan& plan, int stage) {
  ChildFailure failure{stage, errno};
  ssize_t ignored = write(plan.report_fd, &failure, sizeof failure);
  (void)ignored;
  _exit(127);
}

// Runs in the child. Async-signal-safe calls only.
[[noreturn]] void ChildMain(const ChildPlan& plan) {
  // Default dispositions for every signal (Node ignores SIGPIPE and handles others), then an
  // empty mask: the parent blocked everything around the clone.
  struct sigaction dfl;
  std::memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; sig++) sigaction(sig, &dfl, nullptr);  // EINVAL for KILL/STOP/internal: fine
  sigset_t empty;
  sigemptyset(&empty);
  if (sigprocmask(SIG_SETMASK, &empty, nullptr) != 0) ChildFail(plan, kSignals);

  if (setsid() < 0) ChildFail(plan, kSetsid);
  if (plan.cgroup_procs_fd >= 0 && write(plan.cgroup_procs_fd, "0", 1) != 1) ChildFail(plan, kCgroup);
  if (chdir(plan.cwd) != 0) ChildFail(plan, kChdir);
  if (dup2(plan.stdin_fd, 0) < 0 || dup2(plan.stdout_fd, 1) < 0 || dup2(plan.stderr_fd, 2) < 0) ChildFail(plan, kDup);
  if (syscall(SYS_close_range, 3U, ~0U, CLOSE_RANGE_CLOEXEC) != 0) {
    // Kernels before 5.11: mark every possible descriptor by hand.
    for (int fd = 3; fd < plan.max_fd; fd++) fcntl(fd, F_SETFD, FD_CLOEXEC);
  }
  execve(plan.shell, plan.argv, plan.envp);
  ChildFail(plan, kExec);
}

// Every signal blocked for the calling thread while it lives, so no Node handler runs in a child
// between clone and the child's reset; the previous mask is back on Restore() or at scope exit.
// sigprocmask, not pthread_sigmask: on Linux glibc both set the calling thread's mask (glibc's
// sigprocmask is pthread_sigmask since 2.32, and the per-thread rt_sigprocmask before), but
// pthread_sigmask's default symbol version is GLIBC_2.32 (libpthread merged into libc), which
// would make the addon refuse to load on glibc 2.28-2.31.
class AllSignalsBlocked {
 public:
  explicit AllSignalsBlocked(Napi::Env env) {
    sigset_t all;
    sigfillset(&all);
    if (sigprocmask(SIG_SETMASK, &all, &saved_) != 0) throw ErrnoError(env, errno, "sigprocmask");
  }
  AllSignalsBlocked(const AllSignalsBlocked&) = delete;
  AllSignalsBlocked& operator=(const AllSignalsBlocked&) = delete;
  ~AllSignalsBlocked() { Restore(); }
  // Cannot fail: the mask is one the kernel handed us.
  void Restore() {
    if (!blocked_) return;
    sigprocmask(SIG_SETMASK, &saved_, nullptr);
    blocked_ = false;
  }

 private:
  sigset_t saved_;
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

// clone3 with CLONE_PIDFD, and CLONE_INTO_CGROUP when a cgroup is given. Returns the pid, or -1
// with errno set (ENOSYS/E2BIG/EINVAL mean "this kernel cannot": the caller falls back to fork).
pid_t Clone3(int cgroup_fd, int* pidfd) {
  struct clone_args args;
  std::memset(&args, 0, sizeof args);
  args.flags = CLONE_PIDFD | (cgroup_fd >= 0 ? CLONE_INTO_CGROUP : 0);
  args.pidfd = reinterpret_cast<uint64_t>(pidfd);
  args.exit_signal = SIGCHLD;
  args.cgroup = cgroup_fd >= 0 ? static_cast<uint64_t>(cgroup_fd) : 0;
  return static_cast<pid_t>(syscall(SYS_clone3, &args, sizeof args));
}

bool g_clone3_unavailable = false;

}  // namespace

// spawn({shell, command, cwd, env, cgroup, stdin, merge, token, forceFork}) ->
//   {pid, pidfd, stdin, stdout, stderr, method}
// `cgroup` is a cgroup directory path or null. `stdin` is "null" or "pipe". With `merge`, stdout
// and stderr share one pipe and `stderr` is -1. Throws an errno error naming the failed step.
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

  std::vector<std::string> argv_strings{"sh", "-c", command};
  std::vector<char*> argv = CStringArray(argv_strings);
  std::vector<char*> envp = CStringArray(env_strings);

  Fd cgroup_dir, cgroup_procs;
  if (has_cgroup) {
    cgroup_dir.Reset(open(cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (cgroup_dir.get() < 0) throw ErrnoError(env, errno, "open", cgroup);
    std::string procs = cgroup + "/cgroup.procs";
    cgroup_procs.Reset(open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (cgroup_procs.get() < 0) throw ErrnoError(env, errno, "open", procs);
  }

  Fd stdin_read, stdin_write, out_read, out_write, err_read, err_write, report_read, report_write;
  if (stdin_mode == "pipe") {
    MakePipe(env, stdin_read, stdin_write);
  } else {
    stdin_read.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (stdin_read.get() < 0) throw ErrnoError(env, errno, "open", "/dev/null");
  }
  MakePipe(env, out_read, out_write);
  GrowPipe(out_read.get());
  if (!merge) {
    MakePipe(env, err_read, err_write);
    GrowPipe(err_read.get());
  }
  MakePipe(env, report_read, report_write);

  struct rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) throw ErrnoError(env, errno, "getrlimit");
  ChildPlan plan{};
  plan.shell = shell.c_str();
  plan.cwd = cwd.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.stdin_fd = stdin_read.get();
  plan.stdout_fd = out_write.get();
  plan.stderr_fd = merge ? out_write.get() : err_write.get();
  plan.report_fd = report_write.get();
  plan.max_fd = nofile.rlim_cur > 65536 || nofile.rlim_cur == RLIM_INFINITY ? 65536 : static_cast<int>(nofile.rlim_cur);

  AllSignalsBlocked blocked(env);
  std::lock_guard<std::mutex> table(ChildTableLock());
  Fd pidfd;
  pid_t pid = -1;
  int spawn_errno = 0;
  const char* method = "clone3";
  if (!force_fork && !g_clone3_unavailable) {
    plan.cgroup_procs_fd = -1;
    int raw_pidfd = -1;
    pid = Clone3(cgroup_dir.get(), &raw_pidfd);
    if (pid == 0) ChildMain(plan);
    if (pid > 0) {
      pidfd.Reset(raw_pidfd);
    } else {
      spawn_errno = errno;
      if (spawn_errno == ENOSYS || spawn_errno == E2BIG || spawn_errno == EINVAL) g_clone3_unavailable = true;
    }
  }
  if (pid < 0 && (force_fork || g_clone3_unavailable)) {
    method = "fork";
    plan.cgroup_procs_fd = cgroup_procs.get();
    pid = fork();
    if (pid == 0) ChildMain(plan);
    if (pid < 0) {
      spawn_errno = errno;
    } else {
      pidfd.Reset(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
      if (pidfd.get() < 0) {
        // Without a pidfd the job could not be signalled safely: undo the spawn.
        int err = errno;
        KillAndReap(pid);
        throw ErrnoError(env, err, "pidfd_open");
      }
    }
  }
  blocked.Restore();
  if (pid < 0) throw ErrnoError(env, spawn_errno, method);

  // The child's copies are what keep the pipes open now.
  stdin_read.Reset();
  out_write.Reset();
  err_write.Reset();
  report_write.Reset();

  ChildFailure failure{};
  ssize_t got;
  do got = read(report_read.get(), &failure, sizeof failure);
  while (got < 0 && errno == EINTR);
  if (got != 0) {
    int err = got < 0 ? errno : 0;
    // Exec failed (the child has exited 127), or the pipe failed us: no job either way.
    KillAndReap(pid);
    if (got == static_cast<ssize_t>(sizeof failure)) {
      throw ErrnoError(env, failure.err, StageName(failure.stage),
                       failure.stage == kChdir ? cwd : failure.stage == kExec ? shell : "");
    }
    throw ErrnoError(env, got < 0 ? err : EPROTO, "read", "the spawn error pipe");
  }
  try {
    RegisterChildLocked(pid, token);
  } catch (const std::bad_alloc&) {
    KillAndReap(pid);
    throw ErrnoError(env, ENOMEM, "spawn");
  }
  NotifyChildSpawned();

  Napi::Object result = Napi::Object::New(env);
  result.Set("pid", Napi::Number::New(env, pid));
  result.Set("pidfd", Napi::Number::New(env, pidfd.get()));
  result.Set("stdin", Napi::Number::New(env, stdin_write.get()));
  result.Set("stdout", Napi::Number::New(env, out_read.get()));
  result.Set("stderr", Napi::Number::New(env, merge ? -1 : err_read.get()));
  result.Set("method", Napi::String::New(env, method));
  // Only now are the descriptors the caller's.
  pidfd.release();
  stdin_write.release();
  out_read.release();
  err_read.release();
  return result;
}

}  // namespace heph
