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
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
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

/*
 * Wait for the next message on @fd: for up to @spin_ns look for it, giving
 * the core to any other runnable thread between looks (sched_yield), then
 * block (ls_io_all's read). A wait that blocks costs a wake-up, and waking
 * a sleeping core costs tens of microseconds on a virtual machine whose
 * idle cores its hypervisor halts (a round trip between two processes on
 * two cores of the 2-core development VM: 56 us blocking, 4 us looking).
 * Yielding keeps a waiting side from taking a core from a side with work,
 * so the look pays off even when sides outnumber cores; the bound keeps a
 * long wait (a SoC still booting) blocking. Returns false when the socket
 * broke; the read that follows reports a peer that has gone.
 */
static inline bool ls_wait_in(int fd, uint64_t spin_ns)
{
    struct timespec t0, t;
    uint8_t b;

    if (!spin_ns) {
        return true;
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        ssize_t r = recv(fd, &b, 1, MSG_DONTWAIT | MSG_PEEK);

        if (r >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK &&
                       errno != EINTR)) {
            return r >= 0;
        }
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((uint64_t)(t.tv_sec - t0.tv_sec) * 1000000000ull +
            (uint64_t)t.tv_nsec - (uint64_t)t0.tv_nsec >= spin_ns) {
            return true;
        }
        sched_yield();
    }
}

#endif /* ACCIO_LOCKSTEP_H */
