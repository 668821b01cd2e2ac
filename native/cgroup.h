// cgroup v2 operations on one cgroup directory.
#pragma once

#include <napi.h>

namespace heph {

Napi::Value CgroupCreate(const Napi::CallbackInfo& info);
Napi::Value CgroupRemove(const Napi::CallbackInfo& info);
Napi::Value CgroupKill(const Napi::CallbackInfo& info);
Napi::Value CgroupPopulated(const Napi::CallbackInfo& info);

}  // namespace heph
