# Built by node-gyp (`npm run build:gyp`). CMakeLists.txt lists the same sources, defines and
# flags for cmake-js, which `npm install` uses; keep the two in step.
{
  "targets": [
    {
      "target_name": "heph_jobs",
      "sources": [
        "native/addon.cc",
        "native/cgroup.cc",
        "native/errors.cc",
        "native/process.cc",
        "native/reaper.cc",
        "native/spawn.cc"
      ],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        "_GNU_SOURCE"
      ],
      "cflags!": ["-fno-exceptions"],
      "cflags_cc!": ["-fno-exceptions"],
      "cflags_cc": ["-std=c++17", "-Wall", "-Wextra", "-fexceptions"],
      "libraries": ["-lpthread"]
    }
  ]
}
