// Descriptors passed over unix sockets. See unix(7) (SCM_RIGHTS, SOCK_SEQPACKET, "file descriptors
// in flight"), socketpair(2), sendmsg(2), recvmsg(2) (MSG_PEEK, MSG_CMSG_CLOEXEC, MSG_CTRUNC),
// cmsg(3).
//
// A descriptor sent and not yet received is held by the receiving socket's queue: the open file
// description it names (and so its OFD locks) lives as long as that socket does, whoever holds
// it, even after the sender has exited. A received message brings its descriptors into this
// process close-on-exec; a peeked one brings copies and stays queued. Nothing here blocks: an
// empty queue answers null, a full one false.
#include "fdpass.h"

#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include <climits>
#include <cstring>
#include <vector>

#include "args.h"
#include "errors.h"

namespace heph {
namespace {

// The kernel's limit of descriptors in one SCM_RIGHTS message (SCM_MAX_FD, include/net/scm.h).
constexpr size_t kMaxFdsPerMessage = 253;
// Largest payload a message of ours carries; a longer one is not ours.
constexpr size_t kMaxPayloadBytes = 64 * 1024;

// One message's header: `data` as its only buffer, `control` as its ancillary data.
struct Message {
  struct iovec iov;
  struct msghdr msg;

  Message(char* data, size_t length, std::vector<char>& control) {
    iov.iov_base = data;
    iov.iov_len = length;
    std::memset(&msg, 0, sizeof msg);
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control.data();
    msg.msg_controllen = control.size();
  }
  Message(const Message&) = delete;
  Message& operator=(const Message&) = delete;
};

// Descriptors that arrived with a message: closed on every path that does not hand them over.
class ReceivedFds {
 public:
  ReceivedFds() = default;
  ReceivedFds(const ReceivedFds&) = delete;
  ReceivedFds& operator=(const ReceivedFds&) = delete;
  ~ReceivedFds() {
    for (int fd : fds_) close(fd);
  }
  void Add(int fd) { fds_.push_back(fd); }
  const std::vector<int>& fds() const { return fds_; }
  // The caller owns them from now on.
  void Release() { fds_.clear(); }

 private:
  std::vector<int> fds_;
};

}  // namespace

// seqpacketPair() -> [fd, fd]: a connected pair of unix SOCK_SEQPACKET sockets (message
// boundaries kept), close-on-exec.
Napi::Value SeqpacketPair(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  int fds[2];
  if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) throw ErrnoError(env, errno, "socketpair");
  Napi::Array out = Napi::Array::New(env, 2);
  out.Set(uint32_t{0}, Napi::Number::New(env, fds[0]));
  out.Set(uint32_t{1}, Napi::Number::New(env, fds[1]));
  return out;
}

// sendFds(socket, payload, fds) -> true when sent, false when it does not fit: the socket's send
// buffer is full (EAGAIN), or this user has as many descriptors in flight as RLIMIT_NOFILE allows
// (ETOOMANYREFS; see unix(7)); the caller decides what then. One message: the payload bytes (at
// least one) with up to 253 descriptors attached (none: no SCM_RIGHTS). Never raises SIGPIPE.
Napi::Value SendFds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "sendFds(socket, payload, fds)";
  int sock = FdArg(info, 0, where, "socket");
  if (!info[1].IsBuffer()) ThrowArgumentError(env, where, "payload", "a Buffer", info[1]);
  Napi::Buffer<char> payload = info[1].As<Napi::Buffer<char>>();
  if (payload.Length() == 0 || payload.Length() > kMaxPayloadBytes) {
    ThrowArgumentError(env, where, "payload", "a Buffer of 1 to 65536 bytes", info[1]);
  }
  if (!info[2].IsArray()) ThrowArgumentError(env, where, "fds", "an array of descriptors", info[2]);
  Napi::Array list = info[2].As<Napi::Array>();
  if (list.Length() > kMaxFdsPerMessage) {
    ThrowArgumentError(env, where, "fds", "an array of 0 to 253 descriptors", info[2]);
  }
  std::vector<int> fds(list.Length());
  for (uint32_t i = 0; i < list.Length(); i++) {
    fds[i] = static_cast<int>(CheckInteger(list.Get(i), where, "fds[i]", 0, INT_MAX));
  }

  std::vector<char> control(fds.empty() ? 0 : CMSG_SPACE(sizeof(int) * fds.size()), 0);
  Message message(payload.Data(), payload.Length(), control);
  struct msghdr& msg = message.msg;
  if (fds.empty()) {
    msg.msg_control = nullptr;
    msg.msg_controllen = 0;
  } else {
    struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
    std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
  }

  ssize_t sent;
  do sent = sendmsg(sock, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
  while (sent < 0 && errno == EINTR);
  if (sent < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == ETOOMANYREFS) return Napi::Boolean::New(env, false);
    throw ErrnoError(env, errno, "sendmsg");
  }
  // A stream socket may take part of the payload; ours are whole or nothing.
  if (static_cast<size_t>(sent) != payload.Length()) throw ErrnoError(env, EMSGSIZE, "sendmsg");
  return Napi::Boolean::New(env, true);
}

// receiveFds(socket, peek) -> {payload, fds} of the first queued message, or null when none is
// queued. With `peek` the message stays queued and `fds` are fresh copies of its descriptors.
// Every received descriptor is close-on-exec. A message whose descriptors did not all arrive
// (MSG_CTRUNC) or whose payload was cut (MSG_TRUNC) is an error, and what did arrive is closed.
Napi::Value ReceiveFds(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  const char* where = "receiveFds(socket, peek)";
  int sock = FdArg(info, 0, where, "socket");
  bool peek = BooleanArg(info, 1, where, "peek");

  std::vector<char> data(kMaxPayloadBytes);
  std::vector<char> control(CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage), 0);
  Message message(data.data(), data.size(), control);
  struct msghdr& msg = message.msg;

  ssize_t got;
  do got = recvmsg(sock, &msg, MSG_DONTWAIT | MSG_CMSG_CLOEXEC | (peek ? MSG_PEEK : 0));
  while (got < 0 && errno == EINTR);
  if (got < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK) return env.Null();
    throw ErrnoError(env, errno, "recvmsg");
  }

  // Own every descriptor that arrived first, so each error path below closes them.
  ReceivedFds received;
  for (struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg); cmsg != nullptr; cmsg = CMSG_NXTHDR(&msg, cmsg)) {
    if (cmsg->cmsg_level != SOL_SOCKET || cmsg->cmsg_type != SCM_RIGHTS) continue;
    size_t count = (cmsg->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    const unsigned char* bytes = CMSG_DATA(cmsg);
    for (size_t i = 0; i < count; i++) {
      int fd;
      std::memcpy(&fd, bytes + i * sizeof(int), sizeof fd);
      received.Add(fd);
    }
  }
  if (got == 0 && received.fds().empty()) return env.Null();  // end of stream: nothing is queued
  // Our control buffer fits the most any sender may pass: a cut short of it is the kernel having no
  // descriptor free for the rest (RLIMIT_NOFILE), which is EMFILE, not a message too long.
  if (msg.msg_flags & MSG_CTRUNC) {
    if (received.fds().size() < kMaxFdsPerMessage) throw ErrnoError(env, EMFILE, "recvmsg (descriptors cut: no descriptor free for them)");
    throw ErrnoError(env, EMSGSIZE, "recvmsg (descriptors cut: MSG_CTRUNC)");
  }
  if (msg.msg_flags & MSG_TRUNC) throw ErrnoError(env, EMSGSIZE, "recvmsg (payload cut: MSG_TRUNC)");

  Napi::Object out = Napi::Object::New(env);
  out.Set("payload", Napi::Buffer<char>::Copy(env, data.data(), static_cast<size_t>(got)));
  Napi::Array fds = Napi::Array::New(env, received.fds().size());
  for (uint32_t i = 0; i < received.fds().size(); i++) fds.Set(i, Napi::Number::New(env, received.fds()[i]));
  out.Set("fds", fds);
  received.Release();
  return out;
}

}  // namespace heph
