/*
 * The lockstep wire's protocol, shared by its two ends: the NIC model in
 * QEMU (accio_wire.c) and the hub of accio cluster (tools/cluster/hub.c).
 *
 * A Unix stream socket carries messages of a 16-byte header (type, length,
 * time in ns, host byte order) and, for a frame, its bytes:
 *
 *   HELLO  t = the wire's latency (the lookahead); both ends must agree
 *   START  t = the virtual time this NIC was first enabled
 *   FRAME  t = the virtual time the frame left the sender's NIC; the
 *              receiver delivers it at t + latency
 *   SYNC   t = the earliest virtual time at which the sender can next do
 *              anything (now while a vcpu runs; its next timer when all
 *              its vcpus are idle)
 *
 * Plain C, no QEMU headers: the hub is built outside QEMU.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef ACCIO_LOCKSTEP_H
#define ACCIO_LOCKSTEP_H

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <unistd.h>

enum {
    LS_HELLO = 0xacc10001, LS_FRAME = 0xacc10002, LS_SYNC = 0xacc10003,
    LS_START = 0xacc10004,
};

/* the largest frame a message may carry */
#define LS_FRAME_MAX 16384
/* no two barriers further apart than this, even when every side sleeps */
#define LS_SKIP_MAX_NS (100 * 1000000ull)

typedef struct {
    uint32_t type;
    uint32_t len;
    uint64_t t;
} LsHeader;

/*
 * All of @n bytes to (@out) or from the socket, or false: the peer has
 * gone, or the socket broke. No SIGPIPE when the peer has gone.
 */
static inline bool ls_io_all(int fd, void *buf, size_t n, bool out)
{
    uint8_t *p = buf;

    while (n) {
        ssize_t r = out ? send(fd, p, n, MSG_NOSIGNAL) : read(fd, p, n);

        if (r < 0 && errno == EINTR) {
            continue;
        }
        if (r <= 0) {
            return false;
        }
        p += r;
        n -= r;
    }
    return true;
}

#endif /* ACCIO_LOCKSTEP_H */
