// clone3(2) with the child on a stack of its own: the primitive under a vfork-style spawn
// (CLONE_VM | CLONE_VFORK), as posix_spawn(3) is built on glibc's __clone3.
//
// This cannot be written in C or C++: a child that starts on a new stack has no caller frame to
// return into, so it has to call its function from assembly. Only where we carry that assembly
// (x86-64, AArch64) does kHaveCloneWithStack hold; elsewhere spawn takes the fork path.
#pragma once

#include <linux/sched.h>

#include <cstddef>

namespace heph {

#if defined(__x86_64__) || defined(__aarch64__)
constexpr bool kHaveCloneWithStack = true;
#else
constexpr bool kHaveCloneWithStack = false;
#endif

// clone3(args, size). In the parent: the child's pid, or -errno (errno is left alone). In the
// child: runs fn(arg) on the stack args->stack/stack_size describe and never returns (fn should
// not return either; if it does, the child exits with its result). Without kHaveCloneWithStack:
// -ENOSYS.
long CloneWithStack(struct clone_args* args, size_t size, int (*fn)(void*), void* arg);

}  // namespace heph
