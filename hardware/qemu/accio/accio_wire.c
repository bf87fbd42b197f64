/*
 * The Accio NIC's wire: capture and a lockstep wire between two QEMUs.
 *
 * Lockstep. Two QEMUs under -icount, each with its own virtual clock, join
 * their NICs through one Unix stream socket, or every NIC meets the hub of
 * accio cluster (tools/cluster/) on one: the messages (HELLO, START, FRAME,
 * SYNC) are in accio_lockstep.h, shared with the hub.
 *
 * Until its NIC is first enabled a SoC boots on its own (a boot alone
 * repeats exactly too, and no frame can leave a disabled NIC). The first
 * enable sends START and waits for the peer's: the first barrier is at the
 * later of the two times, which neither SoC has passed.
 *
 * Both clocks stop at the same barriers: each at the barrier's time b or
 * within its slack after it, where the running harts end their turns after
 * whole translation blocks (ls_slack_ns; the barrier's timer is due at b
 * plus the slack and may run early, icount_parallel_slack_timer). At a
 * barrier each side sends SYNC and reads the other's messages up to its
 * SYNC; the frames are delivered at t + latency, never before the barrier.
 * The next barrier is one latency less the slack later (ls_step_ns), or
 * later still when neither side can do anything sooner (a skip: idle SoCs
 * do not pay a barrier per latency). A frame sent after a side took one
 * barrier therefore reaches the peer after the peer took the next, which
 * is where the peer reads it: both SoCs see the same frames at the same
 * virtual times in every run, whatever the host's scheduling.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#include "qemu/osdep.h"
#include "qemu/cutils.h"
#include "qemu/error-report.h"
#include "qemu/timer.h"
#include "qemu/sockets.h"
#include "system/cpus.h"
#include "system/cpu-timers.h"
#include "system/runstate.h"
#include "hw/accio/accio_wire.h"
#include "hw/accio/accio_lockstep.h"

#include <sys/mman.h>
#include <sys/un.h>
#include <poll.h>

/* ---- capture ------------------------------------------------------------ */

struct AccioPcap {
    FILE *f;
    uint32_t snaplen;
};

AccioPcap *accio_pcap_open(const char *path, uint32_t snaplen, Error **errp)
{
    struct {
        uint32_t magic;
        uint16_t major, minor;
        int32_t zone;
        uint32_t sigfigs, snaplen, linktype;
    } hdr = { 0xa1b23c4d, 2, 4, 0, 0, snaplen, 1 /* Ethernet */ };
    AccioPcap *p;
    FILE *f;

    if (snaplen < 14) {
        error_setg(errp, "accio-nic: pcap-snaplen must be at least 14");
        return NULL;
    }
    f = fopen(path, "wb");
    if (!f) {
        error_setg_errno(errp, errno, "accio-nic: cannot write pcap %s", path);
        return NULL;
    }
    if (fwrite(&hdr, sizeof(hdr), 1, f) != 1 || fflush(f)) {
        error_setg_errno(errp, errno, "accio-nic: cannot write pcap %s", path);
        fclose(f);
        return NULL;
    }
    p = g_new0(AccioPcap, 1);
    p->f = f;
    p->snaplen = snaplen;
    return p;
}

void accio_pcap_frame(AccioPcap *p, const uint8_t *buf, size_t len,
                      uint64_t t_ns)
{
    uint32_t rec[4];

    if (!p || !p->f) {
        return;
    }
    rec[0] = t_ns / NANOSECONDS_PER_SECOND;
    rec[1] = t_ns % NANOSECONDS_PER_SECOND;
    rec[2] = MIN(len, p->snaplen);
    rec[3] = len;
    if (fwrite(rec, sizeof(rec), 1, p->f) != 1 ||
        fwrite(buf, rec[2], 1, p->f) != 1 || fflush(p->f)) {
        warn_report("accio-nic: pcap write failed (%s); capture stopped",
                    strerror(errno));
        fclose(p->f);
        p->f = NULL;
    }
}

void accio_pcap_close(AccioPcap *p)
{
    if (p && p->f) {
        fclose(p->f);
    }
    g_free(p);
}

/* ---- lockstep wire ------------------------------------------------------ */

#define LS_WAIT_S 120

typedef struct {
    uint64_t at;        /* delivery time */
    uint32_t len;
    uint8_t data[];
} LsFrame;

struct AccioLockstep {
    int fd;
    bool started;
    bool dead;
    uint64_t latency;
    uint64_t spin_ns;       /* look this long before a barrier's wait sleeps */
    uint64_t barrier;       /* the time of the next (or current) barrier */
    uint64_t sent_min;      /* earliest delivery of what went out since */
    QEMUTimer *sync_timer;
    QEMUTimer *rx_timer;
    GQueue pending;         /* LsFrame, by delivery time */
    AccioWireDeliver *deliver;
    void *opaque;
    uint64_t barriers, skips, frames_out, frames_in;
    LsShm *shm;             /* the barrier in memory shared with the others */
    size_t shm_size;
    uint32_t shm_node;      /* this SoC's place there */
    uint64_t gen;           /* the barriers it has reached there */
    uint64_t quiet;         /* barriers passed without the far end */
    LsShmWaits waits;       /* what its waits there cost */
    struct timespec left;   /* when it left the last barrier there */
    FILE *trace;            /* a record for each barrier there, or NULL */
};

static bool ls_write(int fd, const void *buf, size_t n)
{
    return ls_io_all(fd, (void *)buf, n, true);
}

static bool ls_read(int fd, void *buf, size_t n)
{
    return ls_io_all(fd, buf, n, false);
}

static bool ls_send(AccioLockstep *l, uint32_t type, uint64_t t,
                    const void *data, uint32_t len)
{
    LsHeader h = { type, len, t };

    return ls_write(l->fd, &h, sizeof(h)) &&
           (!len || ls_write(l->fd, data, len));
}

static void ls_peer_gone(AccioLockstep *l, const char *why)
{
    if (l->dead) {
        return;
    }
    l->dead = true;
    if (l->shm) {
        ls_shm_leave(l->shm, l->shm_node, l->gen + 1, l->barrier);
    }
    timer_del(l->sync_timer);
    close(l->fd);
    l->fd = -1;
    info_report("accio-nic: lockstep wire: %s at %" PRIu64 " ns; this SoC "
                "runs on alone (%" PRIu64 " barriers, %" PRIu64 " of them "
                "in shared memory alone, %" PRIu64 " skips, %" PRIu64
                " frames out, %" PRIu64 " in)", why,
                qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL), l->barriers, l->quiet,
                l->skips, l->frames_out, l->frames_in);
}

static gint ls_by_time(gconstpointer a, gconstpointer b, gpointer unused)
{
    const LsFrame *x = a, *y = b;

    return x->at < y->at ? -1 : x->at > y->at;
}

static void ls_arm_rx(AccioLockstep *l)
{
    LsFrame *f = g_queue_peek_head(&l->pending);

    if (f) {
        timer_mod(l->rx_timer, f->at);
    }
}

static void ls_rx_timer(void *opaque)
{
    AccioLockstep *l = opaque;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    LsFrame *f;

    while ((f = g_queue_peek_head(&l->pending)) && f->at <= now) {
        g_queue_pop_head(&l->pending);
        l->deliver(l->opaque, f->data, f->len, f->at);
        g_free(f);
    }
    ls_arm_rx(l);
}

/* The earliest time this SoC can do anything on its own. */
static uint64_t ls_own_next(AccioLockstep *l)
{
    int64_t d;

    if (!all_cpu_threads_idle()) {
        return l->barrier;
    }
    d = qemu_clock_deadline_ns_all(QEMU_CLOCK_VIRTUAL, QEMU_TIMER_ATTR_ALL);
    return d < 0 ? UINT64_MAX : qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) + d;
}

static void ls_sync_timer(void *opaque)
{
    AccioLockstep *l = opaque;
    uint64_t mine = ls_own_next(l), theirs = UINT64_MAX;
    uint64_t recv_min = UINT64_MAX, ev, next;
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    LsHeader h;

    /*
     * A SoC that has asked to power off takes no further barrier: whether
     * the main loop reaches this timer before it ends is up to the host,
     * and the peer must see it leave at the same barrier in every run.
     */
    if (qemu_shutdown_requested_get()) {
        ls_peer_gone(l, "this SoC powers off");
        return;
    }
    if (now > l->barrier) {
        /* taken in the barrier's slack, after a whole translation block */
        l->waits.in_slack += now < l->barrier + ls_slack_ns(l->latency);
        l->waits.past_ns_max = MAX(l->waits.past_ns_max, now - l->barrier);
    }
    if (l->shm) {
        /* the others are met in memory; the far end only when it must */
        uint64_t g = l->gen + 1, run = 0, waited = l->waits.wait_ns;
        struct timespec t;

        clock_gettime(CLOCK_MONOTONIC, &t);
        if (l->gen) {
            run = ls_ns_between(&l->left, &t);
            l->waits.run_ns += run;
        }
        ls_shm_arrive(l->shm, l->shm_node, g, l->barrier, mine,
                      l->sent_min != UINT64_MAX, run, l->barriers, l->skips,
                      &l->waits);
        l->gen = g;
        ls_shm_wait(l->shm, g, l->spin_ns, &l->waits);
        if (l->trace) {
            /* a few stores into stdio's buffer: nothing to see at 5 us */
            uint64_t rec[3] = { l->barrier, run, l->waits.wait_ns - waited };

            fwrite_unlocked(rec, sizeof(rec), 1, l->trace);
        }
        /* read before this SoC reaches g + 1, after which g's may change */
        l->waits.bound_ns += ls_shm_longest_run(l->shm, g);
        if (ls_shm_quiet(l->shm, g, l->barrier, &theirs)) {
            l->quiet++;
            goto agreed;
        }
    }
    if (!ls_send(l, LS_SYNC, mine, NULL, 0)) {
        ls_peer_gone(l, "the peer left");
        return;
    }
    for (;;) {
        LsFrame *f;

        if (!ls_wait_in(l->fd, l->spin_ns) || !ls_read(l->fd, &h, sizeof(h))) {
            ls_peer_gone(l, "the peer left");
            return;
        }
        if (h.type == LS_SYNC) {
            theirs = h.t;
            break;
        }
        if (h.type != LS_FRAME || h.len > LS_FRAME_MAX) {
            ls_peer_gone(l, "bad message from the peer");
            return;
        }
        f = g_malloc(sizeof(*f) + h.len);
        f->len = h.len;
        f->at = MAX(h.t + l->latency, l->barrier);
        if (!ls_read(l->fd, f->data, h.len)) {
            g_free(f);
            ls_peer_gone(l, "the peer left");
            return;
        }
        recv_min = MIN(recv_min, f->at);
        g_queue_insert_sorted(&l->pending, f, ls_by_time, NULL);
        l->frames_in++;
    }
agreed:
    l->barriers++;
    /* both sides compute the same next barrier from the same four times */
    ev = MIN(MIN(mine, theirs), MIN(l->sent_min, recv_min));
    next = l->barrier + ls_step_ns(l->latency);
    if (ev > next) {
        next = MIN(ev, l->barrier + LS_SKIP_MAX_NS);
        l->skips++;
    }
    l->barrier = next;
    l->sent_min = UINT64_MAX;
    ls_arm_rx(l);
    timer_mod(l->sync_timer, next + ls_slack_ns(l->latency));
    if (l->shm) {
        clock_gettime(CLOCK_MONOTONIC, &l->left);
    }
}

void accio_lockstep_start(AccioLockstep *l)
{
    uint64_t now = qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
    LsHeader h;

    if (l->started || l->dead) {
        return;
    }
    l->started = true;
    if (!ls_send(l, LS_START, now, NULL, 0) || !ls_read(l->fd, &h, sizeof(h))) {
        ls_peer_gone(l, "the peer left before its NIC was enabled");
        return;
    }
    if (h.type != LS_START) {
        ls_peer_gone(l, "bad message from the peer");
        return;
    }
    l->barrier = MAX(now, h.t);
    timer_mod(l->sync_timer, l->barrier + ls_slack_ns(l->latency));
}

void accio_lockstep_send(AccioLockstep *l, const uint8_t *buf, size_t len,
                         uint64_t t_ns)
{
    /* the barrier the peer reads this at is l->barrier; never deliver before */
    uint64_t at = MAX(t_ns + l->latency, l->barrier);

    if (!l->started || l->dead || len > LS_FRAME_MAX) {
        return;     /* nothing leaves before the first enable */
    }
    if (!ls_send(l, LS_FRAME, t_ns, buf, len)) {
        ls_peer_gone(l, "the peer left");
        return;
    }
    l->sent_min = MIN(l->sent_min, at);
    l->frames_out++;
}

static int ls_meet(const char *spec, Error **errp)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    bool listening = g_str_has_prefix(spec, "listen:");
    const char *path = strchr(spec, ':');
    int fd, c = -1;
    int64_t until = g_get_monotonic_time() + LS_WAIT_S * G_USEC_PER_SEC;

    if (!path || (!listening && !g_str_has_prefix(spec, "connect:"))) {
        error_setg(errp, "accio-nic: lockstep must be listen:PATH or "
                   "connect:PATH, not \"%s\"", spec);
        return -1;
    }
    path++;
    if (!*path || strlen(path) >= sizeof(sa.sun_path)) {
        error_setg(errp, "accio-nic: lockstep socket path empty or too long");
        return -1;
    }
    pstrcpy(sa.sun_path, sizeof(sa.sun_path), path);
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        error_setg_errno(errp, errno, "accio-nic: lockstep socket");
        return -1;
    }
    if (listening) {
        struct pollfd pfd = { .fd = fd, .events = POLLIN };

        unlink(path);
        if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 1)) {
            error_setg_errno(errp, errno, "accio-nic: lockstep: cannot "
                             "listen on %s", path);
            close(fd);
            return -1;
        }
        if (poll(&pfd, 1, LS_WAIT_S * 1000) == 1) {
            c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        }
        unlink(path);
        close(fd);
        if (c < 0) {
            error_setg(errp, "accio-nic: lockstep: no peer connected to %s "
                       "within %d s", path, LS_WAIT_S);
        }
        return c;
    }
    while (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
        if ((errno != ENOENT && errno != ECONNREFUSED && errno != EINTR) ||
            g_get_monotonic_time() > until) {
            error_setg_errno(errp, errno, "accio-nic: lockstep: cannot "
                             "connect to %s", path);
            close(fd);
            return -1;
        }
        g_usleep(20 * 1000);
    }
    return fd;
}

/* "INDEX:PATH": this SoC's place in the barrier the hub shares */
static bool ls_shm_open(AccioLockstep *l, const char *spec, Error **errp)
{
    char *end;
    unsigned long idx = strtoul(spec, &end, 10);
    struct stat st;
    LsShm *shm;
    int fd;

    if (end == spec || *end != ':' || !end[1]) {
        error_setg(errp, "accio-nic: lockstep-shm must be INDEX:PATH, not "
                   "'%s'", spec);
        return false;
    }
    fd = open(end + 1, O_RDWR | O_CLOEXEC);
    if (fd < 0 || fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(LsShm)) {
        error_setg_errno(errp, errno, "accio-nic: lockstep-shm: cannot open "
                         "%s", end + 1);
        if (fd >= 0) {
            close(fd);
        }
        return false;
    }
    shm = mmap(NULL, st.st_size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (shm == MAP_FAILED) {
        error_setg_errno(errp, errno, "accio-nic: lockstep-shm: cannot map "
                         "%s", end + 1);
        return false;
    }
    if (shm->magic != LS_SHM_MAGIC || idx >= shm->nnodes ||
        (size_t)st.st_size < ls_shm_size(shm->nnodes)) {
        error_setg(errp, "accio-nic: lockstep-shm: %s is not a barrier "
                   "with a place %lu", end + 1, idx);
        munmap(shm, st.st_size);
        return false;
    }
    l->shm = shm;
    l->shm_size = st.st_size;
    l->shm_node = idx;
    return true;
}

AccioLockstep *accio_lockstep_new(const char *spec, const char *shm_spec,
                                  uint64_t latency_ns, uint64_t spin_ns,
                                  AccioWireDeliver *deliver, void *opaque,
                                  Error **errp)
{
    AccioLockstep *l;
    LsHeader h;
    int fd;

    if (!icount_enabled()) {
        error_setg(errp, "accio-nic: a lockstep wire needs -icount "
                   "(the two virtual clocks are compared)");
        return NULL;
    }
    if (!latency_ns) {
        error_setg(errp, "accio-nic: lockstep-ns must be non-zero");
        return NULL;
    }
    l = g_new0(AccioLockstep, 1);
    l->fd = -1;
    /* the shared barrier first: a bad one fails before any peer is met */
    if (shm_spec && *shm_spec && !ls_shm_open(l, shm_spec, errp)) {
        goto fail;
    }
    fd = ls_meet(spec, errp);
    if (fd < 0) {
        goto fail;
    }
    l->fd = fd;
    l->latency = latency_ns;
    l->spin_ns = spin_ns;
    if (!ls_send(l, LS_HELLO, latency_ns, NULL, 0) ||
        !ls_read(fd, &h, sizeof(h)) || h.type != LS_HELLO) {
        error_setg(errp, "accio-nic: lockstep: no greeting from the peer");
        goto fail;
    }
    if (h.t != latency_ns) {
        error_setg(errp, "accio-nic: lockstep: the peer's wire latency is "
                   "%" PRIu64 " ns, this one's %" PRIu64 " ns", h.t,
                   latency_ns);
        goto fail;
    }
    l->deliver = deliver;
    l->opaque = opaque;
    l->sent_min = UINT64_MAX;
    g_queue_init(&l->pending);
    l->sync_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, ls_sync_timer, l);
    icount_parallel_slack_timer(l->sync_timer, ls_slack_ns(latency_ns));
    l->rx_timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, ls_rx_timer, l);
    return l;

fail:
    if (l->fd >= 0) {
        close(l->fd);
    }
    if (l->shm) {
        munmap(l->shm, l->shm_size);
    }
    g_free(l);
    return NULL;
}

bool accio_lockstep_trace(AccioLockstep *l, const char *path, Error **errp)
{
    if (!l->shm) {
        error_setg(errp, "accio-nic: lockstep-trace needs lockstep-shm "
                   "(it traces the shared barrier)");
        return false;
    }
    l->trace = fopen(path, "wb");
    if (!l->trace) {
        error_setg_errno(errp, errno, "accio-nic: lockstep-trace: cannot "
                         "open %s", path);
        return false;
    }
    setvbuf(l->trace, NULL, _IOFBF, 1 << 20);
    return true;
}

void accio_lockstep_free(AccioLockstep *l)
{
    if (!l) {
        return;
    }
    if (l->trace) {
        fclose(l->trace);
    }
    icount_parallel_slack_timer(NULL, 0);
    timer_free(l->sync_timer);
    timer_free(l->rx_timer);
    g_queue_clear_full(&l->pending, g_free);
    if (l->fd >= 0) {
        close(l->fd);
    }
    if (l->shm) {
        munmap(l->shm, l->shm_size);
    }
    g_free(l);
}
