// Spawning a job leader: /bin/sh -c COMMAND in a new session, inside a given cgroup from its first
// instruction, with a clean signal state and no inherited descriptors beyond 0-2.
#pragma once

#include <napi.h>

namespace heph {

Napi::Value Spawn(const Napi::CallbackInfo& info);
Napi::Value SpawnAsync(const Napi::CallbackInfo& info);

}  // namespace heph
