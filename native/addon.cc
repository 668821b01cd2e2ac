// The heph-jobs native addon: the few things Node cannot do for a process supervisor.
// Everything here executes; every decision (defaults, paths, policy) is made in TypeScript.
#include <napi.h>

#include "cgroup.h"
#include "dirs.h"
#include "fdpass.h"
#include "locks.h"
#include "process.h"
#include "pty.h"
#include "reaper.h"
#include "spawn.h"

namespace {

Napi::Object Init(Napi::Env env, Napi::Object exports) {
  exports.Set("setsid", Napi::Function::New(env, heph::Setsid, "setsid"));
  exports.Set("setChildSubreaper", Napi::Function::New(env, heph::SetChildSubreaper, "setChildSubreaper"));
  exports.Set("isChildSubreaper", Napi::Function::New(env, heph::IsChildSubreaper, "isChildSubreaper"));
  exports.Set("setNotDumpable", Napi::Function::New(env, heph::SetNotDumpable, "setNotDumpable"));
  exports.Set("exitNow", Napi::Function::New(env, heph::ExitNow, "exitNow"));
  exports.Set("spawn", Napi::Function::New(env, heph::Spawn, "spawn"));
  exports.Set("spawnAsync", Napi::Function::New(env, heph::SpawnAsync, "spawnAsync"));
  exports.Set("openPty", Napi::Function::New(env, heph::OpenPty, "openPty"));
  exports.Set("startReaper", Napi::Function::New(env, heph::StartReaper, "startReaper"));
  exports.Set("hasZombieChild", Napi::Function::New(env, heph::HasZombieChild, "hasZombieChild"));
  exports.Set("adoptedChildren", Napi::Function::New(env, heph::AdoptedChildren, "adoptedChildren"));
  exports.Set("pidfdOpen", Napi::Function::New(env, heph::PidfdOpen, "pidfdOpen"));
  exports.Set("pidfdSendSignal", Napi::Function::New(env, heph::PidfdSendSignal, "pidfdSendSignal"));
  exports.Set("signalPid", Napi::Function::New(env, heph::SignalPid, "signalPid"));
  exports.Set("signalChildGroup", Napi::Function::New(env, heph::SignalChildGroup, "signalChildGroup"));
  exports.Set("closeFd", Napi::Function::New(env, heph::CloseFd, "closeFd"));
  exports.Set("closeInheritedFds", Napi::Function::New(env, heph::CloseInheritedFds, "closeInheritedFds"));
  exports.Set("setNonBlocking", Napi::Function::New(env, heph::SetNonBlocking, "setNonBlocking"));
  exports.Set("watchParent", Napi::Function::New(env, heph::WatchParent, "watchParent"));
  exports.Set("killOnParentDeath", Napi::Function::New(env, heph::KillOnParentDeath, "killOnParentDeath"));
  exports.Set("cgroupCreate", Napi::Function::New(env, heph::CgroupCreate, "cgroupCreate"));
  exports.Set("cgroupRemove", Napi::Function::New(env, heph::CgroupRemove, "cgroupRemove"));
  exports.Set("cgroupKill", Napi::Function::New(env, heph::CgroupKill, "cgroupKill"));
  exports.Set("cgroupPopulated", Napi::Function::New(env, heph::CgroupPopulated, "cgroupPopulated"));
  exports.Set("openDirAt", Napi::Function::New(env, heph::OpenDirAt, "openDirAt"));
  exports.Set("mkdirAt", Napi::Function::New(env, heph::MkdirAt, "mkdirAt"));
  exports.Set("statAt", Napi::Function::New(env, heph::StatAt, "statAt"));
  exports.Set("readLinkAt", Napi::Function::New(env, heph::ReadLinkAt, "readLinkAt"));
  exports.Set("unlinkAt", Napi::Function::New(env, heph::UnlinkAt, "unlinkAt"));
  exports.Set("lockOpenAt", Napi::Function::New(env, heph::LockOpenAt, "lockOpenAt"));
  exports.Set("lockRange", Napi::Function::New(env, heph::LockRange, "lockRange"));
  exports.Set("unlockRange", Napi::Function::New(env, heph::UnlockRange, "unlockRange"));
  exports.Set("seqpacketPair", Napi::Function::New(env, heph::SeqpacketPair, "seqpacketPair"));
  exports.Set("sendFds", Napi::Function::New(env, heph::SendFds, "sendFds"));
  exports.Set("receiveFds", Napi::Function::New(env, heph::ReceiveFds, "receiveFds"));
  return exports;
}

}  // namespace

NODE_API_MODULE(heph_jobs, Init)
