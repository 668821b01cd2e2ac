// The reaper thread. See waitid(2), prctl(2) PR_SET_CHILD_SUBREAPER, proc(5)
// (/proc/PID/task/TID/children).
//
// Protocol that makes attribution race-free: the thread first *peeks* with WEXITED|WNOWAIT, which
// leaves the child a zombie so its pid cannot be reused; it then takes the child-table lock (spawn
// holds it from before clone until the new pid is registered), looks up the token, and only then
// reaps that one pid. A child the spawn path reaped itself (exec failed) yields ECHILD and is skipped.
#include "reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include "args.h"
#include "errors.h"

namespace heph {
namespace {

struct Reaped {
  pid_t pid;
  double token;  // 0 for an orphan we never spawned
  int code;      // exit code, or -1 when killed
  int signal;    // terminating signal, or 0
};

// Process-lifetime state, deliberately never destroyed: the reaper thread blocks on these until
// the process exits, and running their destructors at exit would wait for it forever
// (pthread_cond_destroy waits for its waiters).
// The sleep between "no children" and the next spawn is a plain pthread condition variable, not
// std::condition_variable: libstdc++ 12 exports condition_variable::wait only at GLIBCXX_3.4.30,
// and an addon that needs it does not load with the libstdc++ of RHEL 8/9, Debian 10/11 or
// Ubuntu 20.04 (test/unit/native-symbols.test.ts holds the line).
struct ReaperState {
  std::mutex table_mutex;
  std::unordered_map<pid_t, double> tokens;
  // Threads that have spawned a child (by thread id): with the main thread, the only ones whose
  // /proc children files can list a child of ours (see AdoptedChildren).
  std::vector<pid_t> spawning_threads;
  pthread_mutex_t sleep_mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t have_children = PTHREAD_COND_INITIALIZER;
  bool spawned_since_echild = false;
  bool started = false;
  Napi::ThreadSafeFunction report;
};

ReaperState& State() {
  static ReaperState* state = new ReaperState();
  return *state;
}

void CallJs(Napi::Env env, Napi::Function callback, Reaped* data) {
  if (env != nullptr && callback != nullptr) {
    Napi::Object event = Napi::Object::New(env);
    event.Set("pid", Napi::Number::New(env, data->pid));
    event.Set("token", Napi::Number::New(env, data->token));
    event.Set("code", data->code < 0 ? env.Null() : Napi::Number::New(env, data->code));
    event.Set("signal", Napi::Number::New(env, data->signal));
    callback.Call({event});
  }
  delete data;
}

// These fail only on a misused mutex or condition variable (EINVAL, EPERM), a bug with no JS
// caller to report to on this thread: abort, as std::mutex / std::condition_variable would.
void Check(int status) {
  if (status != 0) std::abort();
}

void WaitForChildren() {
  ReaperState& state = State();
  Check(pthread_mutex_lock(&state.sleep_mutex));
  while (!state.spawned_since_echild) Check(pthread_cond_wait(&state.have_children, &state.sleep_mutex));
  state.spawned_since_echild = false;
  Check(pthread_mutex_unlock(&state.sleep_mutex));
}

void ReapLoop() {
  for (;;) {
    siginfo_t peek{};
    if (waitid(P_ALL, 0, &peek, WEXITED | WNOWAIT) != 0) {
      if (errno == EINTR) continue;
      // ECHILD: no children at all. Orphans can only appear while a child of ours lives, so
      // sleeping until the next spawn cannot miss one.
      WaitForChildren();
      continue;
    }
    pid_t pid = peek.si_pid;
    Reaped* reaped = nullptr;
    {
      std::lock_guard<std::mutex> table(State().table_mutex);
      siginfo_t info{};
      int rc;
      do rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED);
      while (rc != 0 && errno == EINTR);
      if (rc != 0) continue;  // ECHILD: the spawn path reaped a child whose exec failed
      auto& tokens = State().tokens;
      auto found = tokens.find(pid);
      double token = 0;
      if (found != tokens.end()) {
        token = found->second;
        tokens.erase(found);
      }
      bool exited = info.si_code == CLD_EXITED;
      reaped = new Reaped{pid, token, exited ? info.si_status : -1, exited ? 0 : info.si_status};
    }
    if (State().report.NonBlockingCall(reaped, CallJs) != napi_ok) delete reaped;
  }
}

// Appends the pids listed in /proc/self/task/TID/children. False when the file is missing while
// its thread is still there: this kernel was built without the children files
// (CONFIG_PROC_CHILDREN). A thread that has ended has nothing to add (the kernel gave its children
// to another thread of ours, the main one first).
bool AppendThreadChildren(pid_t tid, std::vector<pid_t>& out) {
  std::string task = "/proc/self/task/" + std::to_string(tid);
  int fd = open((task + "/children").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return !(errno == ENOENT && access((task + "/stat").c_str(), F_OK) == 0);
  std::string text;
  char buffer[4096];
  for (;;) {
    ssize_t got = read(fd, buffer, sizeof buffer);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    text.append(buffer, static_cast<size_t>(got));
    // A seq_file read fills the buffer unless it reached the end: a short read was all of it
    // (one system call per thread saved; these files are read on every cleanup check).
    if (static_cast<size_t>(got) < sizeof buffer) break;
  }
  close(fd);
  pid_t pid = 0;
  bool in_number = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      pid = pid * 10 + (c - '0');
      in_number = true;
    } else if (in_number) {
      out.push_back(pid);
      pid = 0;
      in_number = false;
    }
  }
  if (in_number) out.push_back(pid);
  return true;
}

}  // namespace

// hasZombieChild() -> true while some child of this process (of any of its threads) has exited
// and is not reaped yet. A peek: WNOWAIT leaves the child for the reaper thread.
Napi::Value HasZombieChild(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  siginfo_t peek{};
  int rc;
  do rc = waitid(P_ALL, 0, &peek, WEXITED | WNOHANG | WNOWAIT | __WALL);
  while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    if (errno == ECHILD) return Napi::Boolean::New(env, false);
    throw ErrnoError(env, errno, "waitid");
  }
  return Napi::Boolean::New(env, peek.si_pid != 0);
}

// adoptedChildren() -> the pids of this process's children (zombies included) that spawn did not
// start, or started and the reaper has reaped: the orphans reparented to us as the subreaper. Then
// the job leaders are taken out under the child-table lock (which keeps a registered pid from
// being reaped, so it still names the leader). null when this kernel has no children files.
// A child is listed in the children file of the thread that cloned it, and an orphan in that of
// the first live thread of the subreaper, the main one (kernel/exit.c, find_new_reaper and
// find_alive_thread): so the main thread's file and those of the threads that spawned are all
// there is to read, not one per thread of the process (13 in the supervisor).
Napi::Value AdoptedChildren(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<pid_t> threads{getpid()};
  {
    std::lock_guard<std::mutex> table(State().table_mutex);
    for (pid_t tid : State().spawning_threads) {
      if (tid != threads[0]) threads.push_back(tid);
    }
  }
  std::vector<pid_t> children;
  for (pid_t tid : threads) {
    if (!AppendThreadChildren(tid, children)) return env.Null();
  }
  std::vector<pid_t> adopted;
  {
    std::lock_guard<std::mutex> table(State().table_mutex);
    for (pid_t pid : children) {
      if (State().tokens.count(pid) == 0) adopted.push_back(pid);
    }
  }
  Napi::Array result = Napi::Array::New(env, adopted.size());
  for (size_t i = 0; i < adopted.size(); i++) result.Set(static_cast<uint32_t>(i), Napi::Number::New(env, adopted[i]));
  return result;
}

std::mutex& ChildTableLock() { return State().table_mutex; }

void RegisterChildLocked(pid_t pid, double token) {
  // Called on the thread that cloned the child, so its children file is where the child is listed.
  // Noted first: should either allocation fail, the child is not left registered.
  pid_t tid = static_cast<pid_t>(syscall(SYS_gettid));
  auto& threads = State().spawning_threads;
  if (std::find(threads.begin(), threads.end(), tid) == threads.end()) threads.push_back(tid);
  State().tokens[pid] = token;
}

bool IsChildRegisteredLocked(pid_t pid) { return State().tokens.count(pid) != 0; }

void NotifyChildSpawned() {
  ReaperState& state = State();
  Check(pthread_mutex_lock(&state.sleep_mutex));
  state.spawned_since_echild = true;
  Check(pthread_cond_signal(&state.have_children));
  Check(pthread_mutex_unlock(&state.sleep_mutex));
}

// startReaper(callback): starts the one reaper thread of this process; callback({pid, token,
// code, signal}) runs on the JS thread for every reaped child. The thread lives as long as the
// process and does not keep the event loop alive.
Napi::Value StartReaper(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Function callback = FunctionArg(info, 0, "startReaper(callback)", "callback");
  ReaperState& state = State();
  if (state.started) ThrowTypeError(env, "startReaper: the reaper is already running in this process");
  state.report = Napi::ThreadSafeFunction::New(env, callback, "heph-reaper", 0, 1);
  state.report.Unref(env);
  try {
    std::thread(ReapLoop).detach();
  } catch (const std::system_error& error) {
    state.report.Release();
    throw ErrnoError(env, error.code().value(), "pthread_create");
  }
  state.started = true;
  return env.Undefined();
}

}  // namespace heph
