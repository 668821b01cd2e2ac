# Built by node-gyp (`npm run build:gyp`). CMakeLists.txt builds the same addon with cmake-js
# (`npm install`, `npm run build:native`). The two are kept in step: same sources, defines, C++
# standard, warnings, RTTI and exception mode, optimisation; test/unit/native-builds.test.ts fails
# when they drift, and CI runs the whole test suite on each build.
#
# node-gyp's common.gypi puts its own flags first. Taken out below: -Wno-unused-parameter (we want
# that warning), -fno-exceptions (node-addon-api runs with C++ exceptions) and its -std=gnu++17
# (gnu++20 from Node 22 on), so the language does not change with the Node version. Its -fno-rtti,
# -O3, -fno-omit-frame-pointer and -pthread are what we want; they are repeated here so this file
# states the whole build.
{
  "variables": {
    # CI sets HEPH_WERROR=1 so that a new warning fails the build there; an `npm install` with a
    # newer compiler than ours only warns.
    "heph_werror%": "<!(node -p \"process.env.HEPH_WERROR === '1' ? 1 : 0\")"
  },
  "targets": [
    {
      "target_name": "heph_jobs",
      "sources": [
        "native/addon.cc",
        "native/args.cc",
        "native/cgroup.cc",
        "native/clone3.cc",
        "native/dirs.cc",
        "native/errors.cc",
        "native/fdpass.cc",
        "native/locks.cc",
        "native/process.cc",
        "native/pty.cc",
        "native/reaper.cc",
        "native/spawn.cc",
        "native/stdcxx-compat.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        "_GNU_SOURCE",
        "_FILE_OFFSET_BITS=64"
      ],
      "cflags!": ["-Wno-unused-parameter", "-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions", "-std=gnu++17", "-std=gnu++20"],
      "cflags_cc": [
        "-std=c++17",
        "-Wall",
        "-Wextra",
        "-fno-rtti",
        "-fexceptions",
        "-fno-omit-frame-pointer",
        "-pthread"
      ],
      "ldflags": ["-pthread"],
      "configurations": {
        "Release": {
          "defines": ["NDEBUG"],
          "cflags_cc": ["-O3"]
        }
      },
      "conditions": [
        ["heph_werror==1", { "cflags_cc": ["-Werror"] }]
      ]
    }
  ]
}
