// OFD locks on lock files opened relative to the lock directory's descriptor.
#pragma once

#include <napi.h>

namespace heph {

Napi::Value LockOpenAt(const Napi::CallbackInfo& info);
Napi::Value LockRange(const Napi::CallbackInfo& info);
Napi::Value UnlockRange(const Napi::CallbackInfo& info);

}  // namespace heph
