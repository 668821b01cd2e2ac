// Job spawning. See clone3(2) (CLONE_INTO_CGROUP, CLONE_PIDFD), fork(2), setsid(2),
// close_range(2), execve(2), signal-safety(7), pidfd_open(2), cgroups(7) ("cgroup.procs").
//
// Between clone and exec the child runs only async-signal-safe code: the parent is a multithreaded
// Node process, so anything that may take a lock (malloc, stdio) could deadlock. Everything the
// child needs (argv, envp, paths) is prepared before the clone. An exec failure is reported as
// {stage, errno} through a close-on-exec pipe; EOF on that pipe means exec succeeded.
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
#include <string>
#include <vector>

#include "errors.h"
#include "reaper.h"

#ifndef CLOSE_RANGE_CLOEXEC
#define CLOSE_RANGE_CLOEXEC (1U << 2)
#endif

namespace heph {
namespace {

// Where in the child a failure happened; reported to the parent with the errno.
enum Stage : int { kSetsid = 1, kCgroup, kChdir, kDup, kCloexec, kExec };

const char* StageName(int stage) {
  switch (stage) {
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
  sigprocmask(SIG_SETMASK, &empty, nullptr);

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

// Owns descriptors until released, so every error path closes what it opened.
class Fd {
 public:
  Fd() = default;
  explicit Fd(int fd) : fd_(fd) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { Reset(); }
  int get() const { return fd_; }
  int release() { int fd = fd_; fd_ = -1; return fd; }
  void Reset(int fd = -1) { if (fd_ >= 0) close(fd_); fd_ = fd; }
 private:
  int fd_ = -1;
};

void MakePipe(Napi::Env env, Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw ErrnoError(env, errno, "pipe2");
  read_end.Reset(fds[0]);
  write_end.Reset(fds[1]);
}

// A bigger pipe means fewer wakeups for a job that floods; failure (pipe-max-size) is harmless.
void GrowPipe(int fd) { fcntl(fd, F_SETPIPE_SZ, 1 << 20); }

std::vector<std::string> StringArray(Napi::Env env, Napi::Value value, const char* name) {
  if (!value.IsArray()) ThrowTypeError(env, std::string("spawn: ") + name + " must be an array of strings");
  Napi::Array array = value.As<Napi::Array>();
  std::vector<std::string> out;
  out.reserve(array.Length());
  for (uint32_t i = 0; i < array.Length(); i++) {
    Napi::Value item = array.Get(i);
    if (!item.IsString()) ThrowTypeError(env, std::string("spawn: ") + name + " must be an array of strings");
    std::string text = item.As<Napi::String>().Utf8Value();
    if (text.find('\0') != std::string::npos) ThrowTypeError(env, std::string("spawn: ") + name + " entries must not contain NUL");
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

std::string StringField(Napi::Env env, Napi::Object options, const char* name) {
  Napi::Value value = options.Get(name);
  if (!value.IsString()) ThrowTypeError(env, std::string("spawn: options.") + name + " must be a string");
  std::string text = value.As<Napi::String>().Utf8Value();
  if (text.find('\0') != std::string::npos) ThrowTypeError(env, std::string("spawn: options.") + name + " must not contain NUL");
  return text;
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
  if (info.Length() != 1 || !info[0].IsObject()) ThrowTypeError(env, "spawn(options): options must be an object");
  Napi::Object options = info[0].As<Napi::Object>();
  std::string shell = StringField(env, options, "shell");
  std::string command = StringField(env, options, "command");
  std::string cwd = StringField(env, options, "cwd");
  std::vector<std::string> env_strings = StringArray(env, options.Get("env"), "env");
  Napi::Value cgroup_value = options.Get("cgroup");
  if (!cgroup_value.IsNull() && !cgroup_value.IsString()) ThrowTypeError(env, "spawn: options.cgroup must be a string or null");
  std::string stdin_mode = StringField(env, options, "stdin");
  if (stdin_mode != "null" && stdin_mode != "pipe") ThrowTypeError(env, "spawn: options.stdin must be \"null\" or \"pipe\"");
  bool merge = options.Get("merge").ToBoolean();
  bool force_fork = options.Get("forceFork").ToBoolean();
  Napi::Value token_value = options.Get("token");
  if (!token_value.IsNumber()) ThrowTypeError(env, "spawn: options.token must be a number");
  double token = token_value.As<Napi::Number>().DoubleValue();

  std::vector<std::string> argv_strings{"sh", "-c", command};
  std::vector<char*> argv = CStringArray(argv_strings);
  std::vector<char*> envp = CStringArray(env_strings);

  Fd cgroup_dir, cgroup_procs;
  if (cgroup_value.IsString()) {
    std::string path = cgroup_value.As<Napi::String>().Utf8Value();
    int fd = open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) throw ErrnoError(env, errno, "open", path);
    cgroup_dir.Reset(fd);
    std::string procs = path + "/cgroup.procs";
    fd = open(procs.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) throw ErrnoError(env, errno, "open", procs);
    cgroup_procs.Reset(fd);
  }

  Fd stdin_read, stdin_write, out_read, out_write, err_read, err_write, report_read, report_write;
  if (stdin_mode == "pipe") {
    MakePipe(env, stdin_read, stdin_write);
  } else {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd < 0) throw ErrnoError(env, errno, "open", "/dev/null");
    stdin_read.Reset(fd);
  }
  MakePipe(env, out_read, out_write);
  GrowPipe(out_read.get());
  if (!merge) {
    MakePipe(env, err_read, err_write);
    GrowPipe(err_read.get());
  }
  MakePipe(env, report_read, report_write);

  struct rlimit nofile{};
  getrlimit(RLIMIT_NOFILE, &nofile);
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

  // Block every signal so no Node handler runs in the child between clone and the reset.
  sigset_t all, saved;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &saved);

  std::lock_guard<std::mutex> table(ChildTableLock());
  int pidfd = -1;
  pid_t pid = -1;
  const char* method = "clone3";
  if (!force_fork && !g_clone3_unavailable) {
    plan.cgroup_procs_fd = -1;
    pid = Clone3(cgroup_dir.get(), &pidfd);
    if (pid == 0) ChildMain(plan);
    if (pid < 0 && (errno == ENOSYS || errno == E2BIG || errno == EINVAL)) g_clone3_unavailable = true;
  }
  if (pid < 0 && (force_fork || g_clone3_unavailable)) {
    method = "fork";
    plan.cgroup_procs_fd = cgroup_procs.get();
    pid = fork();
    if (pid == 0) ChildMain(plan);
    if (pid > 0) pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));  // still unreaped: we hold the table lock
  }
  int clone_errno = errno;
  pthread_sigmask(SIG_SETMASK, &saved, nullptr);
  if (pid < 0) throw ErrnoError(env, clone_errno, method);

  // The child's copies are what keep the pipes open now.
  stdin_read.Reset();
  out_write.Reset();
  err_write.Reset();
  report_write.Reset();

  ChildFailure failure{};
  ssize_t got;
  do got = read(report_read.get(), &failure, sizeof failure);
  while (got < 0 && errno == EINTR);
  if (got == static_cast<ssize_t>(sizeof failure)) {
    // Exec failed: reap the child here so nothing is left; the reaper sees ECHILD and skips it.
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (pidfd >= 0) close(pidfd);
    throw ErrnoError(env, failure.err, StageName(failure.stage),
                     failure.stage == kChdir ? cwd : failure.stage == kExec ? shell : "");
  }
  RegisterChildLocked(pid, token);
  NotifyChildSpawned();

  Napi::Object result = Napi::Object::New(env);
  result.Set("pid", Napi::Number::New(env, pid));
  result.Set("pidfd", Napi::Number::New(env, pidfd));
  result.Set("stdin", Napi::Number::New(env, stdin_write.get() >= 0 ? stdin_write.release() : -1));
  result.Set("stdout", Napi::Number::New(env, out_read.release()));
  result.Set("stderr", Napi::Number::New(env, merge ? -1 : err_read.release()));
  result.Set("method", Napi::String::New(env, method));
  return result;
}

}  // namespace heph
