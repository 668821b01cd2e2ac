// Errors shaped like Node's own: every failed syscall becomes an Error with `code` (the errno
// name, e.g. "EACCES"), `errno` (the number) and `syscall` (what failed, e.g. "clone3").
#pragma once

#include <napi.h>
#include <string>

namespace heph {

// Builds (does not throw) an Error for `err` raised by `syscall`, optionally about `path`.
Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& path = "");

// Throws a TypeError naming the argument when a cheap boundary check fails.
[[noreturn]] void ThrowTypeError(Napi::Env env, const std::string& message);

}  // namespace heph
