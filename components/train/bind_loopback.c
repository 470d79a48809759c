/* Preloaded (LD_PRELOAD) into the local cluster's task processes: a bind() to the wildcard
 * address (0.0.0.0, or :: for a dual-stack socket) binds to loopback instead (127.0.0.1, or
 * ::ffff:127.0.0.1, which keeps a dual-stack socket reachable at 127.0.0.1 only).
 *
 * Why: TensorFlow's gRPC server binds "0.0.0.0:<port>" whatever the cluster spec says
 * (GrpcServer::Init); neither TF_CONFIG, the ServerDef nor gRPC's environment sets the
 * address. Its servers run any graph sent to them, unauthenticated, so in a local cluster,
 * where every task is on 127.0.0.1, nothing else may reach them. Built by
 * components/train/loopback.py. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
  static bind_fn real_bind;
  if (!real_bind) real_bind = (bind_fn)dlsym(RTLD_NEXT, "bind");
  if (!real_bind) {
    errno = ENOSYS;
    return -1;
  }
  if (addr && addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
    struct sockaddr_in in4;
    memcpy(&in4, addr, sizeof in4);
    if (in4.sin_addr.s_addr == htonl(INADDR_ANY)) {
      in4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
      return real_bind(fd, (const struct sockaddr *)&in4, sizeof in4);
    }
  }
  if (addr && addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
    struct sockaddr_in6 in6;
    memcpy(&in6, addr, sizeof in6);
    if (IN6_IS_ADDR_UNSPECIFIED(&in6.sin6_addr)) {
      static const unsigned char mapped[16] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
                                               127, 0, 0, 1};
      memcpy(&in6.sin6_addr, mapped, sizeof mapped);
      return real_bind(fd, (const struct sockaddr *)&in6, sizeof in6);
    }
  }
  return real_bind(fd, addr, len);
}
