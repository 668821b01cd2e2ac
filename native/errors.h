// Errors shaped like Node's own: every failed syscall becomes an Error with `errno` (the number),
// `syscall` (what failed, e.g. "clone3") and, for a path, `path`. The errno's name (`code`,
// e.g. "EACCES") is added in TypeScript (supervisor/native.ts, from Node's own errno table):
// naming it here needs strerrorname_np, which exists only from glibc 2.32 on.
#pragma once

#include <napi.h>
#include <string>

namespace heph {

// Builds (does not throw) an Error for `err` raised by `syscall`, optionally about `path`.
Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& path = "");

// Throws a TypeError naming the argument when a cheap boundary check fails.
[[noreturn]] void ThrowTypeError(Napi::Env env, const std::string& message);

}  // namespace heph
