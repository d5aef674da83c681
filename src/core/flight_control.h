/* The flight recorder's control socket (docs/flight-recorder.md): an abstract unix socket
 * named "dial9/<pid>" (nothing on disk; it goes with the process). A client of the same
 * effective uid, or root, may ask for a dump (SO_PEERCRED); any other is refused.
 * Protocol, one line each way:
 *   client: "dump LOOKBACK_MS LOOKFORWARD_MS REASON\n"
 *   server: "ok DUMP_DIR\n" once the dump's manifest is written, or "error WHY\n". */
#ifndef D9_CORE_FLIGHT_CONTROL_H
#define D9_CORE_FLIGHT_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/un.h>

/* The socket's address for process `pid`; its length in *len. */
static inline void d9_control_address(pid_t pid, struct sockaddr_un *addr, socklen_t *len) {
    memset(addr, 0, sizeof *addr);
    addr->sun_family = AF_UNIX;
    int n = snprintf(addr->sun_path + 1, sizeof addr->sun_path - 1, "dial9/%d", (int)pid);
    *len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)n);
}

/* Listen on this process's socket: the fd (non-blocking, close-on-exec), or -1 with errno. */
int d9_control_listen(void);
/* Accept one client: its fd (blocking, with a receive timeout), or -1 (none waiting). *allowed:
 * the client runs as our effective uid or as root; *peer_uid: who it is. */
int d9_control_accept(int listen_fd, bool *allowed, unsigned *peer_uid);
/* Read the request line (at most len-1 bytes, NUL-terminated, no newline). false: none. */
bool d9_control_read_line(int fd, char *line, size_t len);
/* Send one reply line and close fd. */
void d9_control_reply(int fd, const char *line);

#endif
