// Cheap guards at the addon's boundary (STYLE 8). TypeScript validates every argument fully and
// kindly; these only make sure that a value which slipped past it can never turn into another fd,
// pid or signal (C++ would read NaN as 0 and 2 ** 32 + 3 as 3) or into undefined behaviour. Each
// failure is a TypeError that names the call and the argument and shows what was received:
//   closeFd(fd): fd must be an integer from 0 to 2147483647; received NaN
#pragma once

#include <napi.h>
#include <sys/types.h>

#include <cstdint>
#include <string>

namespace heph {

// Number.MAX_SAFE_INTEGER: the largest integer a JavaScript number holds exactly.
constexpr int64_t kMaxSafeInteger = (int64_t{1} << 53) - 1;

// The received value as a message shows it: NaN, 1.5, "text", undefined, an object.
std::string DescribeValue(const Napi::Value& value);

// `value` when it is a number holding an integer in [min, max]; a TypeError otherwise. `where` is
// the call as documented ("closeFd(fd)"), `name` the argument ("fd", "options.token").
int64_t CheckInteger(const Napi::Value& value, const char* where, const char* name, int64_t min, int64_t max);

// Positional arguments (a missing one reads as undefined and fails its check).
int64_t IntegerArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name, int64_t min, int64_t max);
int FdArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name);  // 0..INT_MAX
pid_t PidArg(const Napi::CallbackInfo& info, size_t index, const char* where);                 // 1..INT_MAX
int SignalArg(const Napi::CallbackInfo& info, size_t index, const char* where);                // 0..SIGRTMAX
bool BooleanArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name);
Napi::Function FunctionArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name);
// A path: a non-empty string without NUL (the kernel would stop reading at the NUL).
std::string PathArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name);

// Fields of an options object, named "options.<field>" in messages.
int64_t IntegerField(const Napi::Object& options, const char* where, const char* field, int64_t min, int64_t max);
bool BooleanField(const Napi::Object& options, const char* where, const char* field);
// A string without NUL; empty allowed unless it is a path.
std::string StringField(const Napi::Object& options, const char* where, const char* field, bool is_path = false);
// A check that failed on a value already read: throws the TypeError "<where>: <name> must be <rule>; received <value>".
[[noreturn]] void ThrowArgumentError(Napi::Env env, const char* where, const std::string& name, const std::string& rule, const Napi::Value& received);

}  // namespace heph
