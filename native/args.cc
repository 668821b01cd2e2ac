// Boundary guards for the addon's arguments. See args.h.
#include "args.h"

#include <signal.h>

#include <climits>
#include <cmath>
#include <cstdio>

#include "errors.h"

namespace heph {
namespace {

// Longest piece of a received string a message shows (as src/protocol/describe.ts does).
constexpr size_t kShownChars = 60;

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", c);
      out += escaped;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + "\"";
}

std::string ShownString(const std::string& text) {
  if (text.size() <= kShownChars) return Quoted(text);
  size_t cut = kShownChars;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) cut--;  // not inside a UTF-8 sequence
  return Quoted(text.substr(0, cut)) + "\u2026 (" + std::to_string(text.size()) + " bytes)";
}

std::string Range(int64_t min, int64_t max) { return "an integer from " + std::to_string(min) + " to " + std::to_string(max); }

Napi::Value FieldOf(const Napi::Object& options, const char* field) { return options.Get(field); }

std::string FieldName(const char* field) { return std::string("options.") + field; }

std::string StringValue(const Napi::Value& value, const char* where, const std::string& name, bool is_path) {
  const char* rule = is_path ? "a non-empty string without NUL" : "a string without NUL";
  if (!value.IsString()) ThrowArgumentError(value.Env(), where, name, rule, value);
  std::string text = value.As<Napi::String>().Utf8Value();
  if ((is_path && text.empty()) || text.find('\0') != std::string::npos) ThrowArgumentError(value.Env(), where, name, rule, value);
  return text;
}

}  // namespace

std::string DescribeValue(const Napi::Value& value) {
  switch (value.Type()) {
    case napi_undefined: return "undefined";
    case napi_null: return "null";
    case napi_boolean: return value.As<Napi::Boolean>().Value() ? "true" : "false";
    case napi_number: return value.ToString().Utf8Value();  // as JavaScript prints it: NaN, 1.5, 4294967299
    case napi_bigint: return value.ToString().Utf8Value() + "n";
    case napi_string: return ShownString(value.As<Napi::String>().Utf8Value());
    case napi_symbol: return "a symbol";
    case napi_function: return "a function";
    case napi_object:
      if (value.IsArray()) return "an array of " + std::to_string(value.As<Napi::Array>().Length());
      return "an object";
    default: return "a value";
  }
}

void ThrowArgumentError(Napi::Env env, const char* where, const std::string& name, const std::string& rule, const Napi::Value& received) {
  ThrowTypeError(env, std::string(where) + ": " + name + " must be " + rule + "; received " + DescribeValue(received));
}

int64_t CheckInteger(const Napi::Value& value, const char* where, const char* name, int64_t min, int64_t max) {
  if (!value.IsNumber()) ThrowArgumentError(value.Env(), where, name, Range(min, max), value);
  double number = value.As<Napi::Number>().DoubleValue();
  // Compared as doubles first: NaN fails every comparison, and no cast of an out-of-range double happens.
  if (!(number >= static_cast<double>(min) && number <= static_cast<double>(max)) || std::trunc(number) != number) {
    ThrowArgumentError(value.Env(), where, name, Range(min, max), value);
  }
  return static_cast<int64_t>(number);
}

int64_t IntegerArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name, int64_t min, int64_t max) {
  return CheckInteger(info[index], where, name, min, max);
}

int FdArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name) {
  return static_cast<int>(IntegerArg(info, index, where, name, 0, INT_MAX));
}

pid_t PidArg(const Napi::CallbackInfo& info, size_t index, const char* where) {
  return static_cast<pid_t>(IntegerArg(info, index, where, "pid", 1, INT_MAX));
}

int SignalArg(const Napi::CallbackInfo& info, size_t index, const char* where) {
  // 0 is the existence probe of kill(2); SIGRTMAX is a glibc function call, not a constant.
  return static_cast<int>(IntegerArg(info, index, where, "signal", 0, SIGRTMAX));
}

bool BooleanArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name) {
  if (!info[index].IsBoolean()) ThrowArgumentError(info.Env(), where, name, "a boolean", info[index]);
  return info[index].As<Napi::Boolean>().Value();
}

Napi::Function FunctionArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name) {
  if (!info[index].IsFunction()) ThrowArgumentError(info.Env(), where, name, "a function", info[index]);
  return info[index].As<Napi::Function>();
}

std::string PathArg(const Napi::CallbackInfo& info, size_t index, const char* where, const char* name) {
  return StringValue(info[index], where, name, true);
}

int64_t IntegerField(const Napi::Object& options, const char* where, const char* field, int64_t min, int64_t max) {
  return CheckInteger(FieldOf(options, field), where, FieldName(field).c_str(), min, max);
}

bool BooleanField(const Napi::Object& options, const char* where, const char* field) {
  Napi::Value value = FieldOf(options, field);
  if (!value.IsBoolean()) ThrowArgumentError(options.Env(), where, FieldName(field), "a boolean", value);
  return value.As<Napi::Boolean>().Value();
}

std::string StringField(const Napi::Object& options, const char* where, const char* field, bool is_path) {
  return StringValue(FieldOf(options, field), where, FieldName(field), is_path);
}

}  // namespace heph
