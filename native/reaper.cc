// The reaper thread. See waitid(2), prctl(2) PR_SET_CHILD_SUBREAPER, proc(5)
// (/proc/PID/task/TID/children).
//
// Protocol that makes attribution race-free: the thread first *peeks* with WEXITED|WNOWAIT, which
// leaves the child a zombie so its pid cannot be reused; it then takes the child table, looks up
// the token and, for a pid not there, waits while any spawn is under way (its leader may have
// exited before the spawn registered it: with spawns on several threads, one that sleeps until
// its child has exec'd cannot hold the table meanwhile); only then it reaps that one pid and posts
// the report, table still held. A spawn registers its child and posts its result in one step
// under the table, so JavaScript has a job's spawn result before its leader's exit. A child the
// spawn path reaped itself (exec failed) yields ECHILD and is skipped.
#include "reaper.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <system_error>
#include <thread>
#include <unordered_map>
#include <vector>

#include "args.h"
#include "errors.h"

namespace heph {
namespace {

// These fail only on a misused mutex, lock or condition variable (EINVAL, EPERM, EDEADLK), a bug
// with no JS caller to report to on this thread: abort, as std::mutex would.
void Check(int status) {
  if (status != 0) std::abort();
}

struct Reaped : MainThreadEvent {
  Reaped(pid_t pid, double token, int code, int signal) : pid(pid), token(token), code(code), signal(signal) {}
  pid_t pid;
  double token;  // 0 for an orphan we never spawned
  int code;      // exit code, or -1 when killed
  int signal;    // terminating signal, or 0

  void Deliver(Napi::Env env, Napi::Function reaper_callback) override {
    Napi::Object event = Napi::Object::New(env);
    event.Set("pid", Napi::Number::New(env, pid));
    event.Set("token", Napi::Number::New(env, token));
    event.Set("code", code < 0 ? env.Null() : Napi::Number::New(env, code));
    event.Set("signal", Napi::Number::New(env, signal));
    reaper_callback.Call({event});
  }
};

// Process-lifetime state, deliberately never destroyed: the reaper thread blocks on these until
// the process exits, and running their destructors at exit would wait for it forever
// (pthread_cond_destroy waits for its waiters).
// The sleep between "no children" and the next spawn is a plain pthread condition variable, not
// std::condition_variable: libstdc++ 12 exports condition_variable::wait only at GLIBCXX_3.4.30,
// and an addon that needs it does not load with the libstdc++ of RHEL 8/9, Debian 10/11 or
// Ubuntu 20.04 (test/unit/native-symbols.test.ts holds the line).
struct ReaperState {
  ReaperState() { under_way.reserve(kMaxSpawnsUnderWay); }
  // The child table: `tokens` and `under_way`, written by spawns on several threads.
  pthread_mutex_t table_mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t spawn_ended = PTHREAD_COND_INITIALIZER;
  std::unordered_map<pid_t, double> tokens;
  // The spawns under way, by the number each got when it began (one per spawner thread and the
  // main thread at most: room is made once, so beginning one never allocates).
  std::vector<uint64_t> under_way;
  uint64_t spawns_begun = 0;
  pthread_mutex_t sleep_mutex = PTHREAD_MUTEX_INITIALIZER;
  pthread_cond_t have_children = PTHREAD_COND_INITIALIZER;
  bool spawned_since_echild = false;
  bool started = false;
  // Set once `report` exists (before the reaper thread starts), never unset.
  std::atomic<bool> queue_open{false};
  Napi::ThreadSafeFunction report;
};

ReaperState& State() {
  static ReaperState* state = new ReaperState();
  return *state;
}

void CallJs(Napi::Env env, Napi::Function callback, MainThreadEvent* data) {
  if (env != nullptr && callback != nullptr) {
    try {
      data->Deliver(env, callback);
    } catch (const Napi::Error& error) {
      // A callback that threw (node-addon-api has taken the exception off the engine): it goes to
      // JavaScript as uncaught (process 'uncaughtException'), and the queue goes on delivering. Left
      // pending, Node only warns, and a later call into the addon finds it still pending.
      napi_fatal_exception(env, error.Value());
    }
    delete data;
  }
  // Else the environment is going away: an event may hold JavaScript references that can no
  // longer be released, so it is left (the process is exiting).
}

// The number of the oldest spawn under way; the largest number there is when none is.
uint64_t OldestUnderWayLocked() {
  const auto& under_way = State().under_way;
  return under_way.empty() ? UINT64_MAX : *std::min_element(under_way.begin(), under_way.end());
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
    ReaperState& state = State();
    ChildTableHold table;
    // Only the spawns under way now can have cloned this child: later ones are not waited for,
    // so a steady stream of spawns cannot keep an orphan from being reaped.
    uint64_t begun = state.spawns_begun;
    auto found = state.tokens.find(pid);
    while (found == state.tokens.end() && OldestUnderWayLocked() <= begun) {
      Check(pthread_cond_wait(&state.spawn_ended, &state.table_mutex));
      found = state.tokens.find(pid);
    }
    siginfo_t info{};
    int rc;
    do rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED);
    while (rc != 0 && errno == EINTR);
    if (rc != 0) continue;  // ECHILD: the spawn path reaped a child whose exec failed
    double token = 0;
    if (found != state.tokens.end()) {
      token = found->second;
      state.tokens.erase(found);
    }
    bool exited = info.si_code == CLD_EXITED;
    auto* reaped = new Reaped(pid, token, exited ? info.si_status : -1, exited ? 0 : info.si_status);
    if (!PostInOrder(reaped)) delete reaped;
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
// start: the orphans reparented to us as the subreaper. null when this kernel has no children
// files. A child is listed in the children file of the thread that cloned it, and an orphan in
// that of the first live thread of the subreaper, the main one (kernel/exit.c, find_new_reaper
// and find_alive_thread): so the main thread's file holds every orphan, and besides them only
// the leaders spawned inline (registered, and taken out here); the spawner threads' files hold
// only leaders, and those threads never exit (their children would go to the main thread).
// The file is read without the table held: a leader the reaper reaps meanwhile is no longer
// registered and may be listed, but its pid then names no process, or one that is not of the job
// (the caller checks each process's marker and descriptors), never a straggler it is not.
Napi::Value AdoptedChildren(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  std::vector<pid_t> children;
  if (!AppendThreadChildren(getpid(), children)) return env.Null();
  std::vector<pid_t> adopted;
  {
    ChildTableHold table;
    for (pid_t pid : children) {
      if (State().tokens.count(pid) == 0) adopted.push_back(pid);
    }
  }
  Napi::Array result = Napi::Array::New(env, adopted.size());
  for (size_t i = 0; i < adopted.size(); i++) result.Set(static_cast<uint32_t>(i), Napi::Number::New(env, adopted[i]));
  return result;
}

SpawnUnderWay::SpawnUnderWay() {
  ChildTableHold table;
  ReaperState& state = State();
  if (state.under_way.size() >= kMaxSpawnsUnderWay) std::abort();  // more threads spawn than there are
  number_ = ++state.spawns_begun;
  state.under_way.push_back(number_);
}

SpawnUnderWay::~SpawnUnderWay() {
  ChildTableHold table;
  auto& under_way = State().under_way;
  under_way.erase(std::find(under_way.begin(), under_way.end(), number_));
  Check(pthread_cond_broadcast(&State().spawn_ended));
}

void RegisterChild(pid_t pid, double token, MainThreadEvent* event) {
  ChildTableHold table;
  State().tokens[pid] = token;
  if (event != nullptr && !PostInOrder(event)) {
    // The queue is closed: the process is exiting, and the event is left (see CallJs).
  }
}

ChildTableHold::ChildTableHold() { Check(pthread_mutex_lock(&State().table_mutex)); }
ChildTableHold::~ChildTableHold() { Check(pthread_mutex_unlock(&State().table_mutex)); }
bool ChildTableHold::IsRegistered(pid_t pid) const { return State().tokens.count(pid) != 0; }

// Holds of the queue (HoldQueue); only the JavaScript thread touches it.
int g_queue_holds = 0;

bool HoldQueue(Napi::Env env) {
  if (!State().queue_open.load()) return false;
  if (g_queue_holds++ == 0) State().report.Ref(env);
  return true;
}

void ReleaseQueue(Napi::Env env) {
  if (--g_queue_holds == 0) State().report.Unref(env);
}

bool PostInOrder(MainThreadEvent* event) {
  // The queue has no size limit, so this never waits.
  return State().queue_open.load() && State().report.BlockingCall(event, CallJs) == napi_ok;
}

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
  state.queue_open.store(true);
  try {
    std::thread(ReapLoop).detach();
  } catch (const std::system_error& error) {
    state.queue_open.store(false);
    state.report.Release();
    throw ErrnoError(env, error.code().value(), "pthread_create");
  }
  state.started = true;
  return env.Undefined();
}

}  // namespace heph
