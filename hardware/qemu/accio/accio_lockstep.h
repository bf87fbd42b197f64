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
#include <limits.h>
#include <linux/futex.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>
#include <sys/syscall.h>
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

/*
 * A SoC takes the barrier at time b at b or up to its slack later: its harts
 * end their turns after whole translation blocks once they are within the
 * slack of the barrier's timer (which is due at b + slack), rather than in
 * blocks cut to the exact instruction, translated anew for every length.
 * The slack is a sixteenth of the lookahead, at most 2 us. Barriers are
 * the lookahead less the slack apart, so a frame sent after a SoC took
 * barrier b still reaches any NIC after that NIC took the next one. Both
 * ends of a wire compute the next barrier with ls_step_ns().
 */
static inline uint64_t ls_slack_ns(uint64_t lookahead)
{
    uint64_t s = lookahead / 16;

    return s < 2000 ? s : 2000;
}

static inline uint64_t ls_step_ns(uint64_t lookahead)
{
    return lookahead - ls_slack_ns(lookahead);
}

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

/* nanoseconds from @t0 to @t1 (CLOCK_MONOTONIC) */
static inline uint64_t ls_ns_between(const struct timespec *t0,
                                     const struct timespec *t1)
{
    return (uint64_t)(t1->tv_sec - t0->tv_sec) * 1000000000ull +
           (uint64_t)t1->tv_nsec - (uint64_t)t0->tv_nsec;
}

/*
 * One more look of a wait that began at @t0 (CLOCK_MONOTONIC) and looks
 * for up to @spin_ns: false when its time is up, else true once the core
 * was offered to any other runnable thread.
 */
static inline bool ls_look_on(const struct timespec *t0, uint64_t spin_ns)
{
    struct timespec t;

    clock_gettime(CLOCK_MONOTONIC, &t);
    if (ls_ns_between(t0, &t) >= spin_ns) {
        return false;
    }
    sched_yield();
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
    struct timespec t0;
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
        if (!ls_look_on(&t0, spin_ns)) {
            return true;
        }
    }
}

/* ---- the barrier in shared memory ---------------------------------------- */

#define LS_SHM_MAGIC 0xacc15e00u
/* a histogram of a SoC's waits: under 1, 2, 4, ... us, the last the rest */
#define LS_WAIT_BUCKETS 12

/*
 * What a SoC's waits at the barrier cost it, kept in its place there for
 * the hub's stats: the wall time it waited for the others, the barriers
 * at which it was not the last to arrive, the waits that slept, and the
 * waits by length. And where in their slack (ls_slack_ns) it took its
 * barriers: how many inside it, at the end of a translation block before
 * the timer's expiry, and the furthest past a barrier's time. And the wall
 * time it ran between barriers (from leaving one to reaching the next),
 * with, summed over the barriers, the longest such run of any SoC: the
 * wall time a barrier that cost nothing would have taken. Over the run of
 * the SoC that ran longest, that sum is what the SoCs' unequal work
 * between barriers costs when they meet at every barrier (a protocol that
 * let a SoC run ahead of the slowest would pay less: cluster.py,
 * window_wall); the phase's wall time over it, what the barriers
 * themselves cost (their waits' wake-ups, the hub's exchanges).
 */
typedef struct {
    uint64_t wait_ns, waits, sleeps;
    uint64_t hist[LS_WAIT_BUCKETS];     /* [k]: under 2^k us, but the last */
    uint64_t in_slack, past_ns_max;
    uint64_t run_ns, bound_ns;
} LsShmWaits;

/*
 * One SoC's place, written by it alone (but gone, which the hub sets for a
 * SoC whose wire broke). What it says at a barrier is kept by the
 * barrier's parity: a SoC reaches barrier g + 2 only after every other
 * has read what it said at g.
 */
typedef struct {
    uint64_t gen;           /* the barriers it has reached (release) */
    uint64_t gone;          /* 0, or the first barrier it is not at */
    uint64_t mine[2];       /* its SYNC at barrier g, in [g & 1] */
    uint32_t sent[2];       /* it sent a frame since the barrier before g */
    uint64_t run[2];        /* the wall time it ran before reaching g */
    uint64_t b;             /* the time of its last barrier (for the hub) */
    uint64_t barriers;      /* barriers and skips it passed before it */
    uint64_t skips;
    LsShmWaits waits;       /* its waits before that barrier */
} __attribute__((aligned(64))) LsShmNode;

typedef struct {
    uint32_t magic, nnodes;
    uint64_t lat_min;       /* the shortest node link */
    uint64_t fab_next;      /* the fabric's next step, as the hub last saw it */
    uint32_t seq;           /* bumped at each arrival and departure (futex) */
    uint32_t sleepers;      /* sides asleep on seq */
    uint8_t pad[32];
    LsShmNode node[];
} __attribute__((aligned(64))) LsShm;

static inline size_t ls_shm_size(uint32_t nnodes)
{
    return sizeof(LsShm) + nnodes * sizeof(LsShmNode);
}

static inline void ls_shm_bump(LsShm *s)
{
    __atomic_fetch_add(&s->seq, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&s->sleepers, __ATOMIC_SEQ_CST)) {
        syscall(SYS_futex, &s->seq, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
    }
}

/* SoC @i reaches barrier @gen, at virtual time @b */
static inline void ls_shm_arrive(LsShm *s, uint32_t i, uint64_t gen,
                                 uint64_t b, uint64_t mine, bool sent,
                                 uint64_t run, uint64_t barriers,
                                 uint64_t skips, const LsShmWaits *w)
{
    LsShmNode *n = &s->node[i];

    n->mine[gen & 1] = mine;
    n->sent[gen & 1] = sent;
    n->run[gen & 1] = run;
    n->b = b;
    n->barriers = barriers;
    n->skips = skips;
    n->waits = *w;
    __atomic_store_n(&n->gen, gen, __ATOMIC_RELEASE);
    ls_shm_bump(s);
}

/*
 * SoC @i is at no barrier from @gen on: it leaves there (at time @b), or,
 * with @gen 0, its wire broke after the last barrier it reached.
 */
static inline void ls_shm_leave(LsShm *s, uint32_t i, uint64_t gen, uint64_t b)
{
    LsShmNode *n = &s->node[i];

    if (__atomic_load_n(&n->gone, __ATOMIC_ACQUIRE)) {
        return;
    }
    if (gen) {
        n->b = b;
    } else {
        gen = __atomic_load_n(&n->gen, __ATOMIC_ACQUIRE) + 1;
    }
    __atomic_store_n(&n->gone, gen, __ATOMIC_RELEASE);
    ls_shm_bump(s);
}

/* SoC @i takes part in barrier @gen */
static inline bool ls_shm_at(LsShm *s, uint32_t i, uint64_t gen)
{
    uint64_t g = __atomic_load_n(&s->node[i].gone, __ATOMIC_ACQUIRE);

    return !g || gen < g;
}

static inline bool ls_shm_all_in(LsShm *s, uint64_t gen)
{
    for (uint32_t i = 0; i < s->nnodes; i++) {
        if (ls_shm_at(s, i, gen) &&
            __atomic_load_n(&s->node[i].gen, __ATOMIC_ACQUIRE) < gen) {
            return false;
        }
    }
    return true;
}

/*
 * Once every SoC is at barrier @gen: the longest wall time any of them ran
 * before reaching it.
 */
static inline uint64_t ls_shm_longest_run(LsShm *s, uint64_t gen)
{
    uint64_t m = 0;

    for (uint32_t i = 0; i < s->nnodes; i++) {
        if (ls_shm_at(s, i, gen)) {
            uint64_t r = s->node[i].run[gen & 1];

            m = r > m ? r : m;
        }
    }
    return m;
}

/*
 * Wait until every SoC that takes part in barrier @gen has reached it:
 * first looking for up to @spin_ns, yielding the core between looks (as
 * ls_wait_in), then asleep on the futex that every arrival wakes. The
 * wait is counted in @w.
 */
static inline void ls_shm_wait(LsShm *s, uint64_t gen, uint64_t spin_ns,
                               LsShmWaits *w)
{
    struct timespec t0, t1;
    bool slept = false;
    uint64_t ns, us;
    int k = 0;

    if (ls_shm_all_in(s, gen)) {
        return;     /* the last to arrive reads no clock */
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    while (!ls_shm_all_in(s, gen) && ls_look_on(&t0, spin_ns)) {
        /* another look */
    }
    for (;;) {
        uint32_t seq = __atomic_load_n(&s->seq, __ATOMIC_SEQ_CST);
        struct timespec most = { 1, 0 };

        if (ls_shm_all_in(s, gen)) {
            break;
        }
        __atomic_fetch_add(&s->sleepers, 1, __ATOMIC_SEQ_CST);
        if (!ls_shm_all_in(s, gen)) {
            syscall(SYS_futex, &s->seq, FUTEX_WAIT, seq, &most, NULL, 0);
            slept = true;
        }
        __atomic_fetch_sub(&s->sleepers, 1, __ATOMIC_SEQ_CST);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    ns = ls_ns_between(&t0, &t1);
    for (us = ns / 1000; us && k < LS_WAIT_BUCKETS - 1; us >>= 1) {
        k++;
    }
    w->hist[k]++;
    w->wait_ns += ns;
    w->waits++;
    w->sleeps += slept;
}

/*
 * At barrier @gen, at time @b, every SoC at it having arrived: false when
 * the hub must take part (a frame was sent since the barrier before, the
 * fabric moves one before b plus the shortest link, or a SoC is gone that
 * took part in the barrier before); else true, and *@ev is the hub's
 * answer: the earliest SYNC and the fabric's next step.
 */
static inline bool ls_shm_quiet(LsShm *s, uint64_t gen, uint64_t b,
                                uint64_t *ev)
{
    uint64_t fab = __atomic_load_n(&s->fab_next, __ATOMIC_ACQUIRE);
    uint64_t e = fab;

    if (fab < b + s->lat_min) {
        return false;
    }
    for (uint32_t i = 0; i < s->nnodes; i++) {
        if (!ls_shm_at(s, i, gen)) {
            if (ls_shm_at(s, i, gen - 1)) {
                return false;
            }
            continue;
        }
        if (s->node[i].sent[gen & 1]) {
            return false;
        }
        if (s->node[i].mine[gen & 1] < e) {
            e = s->node[i].mine[gen & 1];
        }
    }
    *ev = e;
    return true;
}

#endif /* ACCIO_LOCKSTEP_H */