// Process-level operations: session, subreaper, pidfds, signals, and the supervisor's watch on its
// parent.
#pragma once

#include <napi.h>

namespace heph {

Napi::Value Setsid(const Napi::CallbackInfo& info);
Napi::Value SetChildSubreaper(const Napi::CallbackInfo& info);
Napi::Value IsChildSubreaper(const Napi::CallbackInfo& info);
Napi::Value SetNotDumpable(const Napi::CallbackInfo& info);
Napi::Value ExitNow(const Napi::CallbackInfo& info);
Napi::Value PidfdOpen(const Napi::CallbackInfo& info);
Napi::Value PidfdSendSignal(const Napi::CallbackInfo& info);
Napi::Value SignalPid(const Napi::CallbackInfo& info);
Napi::Value SignalChildGroup(const Napi::CallbackInfo& info);
Napi::Value CloseFd(const Napi::CallbackInfo& info);
Napi::Value CloseInheritedFds(const Napi::CallbackInfo& info);
Napi::Value SetNonBlocking(const Napi::CallbackInfo& info);
Napi::Value WatchParent(const Napi::CallbackInfo& info);
Napi::Value KillOnParentDeath(const Napi::CallbackInfo& info);

}  // namespace heph
