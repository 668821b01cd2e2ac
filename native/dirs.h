// Directory-relative file operations: everything the lock directory needs, done relative to an
// open directory descriptor and never through a symlink, so a path that another user can change
// is resolved once, by us, and never again.
#pragma once

#include <napi.h>

#include <string>

namespace heph {

// Argument `index` as one path component: not empty, no NUL, no '/', not "." or "..". Every
// *At call takes its name through this: openat follows symlinks in every component of a name
// but the last whatever the flags say, so a name with a '/' would walk where nobody checked.
std::string ComponentArg(const Napi::CallbackInfo& info, size_t index, const char* where);

Napi::Value OpenDirAt(const Napi::CallbackInfo& info);
Napi::Value MkdirAt(const Napi::CallbackInfo& info);
Napi::Value StatAt(const Napi::CallbackInfo& info);
Napi::Value ReadLinkAt(const Napi::CallbackInfo& info);
Napi::Value UnlinkAt(const Napi::CallbackInfo& info);

}  // namespace heph
