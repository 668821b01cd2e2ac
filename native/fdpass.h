// Descriptors passed over unix sockets (SCM_RIGHTS): the lock vault's transport.
#pragma once

#include <napi.h>

namespace heph {

Napi::Value SeqpacketPair(const Napi::CallbackInfo& info);
Napi::Value SendFds(const Napi::CallbackInfo& info);
Napi::Value ReceiveFds(const Napi::CallbackInfo& info);

}  // namespace heph
