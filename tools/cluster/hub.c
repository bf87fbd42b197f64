/*
 * accio-switch: N SoCs (QEMU, -icount) in one network, their virtual clocks
 * advancing together.
 *
 * Every SoC's NIC has a lockstep wire (hardware/qemu/accio/accio_wire.c) and
 * this program is the far end of all of them. To each SoC it is an ordinary
 * peer: HELLO with the lookahead, START, then at each barrier the frames for
 * it and a SYNC. Behind those wires is the fabric (fabric.c): switches and
 * links in virtual time.
 *
 * Time. The lookahead Q is at most twice the shortest node link (the plan
 * says; accio pair's odd latencies take one less): a frame sent after one
 * barrier cannot reach any NIC before the next. At a barrier b the hub
 * has every frame sent before b; it moves the fabric up to b + the shortest
 * link (nothing unseen can reach a switch sooner), hands each SoC what
 * reaches it, and answers every SYNC with the same time: the earliest of
 * all SoCs' next events, the frames on their way, and the fabric's next
 * step. Each SoC then computes the same next barrier as the hub (b + Q, or
 * later when nothing can happen sooner), so idle clusters skip ahead.
 *
 * Placement. Run alone, one process hosts every SoC. Run by mpirun, rank 0
 * holds the fabric and every rank starts and serves the SoCs placed on it;
 * at each barrier a rank sends rank 0 its SoCs' messages in one message
 * and gets their answers in one, on a TCP socket MPI helped set up (or on
 * MPI itself, ACCIO_CLUSTER_TRANSPORT=mpi). Waiting is blocking: reads on
 * the SoCs' and the ranks' sockets, and for MPI tests with sleeps between
 * them (OpenMPI's own waits spin).
 *
 * Shared barrier. With one rank (plan line "shm PATH") the hub makes a
 * memory segment that every SoC maps (accio_lockstep.h, LsShm): the SoCs
 * meet there at every barrier and come to the hub only where the network
 * has work. Its wait for them then polls every wire, and a wire that
 * breaks marks its SoC as gone there. stats.json says how many barriers
 * the hub took part in.
 *
 * Whatever the placement, the fabric sees the same inputs in the same
 * order (node by node, in the plan's order), so the wire is the same.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <mpi.h>

#include "accio_lockstep.h"
#include "fabric.h"

#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* messages between ranks, beside the lockstep wire's (accio_lockstep.h) */
enum { RK_GONE = 0xacc1f001, RK_DONE = 0xacc1f002 };
#define TAG_UP 11
#define TAG_DOWN 12

typedef struct {
    int rank;
    bool service;
    char *sock, *console, *argv_file;
    int lfd, fd;            /* listening socket, the SoC's wire */
    int stdin_fd;
    pid_t pid;
    bool gone;
    bool told;              /* the hub knows it has gone */
    bool hup;               /* its wire broke (shared barrier: marked so) */
    uint64_t mine;          /* its SYNC at this barrier */
} Node;

static struct {
    int rank, ranks;
    bool mpi;
    bool tcp;               /* frames between ranks on TCP (else MPI) */
    int *tfd;               /* rank 0: each rank's socket; others: [0] */
    uint64_t quantum;
    uint64_t spin_ns;       /* look this long before a wait sleeps (plan) */
    char *shm_path;         /* the barrier shared with the SoCs (plan) */
    LsShm *shm;
    int start_s, run_s, grace_s;
    int nnodes;
    Node *nodes;
    Fabric fab;
    char *stats;
    /* answers being built, one buffer per rank (rank 0: its own nodes) */
    struct { uint8_t *p; size_t n, cap; } *down;
    uint64_t barriers, skips;
    uint64_t joined;        /* barriers the hub took part in */
} H;

static void die(const char *fmt, ...)
{
    va_list ap;

    fprintf(stderr, "accio-switch: ");
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    for (int i = 0; i < H.nnodes; i++) {
        if (H.nodes[i].pid > 0) {
            kill(-H.nodes[i].pid, SIGKILL);
        }
    }
    if (H.mpi && H.ranks > 1) {
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    exit(2);
}

static void *xmalloc(size_t n)
{
    void *p = calloc(1, n ? n : 1);

    if (!p) {
        die("out of memory");
    }
    return p;
}

/* ---- the plan ----------------------------------------------------------- */

static uint64_t parse_mac(const char *s)
{
    return strtoull(s, NULL, 16);
}

static void read_plan(const char *path)
{
    FILE *p = fopen(path, "r");
    char line[8192];
    Fabric *f = &H.fab;
    int lineno = 0;

    if (!p) {
        die("cannot read the plan %s: %s", path, strerror(errno));
    }
    while (fgets(line, sizeof(line), p)) {
        char a[7][4096];
        unsigned long long v[4], lat_buf;
        int i;

        lineno++;
        if (line[0] == '#' || line[0] == '\n') {
            continue;
        }
        if (sscanf(line, "counts %d %d %d", &f->nnodes, &f->nswitches,
                   &f->nlinks) == 3) {
            H.nnodes = f->nnodes;
            H.nodes = xmalloc(f->nnodes * sizeof(Node));
            f->nodes = xmalloc(f->nnodes * sizeof(FabNode));
            f->switches = xmalloc(f->nswitches * sizeof(FabSwitch));
            f->links = xmalloc(f->nlinks * sizeof(FabLink));
        } else if (sscanf(line, "quantum %llu", &v[0]) == 1) {
            H.quantum = v[0];
        } else if (sscanf(line, "spin %llu", &v[0]) == 1) {
            H.spin_ns = v[0];
        } else if (sscanf(line, "shm %4095s", a[0]) == 1) {
            H.shm_path = strdup(a[0]);
        } else if (sscanf(line, "timeouts %d %d %d", &H.start_s, &H.run_s,
                          &H.grace_s) == 3) {
        } else if (sscanf(line, "stats %4095s", a[0]) == 1) {
            H.stats = strdup(a[0]);
        } else if (sscanf(line, "node %d %63s %d %llu %4095s %4095s %4095s "
                          "%4095s %4095s", &i, a[0], (int *)&v[0], &v[1], a[1],
                          a[2], a[3], a[4], a[5]) == 9 &&
                   i >= 0 && i < f->nnodes) {
            Node *n = &H.nodes[i];

            snprintf(f->nodes[i].name, FAB_NAME, "%.63s", a[0]);
            n->rank = (int)v[0];
            n->service = v[1];
            n->sock = strdup(a[1]);
            n->console = strdup(a[2]);
            n->argv_file = strdup(a[3]);
            f->nodes[i].mac = parse_mac(a[4]);
            if (strcmp(a[5], "-") && H.rank == 0 &&
                fab_open_pcap(f, i, a[5])) {
                die("cannot write %s: %s", a[5], strerror(errno));
            }
            n->fd = n->lfd = n->stdin_fd = -1;
        } else if (sscanf(line, "switch %d %63s %llu", &i, a[0], &v[0]) == 3 &&
                   i >= 0 && i < f->nswitches) {
            snprintf(f->switches[i].name, FAB_NAME, "%.63s", a[0]);
            f->switches[i].delay_ns = v[0];
        } else if (sscanf(line, "link %d %c %llu %c %llu %llu %llu %llu",
                          &i, &a[0][0], &v[0], &a[1][0], &v[1], &v[2], &v[3],
                          &lat_buf) == 8 && i >= 0 && i < f->nlinks) {
            FabLink *k = &f->links[i];

            k->kind[0] = a[0][0] == 's';
            k->kind[1] = a[1][0] == 's';
            k->idx[0] = (int)v[0];
            k->idx[1] = (int)v[1];
            k->lat_ns = v[2];
            k->bps = v[3];
            k->buf_bytes = lat_buf;
        } else if (sscanf(line, "fwd %d %4095s %llu", &i, a[0], &v[0]) == 3 &&
                   i >= 0 && i < f->nswitches) {
            FabSwitch *s = &f->switches[i];

            s->fwd = realloc(s->fwd, (s->nfwd + 1) * sizeof(*s->fwd));
            s->fwd[s->nfwd].mac = parse_mac(a[0]);
            s->fwd[s->nfwd++].link = (int)v[0];
        } else if (!strncmp(line, "ranks ", 6)) {
            /* informative: the ranks come from MPI */
        } else {
            die("plan line %d not understood: %s", lineno, line);
        }
    }
    fclose(p);
    if (!H.nnodes || !H.quantum) {
        die("the plan %s has no nodes or no quantum", path);
    }
    for (int i = 0; i < H.nnodes; i++) {
        if (!H.nodes[i].sock) {
            die("the plan has no line for node %d", i);
        }
        if (H.nodes[i].rank >= H.ranks) {
            die("node %s is placed on rank %d, but there are %d ranks",
                f->nodes[i].name, H.nodes[i].rank, H.ranks);
        }
    }
}

/* ---- the SoCs' processes ------------------------------------------------ */

/* its wire's far end exists before it starts */
static void node_listen(Node *n)
{
    struct sockaddr_un sa = { .sun_family = AF_UNIX };
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (strlen(n->sock) >= sizeof(sa.sun_path)) {
        die("socket path too long: %s", n->sock);
    }
    strcpy(sa.sun_path, n->sock);
    unlink(n->sock);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ||
        listen(fd, 1)) {
        die("cannot listen on %s: %s", n->sock, strerror(errno));
    }
    n->lfd = fd;
}

/*
 * Start the node's QEMU: its command line is the NUL-separated words of
 * its argv file, its console goes to its console file, its stdin is a pipe
 * (for the stop request). An argv file "-" is a SoC started by someone
 * else, that only connects.
 */
static void start_node(Node *n)
{
    char *buf, **argv;
    size_t len = 0, cap = 4096;
    int argc = 0, pfd[2], out;
    FILE *a;

    node_listen(n);
    if (!strcmp(n->argv_file, "-")) {
        return;
    }
    a = fopen(n->argv_file, "rb");
    if (!a) {
        die("cannot read %s: %s", n->argv_file, strerror(errno));
    }
    buf = xmalloc(cap);
    for (;;) {
        size_t r = fread(buf + len, 1, cap - len - 1, a);

        len += r;
        if (len < cap - 1) {
            break;
        }
        cap *= 2;
        buf = realloc(buf, cap);
    }
    fclose(a);
    argv = xmalloc((len + 2) * sizeof(char *));
    for (size_t i = 0; i < len; i += strlen(buf + i) + 1) {
        argv[argc++] = buf + i;
    }
    if (!argc) {
        die("%s is empty", n->argv_file);
    }
    out = open(n->console, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (out < 0 || pipe2(pfd, O_CLOEXEC)) {
        die("cannot write %s: %s", n->console, strerror(errno));
    }
    n->pid = fork();
    if (n->pid < 0) {
        die("fork: %s", strerror(errno));
    }
    if (!n->pid) {
        setpgid(0, 0);
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        dup2(pfd[0], 0);
        dup2(out, 1);
        dup2(out, 2);
        execv(argv[0], argv);
        fprintf(stderr, "accio-switch: cannot run %s: %s\n", argv[0],
                strerror(errno));
        _exit(127);
    }
    setpgid(n->pid, n->pid);
    close(pfd[0]);
    close(out);
    n->stdin_fd = pfd[1];
    free(argv);
    free(buf);
}

static void on_alarm(int sig)
{
    static const char msg[] = "accio-switch: the run's time is up; "
                              "every SoC is stopped\n";

    (void)sig;
    if (write(2, msg, sizeof(msg) - 1) < 0) {
        /* nothing more to say */
    }
    for (int i = 0; i < H.nnodes; i++) {
        if (H.nodes[i].pid > 0) {
            kill(-H.nodes[i].pid, SIGKILL);
        }
    }
    _exit(124);
}

/* ---- the wire protocol -------------------------------------------------- */

static void node_gone(Node *n)
{
    if (n->fd >= 0) {
        close(n->fd);
    }
    n->fd = -1;
    n->gone = true;
}

static bool node_send(Node *n, uint32_t type, uint64_t t, const void *data,
                      uint32_t len)
{
    LsHeader h = { type, len, t };

    if (n->gone) {
        return false;
    }
    if (!ls_io_all(n->fd, &h, sizeof(h), true) ||
        (len && !ls_io_all(n->fd, (void *)data, len, true))) {
        node_gone(n);
        return false;
    }
    return true;
}

/* wait for a connection on the node's socket, within the start time */
static void node_accept(Node *n, int idx)
{
    struct pollfd p = { .fd = n->lfd, .events = POLLIN };
    LsHeader h;
    int waited = 0, r = 0, status;

    /* a QEMU that ends before it connects (a bad option, say) ends the run */
    while (waited < H.start_s * 1000 && (r = poll(&p, 1, 250)) == 0) {
        waited += 250;
        if (n->pid > 0 && waitpid(n->pid, &status, WNOHANG) == n->pid) {
            n->pid = 0;
            die("node %s ended (status %d) before it connected (see %s)",
                H.fab.nodes[idx].name, WIFEXITED(status) ? WEXITSTATUS(status) :
                128 + WTERMSIG(status), n->console);
        }
    }
    if (r != 1 || (n->fd = accept4(n->lfd, NULL, NULL, SOCK_CLOEXEC)) < 0) {
        die("node %s did not connect to %s within %d s (see %s)",
            H.fab.nodes[idx].name, n->sock, H.start_s, n->console);
    }
    close(n->lfd);
    unlink(n->sock);
    n->lfd = -1;
    if (!ls_io_all(n->fd, &h, sizeof(h), false) || h.type != LS_HELLO) {
        die("node %s sent no greeting (see %s)", H.fab.nodes[idx].name,
            n->console);
    }
    if (h.t != H.quantum) {
        die("node %s's wire latency is %" PRIu64 " ns, the cluster's "
            "lookahead %" PRIu64 " ns", H.fab.nodes[idx].name, h.t,
            H.quantum);
    }
    node_send(n, LS_HELLO, H.quantum, NULL, 0);
}

/* ---- messages between ranks: records of (node, type, t, len, data) ----- */

typedef struct {
    uint32_t node, type;
    uint64_t t;
    uint32_t len;
} Rec;

static void put(int r, uint32_t node, uint32_t type, uint64_t t,
                const void *data, uint32_t len)
{
    Rec h = { node, type, t, len };
    size_t need = sizeof(h) + len;

    if (H.down[r].n + need > H.down[r].cap) {
        H.down[r].cap = (H.down[r].n + need) * 2;
        H.down[r].p = realloc(H.down[r].p, H.down[r].cap);
        if (!H.down[r].p) {
            die("out of memory");
        }
    }
    memcpy(H.down[r].p + H.down[r].n, &h, sizeof(h));
    if (len) {
        memcpy(H.down[r].p + H.down[r].n + sizeof(h), data, len);
    }
    H.down[r].n += need;
}

/* wait for an MPI request without spinning a core */
static void mpi_wait_idle(MPI_Request *req)
{
    struct timespec ts = { 0, 2000 };
    int done = 0;

    for (;;) {
        MPI_Test(req, &done, MPI_STATUS_IGNORE);
        if (done) {
            return;
        }
        nanosleep(&ts, NULL);
        if (ts.tv_nsec < 200000) {
            ts.tv_nsec *= 2;
        }
    }
}

static void mpi_send_idle(const void *buf, size_t n, int to, int tag)
{
    MPI_Request req;

    MPI_Isend(buf, (int)n, MPI_BYTE, to, tag, MPI_COMM_WORLD, &req);
    mpi_wait_idle(&req);
}

static uint8_t *mpi_recv_idle(int from, int tag, size_t *n)
{
    struct timespec ts = { 0, 2000 };
    MPI_Status st;
    int flag = 0, count;
    uint8_t *buf;

    for (;;) {
        MPI_Iprobe(from, tag, MPI_COMM_WORLD, &flag, &st);
        if (flag) {
            break;
        }
        nanosleep(&ts, NULL);
        if (ts.tv_nsec < 200000) {
            ts.tv_nsec *= 2;
        }
    }
    MPI_Get_count(&st, MPI_BYTE, &count);
    buf = xmalloc(count);
    MPI_Recv(buf, count, MPI_BYTE, from, tag, MPI_COMM_WORLD,
             MPI_STATUS_IGNORE);
    *n = count;
    return buf;
}

/*
 * The ranks' transport. MPI carries the frames when asked
 * (ACCIO_CLUSTER_TRANSPORT=mpi); by default MPI only places the ranks and
 * tells them where rank 0 listens, and the frames go on TCP sockets, where
 * a wait is a blocking read: OpenMPI's own waits poll, and a polling rank
 * takes a core from the SoCs.
 */
static void tcp_setup(void)
{
    uint32_t info[1 + 1 + 32] = { 0 };
    int n = 0;

    H.tfd = xmalloc(H.ranks * sizeof(int));
    if (H.rank == 0) {
        struct sockaddr_in sa = { .sin_family = AF_INET };
        socklen_t len = sizeof(sa);
        struct ifaddrs *ifa, *i;
        int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

        if (l < 0 || bind(l, (struct sockaddr *)&sa, sizeof(sa)) ||
            listen(l, H.ranks) ||
            getsockname(l, (struct sockaddr *)&sa, &len)) {
            die("rank 0 cannot listen on TCP: %s", strerror(errno));
        }
        info[0] = ntohs(sa.sin_port);
        if (getifaddrs(&ifa) == 0) {
            for (i = ifa; i && n < 32; i = i->ifa_next) {
                if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET) {
                    info[2 + n++] =
                        ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
                }
            }
            freeifaddrs(ifa);
        }
        info[1] = n;
        MPI_Bcast(info, sizeof(info), MPI_BYTE, 0, MPI_COMM_WORLD);
        for (int k = 1; k < H.ranks; k++) {
            struct pollfd p = { .fd = l, .events = POLLIN };
            uint32_t who;
            int c;

            if (poll(&p, 1, 60000) != 1 ||
                (c = accept4(l, NULL, NULL, SOCK_CLOEXEC)) < 0 ||
                !ls_io_all(c, &who, sizeof(who), false) || !who ||
                who >= (uint32_t)H.ranks) {
                die("the ranks did not all reach rank 0 on TCP");
            }
            H.tfd[who] = c;
        }
        close(l);
    } else {
        MPI_Bcast(info, sizeof(info), MPI_BYTE, 0, MPI_COMM_WORLD);
        H.tfd[0] = -1;
        for (uint32_t k = 0; k < info[1] && H.tfd[0] < 0; k++) {
            struct sockaddr_in sa = { .sin_family = AF_INET,
                                      .sin_port = htons(info[0]),
                                      .sin_addr.s_addr = info[2 + k] };
            int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK,
                           0);
            struct pollfd p = { .fd = c, .events = POLLOUT };
            int err = 0;
            socklen_t el = sizeof(err);

            if (c < 0) {
                continue;
            }
            if ((connect(c, (struct sockaddr *)&sa, sizeof(sa)) == 0 ||
                 (errno == EINPROGRESS && poll(&p, 1, 2000) == 1 &&
                  !getsockopt(c, SOL_SOCKET, SO_ERROR, &err, &el) && !err)) &&
                fcntl(c, F_SETFL, 0) == 0) {
                uint32_t me = H.rank;

                H.tfd[0] = c;
                if (!ls_io_all(c, &me, sizeof(me), true)) {
                    die("rank %d lost rank 0", H.rank);
                }
            } else {
                close(c);
            }
        }
        if (H.tfd[0] < 0) {
            die("rank %d cannot reach rank 0 at any of its %u addresses",
                H.rank, info[1]);
        }
    }
    for (int k = 0; k < H.ranks; k++) {
        int one = 1;

        if (k != H.rank && (H.rank == 0 || k == 0)) {
            setsockopt(H.tfd[k], IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        }
    }
}

static void xfer_send(const void *buf, size_t n, int to, int tag)
{
    uint64_t len = n;

    if (!H.tcp) {
        mpi_send_idle(buf, n, to, tag);
        return;
    }
    if (!ls_io_all(H.tfd[to], &len, sizeof(len), true) ||
        (n && !ls_io_all(H.tfd[to], (void *)buf, n, true))) {
        die("rank %d lost rank %d", H.rank, to);
    }
}

static uint8_t *xfer_recv(int from, int tag, size_t *n)
{
    uint64_t len;
    uint8_t *buf;

    if (!H.tcp) {
        return mpi_recv_idle(from, tag, n);
    }
    if (!ls_wait_in(H.tfd[from], H.spin_ns) ||
        !ls_io_all(H.tfd[from], &len, sizeof(len), false)) {
        die("rank %d lost rank %d", H.rank, from);
    }
    buf = xmalloc(len);
    if (len && !ls_io_all(H.tfd[from], buf, len, false)) {
        die("rank %d lost rank %d", H.rank, from);
    }
    *n = len;
    return buf;
}

/* ---- the barrier in shared memory (one rank) ---------------------------- */

/* the memory the SoCs meet in at every barrier, before any of them starts */
static void shm_create(void)
{
    size_t size = ls_shm_size(H.nnodes);
    int fd;

    if (H.ranks != 1) {
        die("a barrier in shared memory is for one rank, not %d", H.ranks);
    }
    fd = open(H.shm_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0 || ftruncate(fd, size) < 0) {
        die("cannot make the shared barrier %s: %s", H.shm_path,
            strerror(errno));
    }
    H.shm = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (H.shm == MAP_FAILED) {
        die("cannot map the shared barrier %s: %s", H.shm_path,
            strerror(errno));
    }
    H.shm->nnodes = H.nnodes;
    H.shm->lat_min = H.fab.lat_min;
    H.shm->fab_next = UINT64_MAX;
    __atomic_store_n(&H.shm->magic, LS_SHM_MAGIC, __ATOMIC_RELEASE);
}

/*
 * With the shared barrier the SoCs send to the hub only at the barriers
 * that need it. Wait until node @i's wire has something to read (or has
 * broken), looking first as ls_wait_in does; meanwhile every other node
 * whose wire breaks is marked as gone in the barrier, so that no SoC
 * waits there for a QEMU that has ended.
 */
static void shm_wait_readable(int i)
{
    static struct pollfd *p;
    static int *who;
    struct timespec t0;
    bool look = H.spin_ns > 0;

    if (!p) {
        p = xmalloc(H.nnodes * sizeof(*p));
        who = xmalloc(H.nnodes * sizeof(*who));
    }
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        int n = 0, r;

        for (int j = 0; j < H.nnodes; j++) {
            if (H.nodes[j].fd >= 0 && (j == i || !H.nodes[j].hup)) {
                p[n].fd = H.nodes[j].fd;
                p[n].events = POLLIN;
                p[n].revents = 0;
                who[n++] = j;
            }
        }
        r = poll(p, n, look ? 0 : -1);
        for (int k = 0; k < n && r > 0; k++) {
            if (p[k].revents & (POLLHUP | POLLERR)) {
                H.nodes[who[k]].hup = true;
                ls_shm_leave(H.shm, who[k], 0, 0);
            }
            if (who[k] == i && p[k].revents) {
                return;
            }
        }
        if (look) {
            look = ls_look_on(&t0, H.spin_ns);
        }
    }
}

/*
 * The barrier the SoCs have reached together: its time, and the barriers
 * and skips they passed before it, most of them without the hub.
 */
static uint64_t shm_barrier(void)
{
    uint64_t gen = 0, b = 0, skips = 0;

    for (int i = 0; i < H.nnodes; i++) {
        LsShmNode *n = &H.shm->node[i];
        uint64_t g = __atomic_load_n(&n->gen, __ATOMIC_ACQUIRE);
        uint64_t gone = __atomic_load_n(&n->gone, __ATOMIC_ACQUIRE);

        gen = MAX(gen, MAX(g, gone));
        b = MAX(b, n->b);
        skips = MAX(skips, n->skips);
    }
    H.barriers = gen ? gen - 1 : 0;
    H.skips = skips;
    return b;
}

/*
 * stats.json's "barrier_waits": what each SoC's waits at the shared barrier
 * cost it, as it last arrived there (LsShmWaits); "under_us": the waits
 * under 1, 2, 4, ... us, "more" the longer ones; "in_slack": the barriers
 * it took inside their slack, "past_ns_max" the furthest past a barrier's
 * time it took one; "run_s": the wall time it ran between barriers, and
 * "bound_s" the sum over barriers of the longest such run of any SoC (the
 * same for every SoC, up to the barrier each last arrived at).
 */
static void write_waits(FILE *out)
{
    fprintf(out, ",\n  \"barrier_waits\": {");
    for (int i = 0; i < H.nnodes; i++) {
        LsShmWaits *w = &H.shm->node[i].waits;

        fprintf(out, "%s\n    \"%s\": {\"wait_s\": %.6f, \"waits\": %" PRIu64
                ", \"sleeps\": %" PRIu64 ", \"in_slack\": %" PRIu64
                ", \"past_ns_max\": %" PRIu64 ", \"run_s\": %.6f"
                ", \"bound_s\": %.6f, \"under_us\": {", i ? "," : "",
                H.fab.nodes[i].name, w->wait_ns / 1e9, w->waits, w->sleeps,
                w->in_slack, w->past_ns_max, w->run_ns / 1e9,
                w->bound_ns / 1e9);
        for (int k = 0; k < LS_WAIT_BUCKETS; k++) {
            if (k < LS_WAIT_BUCKETS - 1) {
                fprintf(out, "%s\"%d\": %" PRIu64, k ? ", " : "", 1 << k,
                        w->hist[k]);
            } else {
                fprintf(out, ", \"more\": %" PRIu64, w->hist[k]);
            }
        }
        fprintf(out, "}}");
    }
    fprintf(out, "\n  }");
}

/*
 * Read one node's messages up to its SYNC (or START) into this rank's
 * outgoing buffer. A node that has left is recorded as gone, once.
 */
static void collect(int i, uint32_t until)
{
    Node *n = &H.nodes[i];
    LsHeader h;
    uint8_t *data = NULL;

    if (n->gone) {
        /* it left while being answered: the hub hears of it now */
        if (!n->told) {
            n->told = true;
            put(0, i, RK_GONE, 0, NULL, 0);
        }
        return;
    }
    for (;;) {
        if (H.shm) {
            shm_wait_readable(i);
        } else if (!ls_wait_in(n->fd, H.spin_ns)) {
            goto gone;
        }
        if (!ls_io_all(n->fd, &h, sizeof(h), false)) {
            goto gone;
        }
        if (h.type == until) {
            put(0, i, h.type, h.t, NULL, 0);
            free(data);
            return;
        }
        if (h.type != LS_FRAME || h.len > LS_FRAME_MAX) {
            fprintf(stderr, "accio-switch: node %s: unexpected message "
                    "%#x; it is cut off\n", H.fab.nodes[i].name, h.type);
            goto gone;
        }
        data = realloc(data, h.len ? h.len : 1);
        if (!ls_io_all(n->fd, data, h.len, false)) {
            goto gone;
        }
        put(0, i, LS_FRAME, h.t, data, h.len);
    }
gone:
    free(data);
    node_gone(n);
    n->told = true;
    put(0, i, RK_GONE, 0, NULL, 0);
}

/* one rank's collected records, for the hub (rank 0 reads its own) */
static uint8_t *gather_up(size_t *n)
{
    uint8_t *buf = H.down[0].p;

    *n = H.down[0].n;
    H.down[0].p = NULL;
    H.down[0].n = H.down[0].cap = 0;
    return buf;
}

/* deliver records to this rank's nodes; true if the hub said done */
static bool scatter_local(const uint8_t *p, size_t n)
{
    bool done = false;

    for (size_t o = 0; o < n;) {
        Rec h;

        memcpy(&h, p + o, sizeof(h));
        o += sizeof(h);
        if (h.type == RK_DONE) {
            done = true;
        } else if (h.node < (uint32_t)H.nnodes) {
            node_send(&H.nodes[h.node], h.type, h.t, p + o, h.len);
        }
        o += h.len;
    }
    return done;
}

/* ---- the hub (rank 0) --------------------------------------------------- */

static uint64_t ev_min;

static void deliver(void *opaque, int node, uint64_t t, const uint8_t *buf,
                    uint32_t len)
{
    (void)opaque;
    /* the SoC adds its wire's latency (the quantum) to what it is told */
    put(H.nodes[node].rank, node, LS_FRAME, t - H.quantum, buf, len);
    if (t < ev_min) {
        ev_min = t;
    }
}

/* the records of every rank, in node order; returns how many lists */
static void hub_take(uint8_t **bufs, size_t *lens)
{
    /* records are grouped by node within each rank's list, and each rank
     * lists its nodes in plan order; take node by node across ranks */
    size_t *off = xmalloc(H.ranks * sizeof(size_t));

    for (int i = 0; i < H.nnodes; i++) {
        int r = H.nodes[i].rank;

        while (off[r] < lens[r]) {
            Rec h;

            memcpy(&h, bufs[r] + off[r], sizeof(h));
            if (h.node != (uint32_t)i) {
                break;
            }
            off[r] += sizeof(h);
            if (h.type == LS_FRAME) {
                fab_send(&H.fab, i, h.t, bufs[r] + off[r], h.len);
                if (h.t + H.quantum < ev_min) {
                    ev_min = h.t + H.quantum;
                }
            } else if (h.type == LS_SYNC || h.type == LS_START) {
                H.nodes[i].mine = h.t;
            } else if (h.type == RK_GONE) {
                H.nodes[i].gone = true;
                H.fab.nodes[i].gone = 1;
            }
            off[r] += h.len;
        }
    }
    free(off);
}

static bool all_clients_gone(void)
{
    for (int i = 0; i < H.nnodes; i++) {
        if (!H.nodes[i].service && !H.nodes[i].gone) {
            return false;
        }
    }
    return true;
}

static void local_collect(uint32_t until)
{
    for (int i = 0; i < H.nnodes; i++) {
        if (H.nodes[i].rank == H.rank) {
            collect(i, until);
        }
    }
}

/* one barrier's exchange from a rank's side: up, then down */
static bool rank_exchange(uint32_t until)
{
    size_t n;
    uint8_t *up, *down;
    bool done;

    local_collect(until);
    up = gather_up(&n);
    xfer_send(up, n, 0, TAG_UP);
    free(up);
    down = xfer_recv(0, TAG_DOWN, &n);
    done = scatter_local(down, n);
    free(down);
    return done;
}

static void hub_gather(uint8_t **bufs, size_t *lens, uint32_t until)
{
    local_collect(until);
    bufs[0] = gather_up(&lens[0]);
    for (int r = 1; r < H.ranks; r++) {
        bufs[r] = xfer_recv(r, TAG_UP, &lens[r]);
    }
}

/* send every rank its records (rank 0's own straight to its nodes) */
static bool hub_scatter(bool done)
{
    bool d = false;

    for (int r = 0; r < H.ranks; r++) {
        if (done) {
            put(r, 0, RK_DONE, 0, NULL, 0);
        }
        if (r) {
            xfer_send(H.down[r].p, H.down[r].n, r, TAG_DOWN);
        } else {
            d = scatter_local(H.down[0].p, H.down[0].n);
        }
        H.down[r].n = 0;
    }
    return d;
}

static void hub_run(void)
{
    uint8_t **bufs = xmalloc(H.ranks * sizeof(*bufs));
    size_t *lens = xmalloc(H.ranks * sizeof(size_t));
    uint64_t b = 0, b0;
    struct timespec w0, w1;
    bool done;

    /* START: the first barrier is at the latest NIC enable */
    hub_gather(bufs, lens, LS_START);
    hub_take(bufs, lens);
    for (int i = 0; i < H.nnodes; i++) {
        if (!H.nodes[i].gone && H.nodes[i].mine > b) {
            b = H.nodes[i].mine;
        }
    }
    for (int r = 0; r < H.ranks; r++) {
        free(bufs[r]);
    }
    done = all_clients_gone();
    for (int i = 0; i < H.nnodes && !done; i++) {
        put(H.nodes[i].rank, i, LS_START, b, NULL, 0);
    }
    b0 = b;
    clock_gettime(CLOCK_MONOTONIC, &w0);
    hub_scatter(done);

    while (!done) {
        uint64_t next;

        ev_min = UINT64_MAX;
        hub_gather(bufs, lens, LS_SYNC);
        hub_take(bufs, lens);
        for (int r = 0; r < H.ranks; r++) {
            free(bufs[r]);
        }
        for (int i = 0; i < H.nnodes; i++) {
            if (!H.nodes[i].gone && H.nodes[i].mine < ev_min) {
                ev_min = H.nodes[i].mine;
            }
        }
        if (H.shm) {
            /* the SoCs passed the barriers since the last one alone */
            b = shm_barrier();
        }
        fab_advance(&H.fab, b + H.fab.lat_min);
        if (fab_next(&H.fab) < ev_min) {
            ev_min = fab_next(&H.fab);
        }
        H.barriers++;
        H.joined++;
        next = b + ls_step_ns(H.quantum);
        if (ev_min > next) {
            next = ev_min < b + LS_SKIP_MAX_NS ? ev_min : b + LS_SKIP_MAX_NS;
            H.skips++;
        }
        done = all_clients_gone();
        for (int i = 0; i < H.nnodes && !done; i++) {
            if (!H.nodes[i].gone) {
                put(H.nodes[i].rank, i, LS_SYNC, ev_min, NULL, 0);
            }
        }
        /* every frame sent before b is in, and so is every arrival before b */
        fab_flush(&H.fab, b);
        if (H.shm) {
            __atomic_store_n(&H.shm->fab_next, fab_next(&H.fab),
                             __ATOMIC_RELEASE);
        }
        if (!done) {
            b = next;
        }
        hub_scatter(done);
    }
    free(bufs);
    free(lens);
    clock_gettime(CLOCK_MONOTONIC, &w1);
    if (H.stats) {
        FILE *s = fopen(H.stats, "w");

        if (s) {
            fprintf(s, "{\n  \"barriers\": %" PRIu64 ",\n  \"skips\": %"
                    PRIu64 ",\n  \"end_ns\": %" PRIu64 ",\n  \"quantum_ns\": %"
                    PRIu64 ",\n  \"ranks\": %d,\n  \"start_ns\": %" PRIu64
                    ",\n  \"lockstep_wall_s\": %.3f,\n  \"spin_ns\": %" PRIu64
                    ",\n  \"shared_barrier\": %s,\n  \"barriers_with_hub\": %"
                    PRIu64 ",\n", H.barriers, H.skips, b,
                    H.quantum, H.ranks, b0,
                    (w1.tv_sec - w0.tv_sec) + (w1.tv_nsec - w0.tv_nsec) / 1e9,
                    H.spin_ns, H.shm ? "true" : "false", H.joined);
            fab_write_stats(&H.fab, s);
            if (H.shm) {
                write_waits(s);
            }
            fprintf(s, "\n}\n");
            fclose(s);
        }
    }
}

/* ---- the end: services are asked to stop, then stopped ------------------ */

static void finish_local(void)
{
    static const char stop[] = "\n@@ACCIO-STOP@@\n";
    struct timespec ts = { 0, 50 * 1000000 };
    int waited = 0;

    for (int i = 0; i < H.nnodes; i++) {
        Node *n = &H.nodes[i];

        if (n->rank != H.rank) {
            continue;
        }
        node_gone(n);
        if (n->stdin_fd >= 0 && write(n->stdin_fd, stop, sizeof(stop) - 1) < 0) {
            /* it has gone already */
        }
    }
    for (;;) {
        bool left = false;

        for (int i = 0; i < H.nnodes; i++) {
            Node *n = &H.nodes[i];

            if (n->rank == H.rank && n->pid > 0) {
                if (waitpid(n->pid, NULL, WNOHANG) == n->pid) {
                    n->pid = 0;
                } else {
                    left = true;
                }
            }
        }
        if (!left || waited++ > H.grace_s * 20) {
            break;
        }
        nanosleep(&ts, NULL);
    }
    for (int i = 0; i < H.nnodes; i++) {
        Node *n = &H.nodes[i];

        if (n->rank == H.rank && n->pid > 0) {
            kill(-n->pid, SIGKILL);
            waitpid(n->pid, NULL, 0);
            n->pid = 0;
        }
    }
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: accio-switch PLAN (written by accio cluster)\n");
        return 2;
    }
    prctl(PR_SET_TIMERSLACK, 1000);
    H.ranks = 1;
    /* under mpirun: one rank per host; alone: no MPI at all */
    if (getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") ||
        getenv("PMIX_RANK")) {
        MPI_Init(&argc, &argv);
        MPI_Comm_rank(MPI_COMM_WORLD, &H.rank);
        MPI_Comm_size(MPI_COMM_WORLD, &H.ranks);
        H.mpi = true;
        H.tcp = !getenv("ACCIO_CLUSTER_TRANSPORT") ||
                strcmp(getenv("ACCIO_CLUSTER_TRANSPORT"), "mpi");
        if (H.tcp && H.ranks > 1) {
            tcp_setup();
        }
    }
    fab_init(&H.fab, deliver, NULL);
    H.start_s = 120;
    H.run_s = 3600;
    H.grace_s = 5;
    read_plan(argv[1]);
    if (H.rank == 0) {
        char err[256];

        if (fab_finish_setup(&H.fab, err, sizeof(err))) {
            die("%s", err);
        }
        /* a frame sent after one barrier reaches no NIC before the next */
        if (H.quantum > 2 * H.fab.lat_min) {
            die("the quantum %" PRIu64 " ns is more than twice the shortest "
                "node link, %" PRIu64 " ns", H.quantum, H.fab.lat_min);
        }
    }
    H.down = xmalloc(H.ranks * sizeof(*H.down));
    if (H.shm_path) {
        shm_create();
    }
    signal(SIGALRM, on_alarm);
    signal(SIGPIPE, SIG_IGN);
    alarm(H.run_s);
    for (int i = 0; i < H.nnodes; i++) {
        if (H.nodes[i].rank == H.rank) {
            start_node(&H.nodes[i]);
        }
    }
    for (int i = 0; i < H.nnodes; i++) {
        if (H.nodes[i].rank == H.rank) {
            node_accept(&H.nodes[i], i);
        }
    }
    if (H.rank == 0) {
        hub_run();
    } else if (!rank_exchange(LS_START)) {
        while (!rank_exchange(LS_SYNC)) {
        }
    }
    finish_local();
    if (H.mpi) {
        MPI_Barrier(MPI_COMM_WORLD);
        MPI_Finalize();
    }
    fab_free(&H.fab);
    return 0;
}
