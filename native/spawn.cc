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
// `spawn` does all of it on the calling thread (the JavaScript one); `spawnAsync` on one of a few
// spawner threads, so that the JavaScript thread goes on while the child execs and several spawns
// run at once. Either way the child is registered with the reaper before the spawn ends
// (reaper.h, SpawnUnderWay), and spawnAsync's result reaches JavaScript ahead of the reaper's
// report of that child.
#include "spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstdint>
#include <cstring>
#include <deque>
#include <mutex>
#include <new>
#include <string>
#include <system_error>
#include <thread>
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

// One group per v1 controller that limits a job: memory, pids, cpu.
constexpr int kMaxJoinGroups = 4;

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
  // cgroup.procs of the job's groups in v1 hierarchies (its limits): the child joins each, on
  // both paths, before it execs (CLONE_INTO_CGROUP reaches only the v2 tree).
  int join_fds[kMaxJoinGroups];
  int join_count;
  int report_fd;       // fork path only: write end of the close-on-exec error pipe; -1 otherwise
  int max_fd;          // fallback bound when close_range is unavailable
  // vfork path: written by the child in our memory (CLONE_VM) just before it exits; we read it
  // once clone3 has returned, which CLONE_VFORK holds back until the child has exec'd or exited.
  ChildFailure failure;
};

// A failed step of a spawn: thrown on whichever thread spawns, turned into an errno error (the
// step as `syscall`, maybe a `path`) on the JavaScript thread.
struct SpawnFailure {
  int err;
  std::string syscall;
  std::string path;
};

Napi::Error ToError(Napi::Env env, const SpawnFailure& failure) {
  return ErrnoError(env, failure.err, failure.syscall.c_str(), failure.path);
}

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
  for (int i = 0; i < plan->join_count; i++) {
    if (write(plan->join_fds[i], "0", 1) != 1) ChildFail(plan, kCgroup);
  }
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
  AllSignalsBlocked() {
    unsigned char all[kKernelSigsetBytes];
    std::memset(all, 0xff, sizeof all);
    if (syscall(SYS_rt_sigprocmask, SIG_SETMASK, all, saved_, kKernelSigsetBytes) != 0) {
      throw SpawnFailure{errno, "rt_sigprocmask", ""};
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

// For a child whose spawn failed after it was created, before it was registered: the spawn is
// under way (SpawnUnderWay), so the reaper has left it alone and `pid` still names it. SIGKILL,
// then reap it here.
void KillAndReap(pid_t pid) {
  kill(pid, SIGKILL);  // our own unreaped child: cannot fail
  int status;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
}

void MakePipe(Fd& read_end, Fd& write_end) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) throw SpawnFailure{errno, "pipe2", ""};
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

// The child's start time, field 22 of /proc/PID/stat (clock ticks since boot), as the text there:
// with the pid it names the process for good. Read while `pidfd` shows the child unreaped (the
// read came first, so it was of our child, not of a process that got its pid after the reaper
// reaped it). Empty when it could not be read or the child was already reaped.
std::string ChildStartTime(pid_t pid, int pidfd) {
  std::string file = "/proc/" + std::to_string(pid) + "/stat";
  Fd fd(open(file.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) return "";
  char buffer[1024];
  ssize_t got;
  do got = read(fd.get(), buffer, sizeof buffer - 1);
  while (got < 0 && errno == EINTR);
  if (got <= 0) return "";
  buffer[got] = '\0';
  // The command name may hold spaces and ')': the fields start after the last ')'.
  const char* field = std::strrchr(buffer, ')');
  if (field == nullptr) return "";
  field += 2;  // ") " then the state, field 3
  for (int index = 3; index < 22 && field != nullptr; index++) {
    field = std::strchr(field, ' ');
    if (field != nullptr) field++;
  }
  if (field == nullptr) return "";
  std::string start(field, std::strcspn(field, " \n"));
  if (syscall(SYS_pidfd_send_signal, pidfd, 0, nullptr, 0) != 0) return "";
  return start;
}

// The inode of a pipe end, for the reply's `pipes`; -1 when fd is -1 (or, in theory, statx fails).
// statx(2) (glibc 2.28) rather than fstat, whose 64-bit symbol is glibc 2.33's.
double PipeInode(int fd) {
  struct statx st;
  if (fd < 0 || statx(fd, "", AT_EMPTY_PATH, STATX_INO, &st) != 0 || (st.stx_mask & STATX_INO) == 0) return -1;
  return static_cast<double>(st.stx_ino);
}

// Set once a clone3 said ENOSYS/E2BIG/EINVAL ("this kernel cannot"): every later spawn forks.
std::atomic<bool> g_clone3_unavailable{false};

// The vfork child's stack. The child's frames take well under a kilobyte (no libc call it makes
// uses more than a few hundred bytes); 64 KiB leaves room as glibc's posix_spawn does (32 KiB plus
// the arguments). One for spawn's callers and one per spawner thread, made at the first spawn that
// needs it and kept for good: CLONE_VFORK means the previous child is done with a stack (exec'd
// or gone) when clone3 returns. (Not thread_local: that would make the addon need the dynamic
// loader's TLS entry point, test/unit/native-symbols.) A PROT_NONE guard page below it turns an
// overflow into a fault in the child instead of a write into whatever the kernel placed there.
constexpr size_t kChildStackBytes = 64 * 1024;

struct ChildStack {
  void* low = nullptr;  // lowest usable byte; the guard page is just below
  size_t size = 0;
};
// spawn's, held by its caller across the clone (a process may run the addon on more than one
// JavaScript thread); a spawner thread keeps its own.
ChildStack g_spawn_child_stack;
std::mutex g_spawn_child_stack_mutex;

// Maps `stack` unless done already. 0, or the errno of the failed call.
int MapChildStack(ChildStack& stack) {
  if (stack.low != nullptr) return 0;
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
  stack = {low, size};
  return 0;
}

// What a spawn path hands back: the child, created, exec'd and registered with the reaper.
struct Spawned {
  pid_t pid = -1;
  Fd pidfd;
};

// The failure of a child that failed before or at execve.
SpawnFailure ChildError(const ChildFailure& failure, const ChildPlan& plan) {
  const char* path = failure.stage == kChdir ? plan.cwd : failure.stage == kExec ? plan.shell : "";
  return SpawnFailure{failure.err, StageName(failure.stage), path};
}

// The vfork path, for a spawn under way; the child is not registered yet. False, with nothing
// created, when this kernel
// cannot clone3 this way (no clone3, or no CLONE_INTO_CGROUP: ENOSYS, E2BIG, EINVAL): the caller
// falls back to fork.
bool SpawnVfork(ChildPlan& plan, int cgroup_fd, ChildStack& stack, Spawned& out) {
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

  int stack_err = MapChildStack(stack);
  if (stack_err != 0) throw SpawnFailure{stack_err, "mmap", "the child stack"};
  args.stack = reinterpret_cast<uint64_t>(stack.low);
  args.stack_size = stack.size;
  AllSignalsBlocked blocked;
  // This thread sleeps in here until the child has exec'd or exited.
  long rc = CloneWithStack(&args, sizeof args, ChildEntry, &plan);
  blocked.Restore();
  if (rc < 0) {
    int err = static_cast<int>(-rc);
    if (err == ENOSYS || err == E2BIG || err == EINVAL) {
      g_clone3_unavailable = true;
      return false;
    }
    throw SpawnFailure{err, "clone3", ""};
  }
  pid_t pid = static_cast<pid_t>(rc);
  Fd pidfd(raw_pidfd);
  // A child killed before it reached execve also lets us resume, with no failure written: it is
  // then a job that died at once, and the reaper reports how (as posix_spawn treats it).
  ChildFailure failure = plan.failure;
  if (failure.stage != 0) {
    KillAndReap(pid);  // it has exited 127, or is about to
    throw ChildError(failure, plan);
  }
  out.pid = pid;
  out.pidfd.Reset(pidfd.release());
  return true;
}

// The fork path, for a spawn under way; the child is not registered yet. The child joins the
// cgroup through cgroup.procs and reports an exec failure through a close-on-exec pipe; this
// thread waits on that pipe for exec.
void SpawnFork(ChildPlan& plan, const std::string& cgroup, Spawned& out) {
  Fd cgroup_procs;
  if (!cgroup.empty()) {
    std::string procs = cgroup + "/cgroup.procs";
    cgroup_procs.Reset(open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (cgroup_procs.get() < 0) throw SpawnFailure{errno, "open", procs};
  }
  Fd report_read, report_write;
  MakePipe(report_read, report_write);
  plan.cgroup_procs_fd = cgroup_procs.get();
  plan.report_fd = report_write.get();
  plan.failure = ChildFailure{0, 0};

  AllSignalsBlocked blocked;
  pid_t pid = fork();
  if (pid == 0) ChildMain(&plan);
  if (pid < 0) throw SpawnFailure{errno, "fork", ""};
  Fd pidfd(static_cast<int>(syscall(SYS_pidfd_open, pid, 0)));
  if (pidfd.get() < 0) {
    // Without a pidfd the job could not be signalled safely: undo the spawn.
    int err = errno;
    KillAndReap(pid);
    throw SpawnFailure{err, "pidfd_open", ""};
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
    if (got == static_cast<ssize_t>(sizeof failure)) throw ChildError(failure, plan);
    throw SpawnFailure{got < 0 ? err : EPROTO, "read", "the spawn error pipe"};
  }
  out.pid = pid;
  out.pidfd.Reset(pidfd.release());
}

// A spawn's options, read on the JavaScript thread, so the spawn itself may run on any thread.
struct SpawnRequest {
  std::string shell;
  std::string command;
  std::string cwd;
  std::vector<std::string> env;
  std::string cgroup;  // empty: none
  std::vector<std::string> join_groups;  // v1 group directories the child joins
  bool stdin_pipe = false;
  bool merge = false;
  bool force_fork = false;
  double token = 0;
  int ctty = -1;
};

// A spawned job leader, until its descriptors are handed to JavaScript.
struct SpawnOutcome {
  pid_t pid = -1;
  Fd pidfd;
  Fd stdin_write;
  Fd out_read;
  Fd err_read;
  const char* method = "clone3";
  std::string start;
  std::vector<double> pipes;
};

SpawnRequest ReadSpawnRequest(Napi::Env env, Napi::Value value, const char* where) {
  if (!value.IsObject()) ThrowArgumentError(env, where, "options", "an object", value);
  Napi::Object options = value.As<Napi::Object>();
  SpawnRequest request;
  request.shell = StringField(options, where, "shell");
  request.command = StringField(options, where, "command");
  request.cwd = StringField(options, where, "cwd");
  request.env = StringArray(env, options.Get("env"), "options.env");
  Napi::Value cgroup_value = options.Get("cgroup");
  if (!cgroup_value.IsNull()) {
    if (!cgroup_value.IsString()) ThrowArgumentError(env, where, "options.cgroup", "a cgroup directory or null", cgroup_value);
    request.cgroup = StringField(options, where, "cgroup", true);
  }
  Napi::Value join_value = options.Get("joinGroups");
  if (!join_value.IsUndefined()) request.join_groups = StringArray(env, join_value, "options.joinGroups");
  if (request.join_groups.size() > kMaxJoinGroups) ThrowArgumentError(env, where, "options.joinGroups", "at most 4 group directories", join_value);
  std::string stdin_mode = StringField(options, where, "stdin");
  if (stdin_mode != "null" && stdin_mode != "pipe") ThrowArgumentError(env, where, "options.stdin", "\"null\" or \"pipe\"", options.Get("stdin"));
  request.stdin_pipe = stdin_mode == "pipe";
  request.merge = BooleanField(options, where, "merge");
  request.force_fork = BooleanField(options, where, "forceFork");
  // 0 is what the reaper reports for an orphan; a job given 0 would read as one.
  request.token = static_cast<double>(IntegerField(options, where, "token", 1, kMaxSafeInteger));
  Napi::Value ctty_value = options.Get("ctty");
  request.ctty = ctty_value.IsUndefined() ? -1 : static_cast<int>(CheckInteger(ctty_value, where, "options.ctty", -1, INT_MAX));
  return request;
}

// The spawn itself, on any thread, under the caller's SpawnUnderWay, which registers the child
// (RegisterOutcome) before that ends. Throws SpawnFailure, and then nothing is left behind.
// The request is the caller's to give up: its environment becomes the child's envp in place.
void RunSpawn(SpawnRequest& request, ChildStack& stack, SpawnOutcome& out) {
  std::vector<std::string> argv_strings{"sh", "-c", request.command};
  std::vector<char*> argv = CStringArray(argv_strings);
  std::vector<char*> envp = CStringArray(request.env);
  bool has_cgroup = !request.cgroup.empty();
  int ctty = request.ctty;

  Fd cgroup_dir;
  if (has_cgroup) {
    cgroup_dir.Reset(open(request.cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (cgroup_dir.get() < 0) throw SpawnFailure{errno, "open", request.cgroup};
  }

  Fd join_fds[kMaxJoinGroups];
  for (size_t i = 0; i < request.join_groups.size(); i++) {
    std::string procs = request.join_groups[i] + "/cgroup.procs";
    join_fds[i].Reset(open(procs.c_str(), O_WRONLY | O_CLOEXEC));
    if (join_fds[i].get() < 0) throw SpawnFailure{errno, "open", procs};
  }

  Fd stdin_read, stdin_write, out_read, out_write, err_read, err_write;
  if (ctty >= 0) {
    // The terminal is all three; the caller reads and writes its master.
  } else if (request.stdin_pipe) {
    MakePipe(stdin_read, stdin_write);
  } else {
    stdin_read.Reset(open("/dev/null", O_RDONLY | O_CLOEXEC));
    if (stdin_read.get() < 0) throw SpawnFailure{errno, "open", "/dev/null"};
  }
  if (ctty < 0) {
    MakePipe(out_read, out_write);
    GrowPipe(out_read.get());
  }
  if (ctty < 0 && !request.merge) {
    MakePipe(err_read, err_write);
    GrowPipe(err_read.get());
  }

  struct rlimit nofile{};
  if (getrlimit(RLIMIT_NOFILE, &nofile) != 0) throw SpawnFailure{errno, "getrlimit", ""};
  ChildPlan plan{};
  plan.shell = request.shell.c_str();
  plan.cwd = request.cwd.c_str();
  plan.argv = argv.data();
  plan.envp = envp.data();
  plan.stdin_fd = ctty >= 0 ? ctty : stdin_read.get();
  plan.stdout_fd = ctty >= 0 ? ctty : out_write.get();
  plan.stderr_fd = ctty >= 0 ? ctty : request.merge ? out_write.get() : err_write.get();
  plan.ctty_fd = ctty;
  plan.join_count = static_cast<int>(request.join_groups.size());
  for (int i = 0; i < plan.join_count; i++) plan.join_fds[i] = join_fds[i].get();
  plan.max_fd = nofile.rlim_cur > 65536 || nofile.rlim_cur == RLIM_INFINITY ? 65536 : static_cast<int>(nofile.rlim_cur);

  Spawned spawned;
  out.method = "clone3";
  if (request.force_fork || !kHaveCloneWithStack || g_clone3_unavailable || !SpawnVfork(plan, cgroup_dir.get(), stack, spawned)) {
    out.method = "fork";
    SpawnFork(plan, request.cgroup, spawned);
  }
  NotifyChildSpawned();

  // The child's copies are what keep the pipes open now.
  stdin_read.Reset();
  out_write.Reset();
  err_write.Reset();

  // Read here rather than by the caller: these are most of what a spawn costs after the exec, in
  // a few system calls instead of a JavaScript file read and three stats.
  out.start = ChildStartTime(spawned.pid, spawned.pidfd.get());
  for (int fd : {stdin_write.get(), out_read.get(), request.merge ? -1 : err_read.get()}) {
    double inode = PipeInode(fd);
    if (inode >= 0) out.pipes.push_back(inode);
  }
  out.pid = spawned.pid;
  out.pidfd.Reset(spawned.pidfd.release());
  out.stdin_write.Reset(stdin_write.release());
  out.out_read.Reset(out_read.release());
  out.err_read.Reset(err_read.release());
}

// The outcome as spawn's result; only now are the descriptors the caller's.
Napi::Object OutcomeToJs(Napi::Env env, SpawnOutcome& outcome) {
  Napi::Object result = Napi::Object::New(env);
  result.Set("pid", Napi::Number::New(env, outcome.pid));
  result.Set("pidfd", Napi::Number::New(env, outcome.pidfd.get()));
  result.Set("stdin", Napi::Number::New(env, outcome.stdin_write.get()));
  result.Set("stdout", Napi::Number::New(env, outcome.out_read.get()));
  result.Set("stderr", Napi::Number::New(env, outcome.err_read.get()));
  result.Set("method", Napi::String::New(env, outcome.method));
  result.Set("start", outcome.start.empty() ? env.Null() : Napi::String::New(env, outcome.start));
  Napi::Array pipes = Napi::Array::New(env);
  for (double inode : outcome.pipes) pipes.Set(pipes.Length(), Napi::Number::New(env, inode));
  result.Set("pipes", pipes);
  outcome.pidfd.release();
  outcome.stdin_write.release();
  outcome.out_read.release();
  outcome.err_read.release();
  return result;
}

// Registers the spawned child with the reaper, posting `result` with it when given (RegisterChild).
// A registration that cannot be made (no memory) undoes the spawn.
void RegisterOutcome(const SpawnRequest& request, SpawnOutcome& out, MainThreadEvent* result) {
  try {
    RegisterChild(out.pid, request.token, result);
  } catch (const std::bad_alloc&) {
    KillAndReap(out.pid);
    out.pid = -1;
    for (Fd* fd : {&out.pidfd, &out.stdin_write, &out.out_read, &out.err_read}) fd->Reset();
    throw SpawnFailure{ENOMEM, "spawn", ""};
  }
}

// A whole spawn, under way from before the clone until its child is registered (and `result`, if
// given, posted in that step); whatever it throws as a SpawnFailure (a failed allocation: ENOMEM).
bool TrySpawn(SpawnRequest& request, ChildStack& stack, SpawnOutcome& out, SpawnFailure& failure, MainThreadEvent* result) {
  try {
    SpawnUnderWay under_way;
    RunSpawn(request, stack, out);
    RegisterOutcome(request, out, result);
    return true;
  } catch (const SpawnFailure& thrown) {
    failure = thrown;
  } catch (const std::exception&) {
    failure = SpawnFailure{ENOMEM, "spawn", ""};
  }
  return false;
}

// One spawnAsync call: run on a spawner thread, answered on the JavaScript thread through the
// reaper's queue (reaper.h, PostInOrder), ahead of any report of its child's exit.
class SpawnTask : public MainThreadEvent {
 public:
  SpawnTask(SpawnRequest request, Napi::Function callback) : request_(std::move(request)), callback_(Napi::Persistent(callback)) {}

  // On a spawner thread. A spawn that succeeds posts this task as it registers its child, so the
  // task is delivered before the reaper can report that child; a failed one posts it here. When
  // the queue is closed (the process is exiting) the task is left, with its JavaScript reference,
  // which cannot be released off that thread.
  void Run(ChildStack& stack) {
    ok_ = true;  // read only on the JavaScript thread, after the post
    if (!TrySpawn(request_, stack, outcome_, failure_, this)) {
      ok_ = false;
      PostInOrder(this);
    }
  }

  void Deliver(Napi::Env env, Napi::Function) override {
    Napi::HandleScope scope(env);
    ReleaseQueue(env);  // taken by SpawnAsync
    if (ok_) {
      Napi::Object result = OutcomeToJs(env, outcome_);
      callback_.Call({env.Null(), result});
    } else {
      callback_.Call({ToError(env, failure_).Value()});
    }
  }

 private:
  SpawnRequest request_;
  Napi::FunctionReference callback_;
  bool ok_ = false;
  SpawnOutcome outcome_;
  SpawnFailure failure_{0, "", ""};
};

// The spawner threads: started as spawns need them, up to kSpawnerThreads, each spawning one job
// at a time (a vfork spawn sleeps until its child has exec'd, so several spawn at once only on
// several threads). They live as long as the process. A pthread condition variable, as in
// reaper.cc, for the libstdc++ versions the addon must load with.
constexpr int kSpawnerThreads = 2;
static_assert(kSpawnerThreads + 1 <= static_cast<int>(kMaxSpawnsUnderWay), "the spawner threads and the main thread spawn at once");

struct SpawnerPool {
  pthread_mutex_t mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t ready = PTHREAD_COND_INITIALIZER;
  std::deque<SpawnTask*> queue;
  int threads = 0;
  int idle = 0;
};

SpawnerPool& Pool() {
  static SpawnerPool* pool = new SpawnerPool();  // never destroyed: its threads wait on it
  return *pool;
}

void SpawnerLoop() {
  // Signals for the process are handled on its other threads: this one spends most of its time
  // asleep in a spawn, where they are blocked anyway (AllSignalsBlocked).
  // (A raw call, as AllSignalsBlocked's: glibc's pthread_sigmask is a GLIBC_2.32 symbol.)
  unsigned char all[kKernelSigsetBytes];
  std::memset(all, 0xff, sizeof all);
  syscall(SYS_rt_sigprocmask, SIG_BLOCK, all, nullptr, kKernelSigsetBytes);
  SpawnerPool& pool = Pool();
  ChildStack stack;
  for (;;) {
    pthread_mutex_lock(&pool.mutex);
    pool.idle++;
    while (pool.queue.empty()) pthread_cond_wait(&pool.ready, &pool.mutex);
    pool.idle--;
    SpawnTask* task = pool.queue.front();
    pool.queue.pop_front();
    pthread_mutex_unlock(&pool.mutex);
    task->Run(stack);
  }
}

// Queues `task`, starting a spawner thread when none is idle and fewer than kSpawnerThreads run.
// Throws SpawnFailure (nothing queued) when no thread runs and none can be started.
void Submit(SpawnTask* task) {
  SpawnerPool& pool = Pool();
  pthread_mutex_lock(&pool.mutex);
  bool start = pool.idle == 0 && pool.threads < kSpawnerThreads;
  try {
    pool.queue.push_back(task);
    if (start) {
      std::thread(SpawnerLoop).detach();
      pool.threads++;
    }
  } catch (const std::system_error& error) {
    if (pool.threads == 0) {
      pool.queue.pop_back();
      pthread_mutex_unlock(&pool.mutex);
      throw SpawnFailure{error.code().value(), "pthread_create", ""};
    }
    // The running threads will take it.
  } catch (const std::bad_alloc&) {
    pthread_mutex_unlock(&pool.mutex);
    throw SpawnFailure{ENOMEM, "spawn", ""};
  }
  pthread_cond_signal(&pool.ready);
  pthread_mutex_unlock(&pool.mutex);
}

}  // namespace

// spawn({shell, command, cwd, env, cgroup, stdin, merge, token, forceFork, ctty?}) ->
//   {pid, pidfd, stdin, stdout, stderr, method, start, pipes}
// `start` is the child's start time (null if it was reaped already), `pipes` the inodes of the
// stdin, stdout and stderr pipes it got (those that are pipes).
// `cgroup` is a cgroup directory path or null. `stdin` is "null" or "pipe". With `merge`, stdout
// and stderr share one pipe and `stderr` is -1. With `ctty` (a terminal's slave from openPty; -1 or
// left out: none), the child's controlling terminal and fds 0-2 are that terminal, no pipe is
// made (`stdin` and `merge` do not apply) and stdin, stdout and stderr are -1. Throws an errno
// error naming the failed step. Runs on the calling thread, which sleeps until the child has exec'd.
Napi::Value Spawn(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "spawn(options)";
  if (info.Length() != 1) ThrowArgumentError(env, where, "options", "an object", info[0]);
  SpawnRequest request = ReadSpawnRequest(env, info[0], where);
  SpawnOutcome outcome;
  SpawnFailure failure{0, "", ""};
  // The reaper's report of the child comes later, in a turn of its own, so the caller has the
  // result first.
  bool ok;
  {
    std::lock_guard<std::mutex> stack(g_spawn_child_stack_mutex);
    ok = TrySpawn(request, g_spawn_child_stack, outcome, failure, nullptr);
  }
  if (!ok) throw ToError(env, failure);
  return OutcomeToJs(env, outcome);
}

// spawnAsync(options, callback): spawn's work on a spawner thread, so this thread goes on while
// the child execs; callback(error) or callback(null, result) on this thread, with what spawn
// throws or returns, before the reaper's report of that child. Throws (and never calls back) for
// options spawn would refuse, or when no spawner thread can be started.
Napi::Value SpawnAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "spawnAsync(options, callback)";
  SpawnRequest request = ReadSpawnRequest(env, info[0], where);
  Napi::Function callback = FunctionArg(info, 1, where, "callback");
  // A spawn under way keeps the event loop alive until its result is delivered, through the
  // reaper's queue: there is none before startReaper.
  if (!HoldQueue(env)) ThrowTypeError(env, "spawnAsync needs the reaper's queue: call startReaper first");
  auto* task = new SpawnTask(std::move(request), callback);
  try {
    Submit(task);
  } catch (const SpawnFailure& failure) {
    delete task;
    ReleaseQueue(env);
    throw ToError(env, failure);
  }
  return env.Undefined();
}

}  // namespace heph
