// Node-style errno errors for the addon. See errno(3), strerror(3).
#include "errors.h"

#include <cstring>

namespace heph {

Napi::Error ErrnoError(Napi::Env env, int err, const char* syscall, const std::string& path) {
  std::string message = std::string(syscall) + " failed: " + std::strerror(err);
  if (!path.empty()) message += " (" + path + ")";
  Napi::Error error = Napi::Error::New(env, message);
  error.Set("errno", Napi::Number::New(env, err));
  error.Set("syscall", Napi::String::New(env, syscall));
  if (!path.empty()) error.Set("path", Napi::String::New(env, path));
  return error;
}

void ThrowTypeError(Napi::Env env, const std::string& message) {
  throw Napi::TypeError::New(env, message);
}

}  // namespace heph
