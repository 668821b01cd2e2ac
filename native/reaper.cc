// The reaper thread. See waitid(2), prctl(2) PR_SET_CHILD_SUBREAPER.
//
// Protocol that makes attribution race-free: the thread first *peeks* with WEXITED|WNOWAIT, which
// leaves the child a zombie so its pid cannot be reused; it then takes the child-table lock (spawn
// holds it from before clone until the new pid is registered), looks up the token, and only then
// reaps that one pid. A child the spawn path reaped itself (exec failed) yields ECHILD and is skipped.
#include "reaper.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <sys/wait.h>

#include <cstdlib>
#include <mutex>
#include <system_error>
#include <thread>
#include <unordered_map>

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

}  // namespace

std::mutex& ChildTableLock() { return State().table_mutex; }

void RegisterChildLocked(pid_t pid, double token) { State().tokens[pid] = token; }

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
