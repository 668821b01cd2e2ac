// Pseudo-terminals for jobs that run on one: the pair is opened here, the child makes the slave its
// controlling terminal in spawn.cc (the `ctty` option).
#pragma once

#include <napi.h>

namespace heph {

Napi::Value OpenPty(const Napi::CallbackInfo& info);

}  // namespace heph
