// clone3(2) with a child function on its own stack. See clone(2) ("clone3", "stack", CLONE_VM),
// syscall(2) (the calling conventions below), and glibc's sysdeps/unix/sysv/linux/{x86_64,aarch64}/
// clone3.S, which these follow.
//
// The kernel starts the child with the parent's registers, except the return value (0) and the
// stack pointer (args->stack + args->stack_size). So `fn` and `arg` are kept in registers the
// system call preserves, and the child calls fn(arg) from here; should fn return, the child exits
// with its result through the raw exit system call (no atexit handlers: they belong to the parent).
#include "clone3.h"

#include <errno.h>
#include <sys/syscall.h>

#define HEPH_STRINGIFY_(x) #x
#define HEPH_STRINGIFY(x) HEPH_STRINGIFY_(x)

#if defined(__x86_64__) || defined(__aarch64__)
extern "C" long heph_clone3_with_stack(struct clone_args* args, size_t size, int (*fn)(void*), void* arg);
#endif

#if defined(__x86_64__)
// rdi = args, rsi = size (already where clone3 wants them), rdx = fn, rcx = arg. `syscall` clobbers
// only rax, rcx and r11, so fn and arg travel in r9 and r8. The child: no caller (rip undefined
// for unwinders, rbp 0), stack aligned to 16 before the call as the psABI requires. endbr64 is a
// no-op without CET and a valid landing pad with it.
asm(R"(
  .text
  .globl heph_clone3_with_stack
  .hidden heph_clone3_with_stack
  .type heph_clone3_with_stack, @function
  .p2align 4
heph_clone3_with_stack:
  .cfi_startproc
  endbr64
  movq %rcx, %r8
  movq %rdx, %r9
  movl $)" HEPH_STRINGIFY(__NR_clone3) R"(, %eax
  syscall
  testq %rax, %rax
  jz 1f
  ret
1:
  .cfi_undefined %rip
  xorl %ebp, %ebp
  andq $-16, %rsp
  movq %r8, %rdi
  call *%r9
  movl %eax, %edi
  movl $)" HEPH_STRINGIFY(__NR_exit) R"(, %eax
  syscall
  hlt
  .cfi_endproc
  .size heph_clone3_with_stack, .-heph_clone3_with_stack
)");
#elif defined(__aarch64__)
// x0 = args, x1 = size (already where clone3 wants them), x2 = fn, x3 = arg. `svc` preserves every
// register but x0, so fn and arg travel in x10 and x11. The child: no caller (x29 and x30 zero,
// x30 undefined for unwinders); the kernel set sp to the top of the stack, which we keep 16-byte
// aligned. `hint #34` is `bti c`: a no-op without BTI and a valid landing pad with it.
asm(R"(
  .text
  .globl heph_clone3_with_stack
  .hidden heph_clone3_with_stack
  .type heph_clone3_with_stack, %function
  .p2align 2
heph_clone3_with_stack:
  .cfi_startproc
  hint #34
  mov x10, x2
  mov x11, x3
  mov x8, #)" HEPH_STRINGIFY(__NR_clone3) R"(
  svc #0
  cbz x0, 1f
  ret
1:
  .cfi_undefined x30
  mov x29, xzr
  mov x30, xzr
  mov x0, x11
  blr x10
  mov x8, #)" HEPH_STRINGIFY(__NR_exit) R"(
  svc #0
  brk #0
  .cfi_endproc
  .size heph_clone3_with_stack, .-heph_clone3_with_stack
)");
#endif

namespace heph {

long CloneWithStack(struct clone_args* args, size_t size, int (*fn)(void*), void* arg) {
#if defined(__x86_64__) || defined(__aarch64__)
  return heph_clone3_with_stack(args, size, fn, arg);
#else
  (void)args;
  (void)size;
  (void)fn;
  (void)arg;
  return -ENOSYS;
#endif
}

}  // namespace heph
