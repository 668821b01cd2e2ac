// The reaper: one thread blocking in waitid(2) that reaps every child of this process (job
// leaders and the orphans reparented to us as a child subreaper) and reports each to JavaScript.
#pragma once

#include <napi.h>
#include <sys/types.h>

#include <mutex>

namespace heph {

// Held by spawn from before the child exists until it is registered, so the reaper can never
// attribute a child's exit to the wrong token (see reaper.cc for the WNOWAIT protocol).
std::mutex& ChildTableLock();

// Records `token` for `pid`; the caller holds ChildTableLock().
void RegisterChildLocked(pid_t pid, double token);

// True while `pid` is a child we spawned and the reaper has not reaped; the caller holds
// ChildTableLock(), which keeps it so (the reaper reaps only under that lock).
bool IsChildRegisteredLocked(pid_t pid);

// Wakes the reaper if it sleeps for lack of children.
void NotifyChildSpawned();

Napi::Value StartReaper(const Napi::CallbackInfo& info);
Napi::Value HasZombieChild(const Napi::CallbackInfo& info);
Napi::Value AdoptedChildren(const Napi::CallbackInfo& info);

}  // namespace heph
