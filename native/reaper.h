// The reaper: one thread blocking in waitid(2) that reaps every child of this process (job
// leaders and the orphans reparented to us as a child subreaper) and reports each to JavaScript.
#pragma once

#include <napi.h>
#include <sys/types.h>

#include <cstddef>
#include <cstdint>

namespace heph {

// Something for the JavaScript thread, posted through the reaper's own queue (first in, first out).
class MainThreadEvent {
 public:
  virtual ~MainThreadEvent() = default;
  // On the JavaScript thread; `reaper_callback` is startReaper's callback.
  virtual void Deliver(Napi::Env env, Napi::Function reaper_callback) = 0;
};

// A spawn under way, from before its clone until its child is registered or it has failed. While
// any is, the reaper takes no child it cannot attribute for an orphan: it waits for the spawns to
// end and looks again (a leader may exit before its spawn has registered it). Spawns on several
// threads may be under way at once.
class SpawnUnderWay {
 public:
  SpawnUnderWay();
  ~SpawnUnderWay();
  SpawnUnderWay(const SpawnUnderWay&) = delete;
  SpawnUnderWay& operator=(const SpawnUnderWay&) = delete;

 private:
  uint64_t number_;
};

// At most this many spawns are under way at once: one per spawner thread (spawn.cc) and the main
// thread's.
constexpr size_t kMaxSpawnsUnderWay = 8;

// Records `token` for `pid` (the caller has a SpawnUnderWay) and, when `event` is given, posts it
// (taking ownership) in the same step: the reaper finds the token, and so reports the child's
// exit, only after the event is ahead of that report in the queue. Throws std::bad_alloc with
// nothing recorded or posted.
void RegisterChild(pid_t pid, double token, MainThreadEvent* event = nullptr);

// The child table held: while it is, the reaper reaps no registered child, so a pid found
// registered keeps naming that child. Held for a moment only (a check and a signal).
class ChildTableHold {
 public:
  ChildTableHold();
  ~ChildTableHold();
  ChildTableHold(const ChildTableHold&) = delete;
  ChildTableHold& operator=(const ChildTableHold&) = delete;
  // True while `pid` is a child we spawned and the reaper has not reaped.
  bool IsRegistered(pid_t pid) const;
};

// Wakes the reaper if it sleeps for lack of children.
void NotifyChildSpawned();

// While any is held, the queue keeps the JavaScript thread's event loop alive (as a pending libuv
// request would): for an event JavaScript waits for, such as a spawn's result. On that thread.
// HoldQueue is false, holding nothing, before startReaper has made the queue.
bool HoldQueue(Napi::Env env);
void ReleaseQueue(Napi::Env env);

// Takes ownership of `event` and posts it. False (the event kept by the caller) once the queue is
// closed, at exit.
bool PostInOrder(MainThreadEvent* event);

Napi::Value StartReaper(const Napi::CallbackInfo& info);
Napi::Value HasZombieChild(const Napi::CallbackInfo& info);
Napi::Value AdoptedChildren(const Napi::CallbackInfo& info);

}  // namespace heph
