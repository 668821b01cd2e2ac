// Pseudo-terminals for jobs started with `tty: true`. See pty(7), ioctl_tty(2) (TIOCSPTLCK,
// TIOCGPTPEER, TIOCGPTN, TIOCSWINSZ), termios(3) (ECHO, ONLCR).
//
// openPty(columns, rows, echo) -> {master, slave}. Both ends are close-on-exec and opened with
// O_NOCTTY: the supervisor is a session leader without a terminal, and opening a terminal without
// O_NOCTTY would make it the supervisor's. The master is non-blocking (the supervisor's event loop
// reads it, and a write to a job that reads nothing must never stall that loop). The slave is
// handed to spawn as `ctty`: the child, after setsid, makes it its controlling terminal and its
// fds 0-2; the supervisor closes its own copy right after the spawn, so the master reads EIO once
// every process of the job has closed the terminal. The caller decides the window size and echo;
// output post-processing turns no "\n" into "\r\n" (ONLCR off), so lines arrive as from a pipe.
#include "pty.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>

#include "args.h"
#include "errors.h"
#include "fd.h"

#ifndef TIOCGPTPEER
#define TIOCGPTPEER _IO('T', 0x41)
#endif

namespace heph {
namespace {

constexpr int kPtyFlags = O_RDWR | O_NOCTTY | O_CLOEXEC;

// The slave of `master`. TIOCGPTPEER (Linux 4.13) opens it without a path lookup, so a devpts
// mounted over /dev/pts (a container) cannot hand us another terminal; older kernels go by number.
int OpenSlave(Napi::Env env, int master) {
  int slave = ioctl(master, TIOCGPTPEER, kPtyFlags);
  if (slave >= 0) return slave;
  if (errno != EINVAL && errno != ENOTTY) throw ErrnoError(env, errno, "ioctl", "TIOCGPTPEER");
  unsigned int number = 0;
  if (ioctl(master, TIOCGPTN, &number) != 0) throw ErrnoError(env, errno, "ioctl", "TIOCGPTN");
  char path[32];
  std::snprintf(path, sizeof path, "/dev/pts/%u", number);
  slave = open(path, kPtyFlags);
  if (slave < 0) throw ErrnoError(env, errno, "open", path);
  return slave;
}

}  // namespace

Napi::Value OpenPty(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "openPty(columns, rows, echo)";
  unsigned short columns = static_cast<unsigned short>(IntegerArg(info, 0, where, "columns", 1, 65535));
  unsigned short rows = static_cast<unsigned short>(IntegerArg(info, 1, where, "rows", 1, 65535));
  bool echo = BooleanArg(info, 2, where, "echo");

  Fd master(open("/dev/ptmx", kPtyFlags | O_NONBLOCK));
  if (master.get() < 0) throw ErrnoError(env, errno, "open", "/dev/ptmx");
  int unlock = 0;
  if (ioctl(master.get(), TIOCSPTLCK, &unlock) != 0) throw ErrnoError(env, errno, "ioctl", "TIOCSPTLCK");
  Fd slave(OpenSlave(env, master.get()));

  struct termios mode;
  if (tcgetattr(slave.get(), &mode) != 0) throw ErrnoError(env, errno, "tcgetattr");
  mode.c_oflag &= ~static_cast<tcflag_t>(ONLCR);
  if (!echo) mode.c_lflag &= ~static_cast<tcflag_t>(ECHO | ECHONL);
  if (tcsetattr(slave.get(), TCSANOW, &mode) != 0) throw ErrnoError(env, errno, "tcsetattr");
  struct winsize size{};
  size.ws_row = rows;
  size.ws_col = columns;
  if (ioctl(master.get(), TIOCSWINSZ, &size) != 0) throw ErrnoError(env, errno, "ioctl", "TIOCSWINSZ");

  Napi::Object result = Napi::Object::New(env);
  result.Set("master", Napi::Number::New(env, master.get()));
  result.Set("slave", Napi::Number::New(env, slave.get()));
  master.release();
  slave.release();
  return result;
}

}  // namespace heph
