// Keeps the addon loadable with an older libstdc++ than the one it was compiled with (the prebuilt
// binary is built with GCC 12 and must load on RHEL 8, Debian 10 and Ubuntu 20.04, whose
// libstdc++ stops at GLIBCXX_3.4.25-3.4.28). test/unit/native-symbols.test.ts fails on any newer
// symbol version the binary requires; this file defines the ones that only inline library code
// asks for. The same approach as Firefox's build/unix/stdc++compat/stdc++compat.cpp.
#include <new>

#if defined(__GLIBCXX__) && defined(_GLIBCXX_RELEASE) && _GLIBCXX_RELEASE >= 11
namespace std {

// GCC 11's std::allocator<T>::allocate calls this for an impossible size (n * sizeof(T)
// overflows); libstdc++ exports it only from GLIBCXX_3.4.29 (GCC 11). Same behaviour as the
// library's: throw std::bad_array_new_length. A definition in the addon needs no symbol version;
// where the system's libstdc++ has one, the dynamic linker may bind to that instead, which is the
// same function.
void __throw_bad_array_new_length() { throw bad_array_new_length(); }

}  // namespace std
#endif
