// SPDX-License-Identifier: MIT
/*
 * accio_selftest: checks of the Accio socket acceleration from inside the
 * guest, linked with libaccio and using its explicit API.
 *
 * usage: accio_selftest errors
 *        accio_selftest rows N
 *        accio_selftest hold PORT
 *        accio_selftest isolate HOST PORT
 *        accio_selftest zc HOST PORT COUNT
 *        accio_selftest killtx HOST PORT COUNT
 *        accio_selftest asid HOST PORT FORKS
 *        accio_selftest churn HOST PORT CYCLES KILLS
 *
 * errors   every bad-input case of SIOCACCIO, the row fd and the zero-copy
 *          API gets its documented errno
 * rows     accelerate N sockets at once, then report how many succeeded,
 *          the errno of the first failure and the kernel's row count
 * hold     accelerate a socket on PORT, print its row, sleep (kill -9 me)
 * isolate  a child process can neither map this process's row nor take the
 *          socket again, and its forged stores to the row page (through
 *          /dev/mem, at the devicetree's user region) are refused by the owner
 *          check; then echo through it
 * zc       echo COUNT datagrams through the zero-copy API
 * killtx   a child queues COUNT datagrams in its TX ring without ringing
 *          the doorbell and is killed with SIGKILL; the kernel sends them
 *          when it frees the row (the peer counts them)
 * asid     accelerate a socket, then let children fork FORKS short-lived
 *          processes (enough to wrap the ASID space) while this process
 *          sleeps, again (at most 4 times) until its ASID number has
 *          changed; the row's owner ASID follows this process's new ASID
 *          and the fast path keeps working
 * churn    CYCLES times: open a socket, accelerate it, echo one datagram
 *          through it, close it; then KILLS times: a child accelerates a
 *          socket, sends without pause and is killed with SIGKILL after a
 *          few milliseconds. Before and after: the kernel's rows in use,
 *          accelerated connections and free memory (nothing may leak)
 *
 * Output is "key=value" / "ok NAME" / "FAIL NAME ..." lines; exit status 0
 * when everything held.
 */
#include <accio.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/accio.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROW_PAGE(base, r)	((base) + 0x1000UL * ((r) + 1))
#define POISON		0xbadacce55badacceULL

static int failures;

static void check(const char *name, int cond, const char *fmt, long v)
{
	if (cond) {
		printf("ok %s\n", name);
	} else {
		printf("FAIL %s ", name);
		printf(fmt, v);
		printf("\n");
		failures++;
	}
}

static int udp_bound(uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("socket/bind");
		exit(1);
	}
	return fd;
}

static int udp_connected(const char *host, uint16_t port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port) };
	int fd = socket(AF_INET, SOCK_DGRAM, 0);

	inet_pton(AF_INET, host, &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		perror("socket/connect");
		exit(1);
	}
	return fd;
}

static int accel_raw(int fd, struct accio_accel *a)
{
	memset(a, 0, sizeof(*a));
	a->version = ACCIO_UAPI_VERSION;
	return ioctl(fd, SIOCACCIO, a);
}

static long rows_used(void)
{
	FILE *f = fopen("/sys/bus/platform/drivers/accio-uncore/11000000.accio/rows_used", "r");
	long n = -1;

	if (f) {
		if (fscanf(f, "%ld", &n) != 1)
			n = -1;
		fclose(f);
	}
	return n;
}

static int errors(void)
{
	struct accio_accel a, acc;
	struct accio_wait w;
	struct accio_route r;
	char stack[64];
	int fd, tcp, rowfd, st;
	pid_t pid;

	tcp = socket(AF_INET, SOCK_STREAM, 0);
	check("tcp-socket", accel_raw(tcp, &a) < 0 && errno == EPROTONOSUPPORT,
	      "errno=%ld", errno);
	close(tcp);

	fd = socket(AF_INET, SOCK_DGRAM, 0);
	check("unbound", accel_raw(fd, &a) < 0 && errno == EINVAL,
	      "errno=%ld", errno);
	close(fd);

	fd = udp_bound(0);
	memset(&a, 0, sizeof(a));
	a.version = 99;
	check("bad-version", ioctl(fd, SIOCACCIO, &a) < 0 && errno == EINVAL,
	      "errno=%ld", errno);
	memset(&a, 0, sizeof(a));
	a.version = ACCIO_UAPI_VERSION;
	a.rx_bytes = 3000;
	check("bad-ring-size", ioctl(fd, SIOCACCIO, &a) < 0 && errno == EINVAL,
	      "errno=%ld", errno);
	check("bad-pointer", ioctl(fd, SIOCACCIO, (void *)8) < 0 && errno == EFAULT,
	      "errno=%ld", errno);
	check("accelerate", accel_raw(fd, &a) == 0, "errno=%ld", errno);
	rowfd = a.fd;
	acc = a;
	check("double", accel_raw(fd, &a) < 0 && errno == EALREADY,
	      "errno=%ld", errno);

	memset(&w, 0, sizeof(w));
	w.dir = 7;
	check("wait-bad-dir", ioctl(rowfd, ACCIO_IOC_WAIT, &w) < 0 && errno == EINVAL,
	      "errno=%ld", errno);
	memset(&w, 0, sizeof(w));
	w.dir = ACCIO_WAIT_RX;
	w.timeout_ms = 0;
	check("wait-empty-nonblocking",
	      ioctl(rowfd, ACCIO_IOC_WAIT, &w) < 0 && errno == EAGAIN,
	      "errno=%ld", errno);
	/* accio_wait(2): the same wait, the same refusals */
	check("sys-wait-bad-dir",
	      syscall(__NR_accio_wait, rowfd, 7, 0, 0) < 0 && errno == EINVAL,
	      "errno=%ld", errno);
	check("sys-wait-rx-need",
	      syscall(__NR_accio_wait, rowfd, ACCIO_WAIT_RX, 8, 0) < 0 && errno == EINVAL,
	      "errno=%ld", errno);
	check("sys-wait-empty-nonblocking",
	      syscall(__NR_accio_wait, rowfd, ACCIO_WAIT_RX, 0, 0) < 0 && errno == EAGAIN,
	      "errno=%ld", errno);
	check("sys-wait-tx-room",
	      syscall(__NR_accio_wait, rowfd, ACCIO_WAIT_TX, 64, 0) == ACCIO_READY_RING,
	      "errno=%ld", errno);
	check("sys-wait-not-a-row",
	      syscall(__NR_accio_wait, fd, ACCIO_WAIT_RX, 0, 0) < 0 && errno == ENOTTY,
	      "errno=%ld", errno);
	check("sys-wait-bad-fd",
	      syscall(__NR_accio_wait, 1000000, ACCIO_WAIT_RX, 0, 0) < 0 && errno == EBADF,
	      "errno=%ld", errno);
	memset(&r, 0, sizeof(r));
	r.ip = htonl(INADDR_LOOPBACK);
	check("route-not-nic", ioctl(rowfd, ACCIO_IOC_ROUTE, &r) < 0 && errno == EXDEV,
	      "errno=%ld", errno);
	check("mmap-bad-offset",
	      mmap(NULL, 4096, PROT_READ, MAP_SHARED, rowfd, 0x5000) == MAP_FAILED &&
	      errno == EINVAL, "errno=%ld", errno);

	/* a TX record the engine cannot send (no destination on an unconnected
	 * row) stops the ring; a wait for room fails instead of hanging */
	{
		volatile uint64_t *regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					       MAP_SHARED, rowfd, 0);
		uint8_t *tx = mmap(NULL, acc.tx_bytes, PROT_READ | PROT_WRITE,
				   MAP_SHARED, rowfd, acc.tx_offset);
		uint64_t wp;

		if (regs == MAP_FAILED || tx == MAP_FAILED) {
			check("tx-bad-record-map", 0, "errno=%ld", errno);
		} else {
			wp = regs[ACCIO_ROW_TX_WPTR / 8];
			memset(tx + (wp & (acc.tx_bytes - 1)), 0, 24);
			tx[wp & (acc.tx_bytes - 1)] = 16;		/* length 16, to nobody */
			__sync_synchronize();
			regs[ACCIO_ROW_TX_WPTR / 8] = wp + 24;
			regs[ACCIO_ROW_DOORBELL / 8] = 1;
			memset(&w, 0, sizeof(w));
			w.dir = ACCIO_WAIT_TX;
			w.need = acc.tx_bytes;
			w.timeout_ms = 5000;
			check("tx-bad-record-stops-ring",
			      ioctl(rowfd, ACCIO_IOC_WAIT, &w) < 0 && errno == EIO,
			      "errno=%ld", errno);
			check("tx-bad-record-stays", regs[ACCIO_ROW_TX_RPTR / 8] == wp,
			      "rptr=%ld", (long)regs[ACCIO_ROW_TX_RPTR / 8]);
			munmap((void *)regs, 4096);
			munmap(tx, acc.tx_bytes);
		}
	}

	/* the library's view: explicit opt-in on a socket it already serves */
	fd = udp_bound(0);
	check("lib-accelerate", accio_accelerate(fd) == 0, "errno=%ld", errno);
	check("lib-double", accio_accelerate(fd) < 0 && errno == EALREADY,
	      "errno=%ld", errno);
	check("zc-outside-pool",
	      accio_zc_send(fd, stack, 16, NULL) < 0 && errno == EINVAL,
	      "errno=%ld", errno);
	check("zc-too-big", accio_zc_alloc(fd, 4000) == NULL && errno == EMSGSIZE,
	      "errno=%ld", errno);
	check("zc-release-foreign", accio_zc_release(fd, stack) < 0 && errno == EINVAL,
	      "errno=%ld", errno);

	/* another process cannot use this process's row */
	pid = fork();
	if (pid == 0) {
		int bad = 0;

		if (mmap(NULL, 4096, PROT_READ, MAP_SHARED, rowfd, 0) != MAP_FAILED ||
		    errno != EACCES)
			bad |= 1;
		memset(&w, 0, sizeof(w));
		w.timeout_ms = 0;
		if (ioctl(rowfd, ACCIO_IOC_WAIT, &w) == 0 || errno != EACCES)
			bad |= 2;
		if (syscall(__NR_accio_wait, rowfd, ACCIO_WAIT_RX, 0, 0) == 0 ||
		    errno != EACCES)
			bad |= 4;
		_exit(bad);
	}
	waitpid(pid, &st, 0);
	check("foreign-process", WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "status=%ld", (long)st);
	return failures ? 1 : 0;
}

static int rows(int n)
{
	int *fds = calloc(n, sizeof(int)), i, ok = 0, first = 0;

	for (i = 0; i < n; i++) {
		fds[i] = udp_bound(0);
		if (accio_accelerate(fds[i]) == 0)
			ok++;
		else if (!first)
			first = errno;
	}
	printf("accelerated=%d first_errno=%d rows_used=%ld\n", ok, first,
	       rows_used());
	for (i = 0; i < n; i++)
		close(fds[i]);
	printf("after_close rows_used=%ld\n", rows_used());
	free(fds);
	return 0;
}

static int hold(int port)
{
	struct accio_stats st;
	int fd = udp_bound(port);

	if (accio_accelerate(fd) < 0 || accio_stats(fd, &st) < 0) {
		perror("accelerate");
		return 1;
	}
	printf("row=%u rows_used=%ld\n", st.row, rows_used());
	fflush(stdout);
	for (;;)
		pause();
}

/* A devicetree property of /soc/NODE (at most len bytes); its length. */
static ssize_t dt_prop(const char *node, const char *prop, void *buf, size_t len)
{
	char path[256];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/device-tree/soc/%s%s%s", node,
		 *node ? "/" : "", prop);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, len);
	close(fd);
	return n;
}

static uint64_t dt_cells(const uint8_t *p, unsigned int cells)
{
	uint64_t v = 0;

	while (cells--) {
		v = v << 32 | (uint64_t)p[0] << 24 | p[1] << 16 | p[2] << 8 | p[3];
		p += 4;
	}
	return v;
}

/* Where processes reach the uncore's registers: the devicetree's "user"
 * region of the accio,uncore node (a SoC whose bus carries no ASID shows
 * them twice), or its only region. 0 if there is no such node.
 */
static unsigned long uncore_user_base(void)
{
	uint8_t reg[64], cells[4];
	char names[64], compat[64], *n;
	unsigned int ac = 2, sc = 2, idx = 0;
	struct dirent *d;
	unsigned long base = 0;
	DIR *dir;
	ssize_t len;

	if (dt_prop("", "#address-cells", cells, 4) == 4)
		ac = dt_cells(cells, 1);
	if (dt_prop("", "#size-cells", cells, 4) == 4)
		sc = dt_cells(cells, 1);
	dir = opendir("/proc/device-tree/soc");
	while (dir && !base && (d = readdir(dir))) {
		len = dt_prop(d->d_name, "compatible", compat, sizeof(compat) - 1);
		if (len <= 0 || strcmp(compat, "accio,uncore"))
			continue;
		len = dt_prop(d->d_name, "reg-names", names, sizeof(names) - 1);
		for (n = names; len > 0 && n < names + len; n += strlen(n) + 1, idx++)
			if (!strcmp(n, "user"))
				break;
		if (len <= 0 || n >= names + len)
			idx = 0;
		len = dt_prop(d->d_name, "reg", reg, sizeof(reg));
		if (len >= (ssize_t)((idx + 1) * (ac + sc) * 4))
			base = dt_cells(reg + idx * (ac + sc) * 4, ac);
	}
	if (dir)
		closedir(dir);
	return base;
}

/* Map a row page through /dev/mem: what a forger in another process gets. */
static volatile uint64_t *devmem_row(unsigned int row)
{
	unsigned long base = uncore_user_base();
	int fd;
	void *p;

	if (!base)
		return NULL;
	fd = open("/dev/mem", O_RDWR | O_SYNC);
	if (fd < 0)
		return NULL;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, ROW_PAGE(base, row));
	close(fd);
	return p == MAP_FAILED ? NULL : p;
}

static int isolate(const char *host, int port)
{
	struct accio_stats st0, st1;
	char tx[256], rx[256];
	struct accio_accel a;
	int fd, st;
	pid_t pid;
	ssize_t n;

	fd = udp_connected(host, port);
	if (accio_accelerate(fd) < 0 || accio_stats(fd, &st0) < 0) {
		perror("accelerate");
		return 1;
	}
	printf("row=%u\n", st0.row);
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		volatile uint64_t *row = devmem_row(st0.row);
		int bad = 0;

		/* the socket is taken */
		if (accel_raw(fd, &a) == 0 || errno != EALREADY)
			bad |= 1;
		if (!row)
			_exit(bad | 2);
		/* loads of another address space's row read poison */
		if (row[ACCIO_ROW_RX_WPTR / 8] != POISON ||
		    row[ACCIO_ROW_RX_PKTS / 8] != POISON)
			bad |= 4;
		/* forged stores are dropped */
		row[ACCIO_ROW_RX_RPTR / 8] = 0x1000;
		row[ACCIO_ROW_TX_WPTR / 8] = 0x40;
		row[ACCIO_ROW_DOORBELL / 8] = 1;
		row[ACCIO_ROW_STATE / 8] = 0;
		row[ACCIO_ROW_MMIO_TX / 8] = 0x0a000202001f0008ULL;
		_exit(bad);
	}
	waitpid(pid, &st, 0);
	check("foreign-row", WIFEXITED(st) && WEXITSTATUS(st) == 0,
	      "status=%ld", (long)st);
	accio_stats(fd, &st1);
	check("prot-faults-counted", st1.prot_faults >= st0.prot_faults + 5,
	      "prot_faults=%ld", (long)st1.prot_faults);
	check("no-forged-tx", st1.tx_pkts == st0.tx_pkts, "tx_pkts=%ld",
	      (long)st1.tx_pkts);
	/* the row still works for its owner */
	memset(tx, 0x5a, sizeof(tx));
	snprintf(tx, sizeof(tx), "isolation check");
	if (send(fd, tx, sizeof(tx), 0) != sizeof(tx)) {
		perror("send");
		return 1;
	}
	n = recv(fd, rx, sizeof(rx), 0);
	check("echo-after-forgery", n == sizeof(tx) && !memcmp(tx, rx, n),
	      "n=%ld", n);
	accio_stats(fd, &st1);
	check("owner-fast-path", st1.tx_pkts == st0.tx_pkts + 1 &&
	      st1.rx_pkts == st0.rx_pkts + 1, "rx_pkts=%ld", (long)st1.rx_pkts);
	printf("prot_faults=%llu\n", (unsigned long long)st1.prot_faults);
	return failures ? 1 : 0;
}

static int zc(const char *host, int port, int count)
{
	struct accio_stats st;
	const void *rbuf;
	uint64_t hw, last_hw = 0;
	int fd, i, size;
	ssize_t n;
	uint8_t *b;

	fd = udp_connected(host, port);
	if (accio_accelerate(fd) < 0) {
		perror("accelerate");
		return 1;
	}
	for (i = 0; i < count; i++) {
		size = 16 + (i * 97) % 1457;
		b = accio_zc_alloc(fd, size);
		if (!b) {
			perror("zc_alloc");
			return 1;
		}
		memset(b, i & 0xff, size);
		if (accio_zc_send(fd, b, size, NULL) != size) {
			perror("zc_send");
			return 1;
		}
		n = accio_zc_recv(fd, &rbuf, NULL, &hw);
		if (n != size || memcmp(rbuf, b, size) || hw < last_hw) {
			printf("FAIL zc datagram %d n=%ld\n", i, (long)n);
			return 1;
		}
		last_hw = hw;
		if (accio_zc_release(fd, rbuf) < 0) {
			perror("zc_release");
			return 1;
		}
	}
	accio_stats(fd, &st);
	printf("zc_echoed=%d rx_pkts=%llu tx_pkts=%llu\n", count,
	       (unsigned long long)st.rx_pkts, (unsigned long long)st.tx_pkts);
	return st.rx_pkts == (uint64_t)count && st.tx_pkts == (uint64_t)count ? 0 : 1;
}

static int killtx(const char *host, int port, int count)
{
	volatile uint64_t *regs;
	struct accio_accel a;
	uint8_t *tx;
	uint64_t wptr;
	int fd, i, st;
	pid_t pid;

	pid = fork();
	if (pid == 0) {
		fd = udp_connected(host, port);
		if (accel_raw(fd, &a) < 0) {
			perror("SIOCACCIO");
			_exit(1);
		}
		regs = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
		tx = mmap(NULL, a.tx_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
			  a.fd, a.tx_offset);
		if (regs == MAP_FAILED || tx == MAP_FAILED) {
			perror("mmap");
			_exit(1);
		}
		wptr = regs[ACCIO_ROW_TX_WPTR / 8];
		for (i = 0; i < count; i++) {
			/* header: length, then 0 port/IP = the connected peer */
			uint8_t *rec = tx + (wptr & (a.tx_bytes - 1));

			if ((wptr & (a.tx_bytes - 1)) + 8 + 64 > a.tx_bytes)
				break;	/* keep the test's records unwrapped */
			memset(rec, 0, 8);
			rec[0] = 64;
			snprintf((char *)rec + 8, 64, "killtx datagram %d", i);
			wptr += 8 + 64;
		}
		__sync_synchronize();
		regs[ACCIO_ROW_TX_WPTR / 8] = wptr;	/* published, no doorbell */
		printf("queued=%d tx_pkts_before_kill=%llu\n", i,
		       (unsigned long long)regs[ACCIO_ROW_TX_PKTS / 8]);
		fflush(stdout);
		kill(getpid(), SIGKILL);
		_exit(3);
	}
	waitpid(pid, &st, 0);
	printf("child_killed=%d\n", WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
	return WIFSIGNALED(st) ? 0 : 1;
}

static long sysfs_num(const char *name)
{
	char path[128];
	long v = -1;
	FILE *f;

	snprintf(path, sizeof(path),
		 "/sys/bus/platform/drivers/accio-uncore/11000000.accio/%s", name);
	f = fopen(path, "r");
	if (f) {
		if (fscanf(f, "%ld", &v) != 1)
			v = -1;
		fclose(f);
	}
	return v;
}

static long mem_free_kb(void)
{
	char line[128];
	long v = -1;
	FILE *f = fopen("/proc/meminfo", "r");

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "MemFree: %ld kB", &v) == 1)
			break;
	if (f)
		fclose(f);
	return v;
}

static int churn(const char *host, int port, int cycles, int kills)
{
	struct timeval tv = { .tv_sec = 1 };
	long mem0, mem1, accel_fail = 0, echoed = 0, killed = 0;
	char tx[64], rx[64];
	int i, fd, st;
	pid_t pid;

	/* warm up once, so that the first cycle's allocations are not counted */
	fd = udp_connected(host, port);
	accio_accelerate(fd);
	close(fd);
	usleep(100000);
	mem0 = mem_free_kb();
	printf("before rows_used=%ld connections=%ld\n", sysfs_num("rows_used"),
	       sysfs_num("connections"));
	for (i = 0; i < cycles; i++) {
		fd = udp_connected(host, port);
		if (accio_accelerate(fd) < 0) {
			accel_fail++;
			close(fd);
			continue;
		}
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
		snprintf(tx, sizeof(tx), "churn %d", i);
		if (send(fd, tx, sizeof(tx), 0) == sizeof(tx) &&
		    recv(fd, rx, sizeof(rx), 0) == sizeof(rx) && !memcmp(tx, rx, sizeof(tx)))
			echoed++;
		close(fd);
	}
	for (i = 0; i < kills; i++) {
		pid = fork();
		if (pid == 0) {
			fd = udp_connected(host, port);
			if (accio_accelerate(fd) < 0)
				_exit(1);
			for (;;)
				send(fd, tx, sizeof(tx), MSG_DONTWAIT);
		}
		usleep(2000 + (i % 8) * 1000);
		kill(pid, SIGKILL);
		if (waitpid(pid, &st, 0) == pid && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)
			killed++;
	}
	/* rows go when their last reference does; memory after a grace period */
	usleep(200000);
	mem1 = mem_free_kb();
	printf("cycles=%d accelerate_failed=%ld echoed=%ld kills=%d killed=%ld\n",
	       cycles, accel_fail, echoed, kills, killed);
	printf("after rows_used=%ld connections=%ld\n", sysfs_num("rows_used"),
	       sysfs_num("connections"));
	printf("mem_free_kb_before=%ld mem_free_kb_after=%ld\n", mem0, mem1);
	return accel_fail || echoed != cycles || killed != kills;
}

static int echo_once(int fd, int seq)
{
	char tx[200], rx[200];
	ssize_t n;

	memset(tx, seq, sizeof(tx));
	snprintf(tx, sizeof(tx), "asid check %d", seq);
	if (send(fd, tx, sizeof(tx), 0) != sizeof(tx))
		return 0;
	n = recv(fd, rx, sizeof(rx), 0);
	return n == sizeof(tx) && !memcmp(tx, rx, n);
}

/*
 * Every new address space takes an ASID: two forkers (one per host core
 * QEMU is likely to get) use them all up while this process sleeps (its
 * address space is not active during the rollovers). 1 when both forked
 * all theirs.
 */
static int asid_storm(long forks)
{
	int k, st, ok = 0;
	pid_t pid[2], c;
	long i;

	for (k = 0; k < 2; k++) {
		pid[k] = fork();
		if (pid[k] == 0) {
			/* children are reaped by the kernel; 64 at a time alive */
			for (i = 0; i < forks / 2; i++) {
				c = fork();
				if (c == 0)
					_exit(0);
				if (c < 0)
					_exit(1);
				if (i % 64 == 63)
					while (waitpid(-1, NULL, 0) > 0)
						;
			}
			while (waitpid(-1, NULL, 0) > 0)
				;
			_exit(0);
		}
	}
	for (k = 0; k < 2; k++) {
		waitpid(pid[k], &st, 0);
		ok += WIFEXITED(st) && WEXITSTATUS(st) == 0;
	}
	return ok == 2;
}

static int asid(const char *host, int port, long forks)
{
	struct accio_stats st0, st1;
	int fd, ok0, ok1, storm_ok = 1, storms = 0;

	fd = udp_connected(host, port);
	if (accio_accelerate(fd) < 0) {
		perror("accelerate");
		return 1;
	}
	ok0 = echo_once(fd, 1);
	accio_stats(fd, &st0);
	/*
	 * Linux keeps a process's ASID number after a rollover when nobody
	 * took that number in the new generation yet; how far the last
	 * generation got when this process runs again varies from run to
	 * run. So the storm repeats (at most 4 times) until the number has
	 * changed: the row's owner follows the switch-in, before any echo.
	 */
	do {
		storm_ok &= asid_storm(forks);
		storms++;
		accio_stats(fd, &st1);
	} while (st1.owner_asid == st0.owner_asid && storms < 4);
	ok1 = echo_once(fd, 2);
	accio_stats(fd, &st1);
	printf("forks=%ld storms=%d storm_ok=%d asid_before=%u asid_after=%u "
	       "echo_before=%d echo_after=%d rx_ring=%llu tx_ring=%llu "
	       "prot_faults=%llu\n", forks, storms, storm_ok, st0.owner_asid,
	       st1.owner_asid, ok0, ok1, (unsigned long long)st1.rx_ring,
	       (unsigned long long)st1.tx_ring,
	       (unsigned long long)st1.prot_faults);
	return ok0 && ok1 && !st1.prot_faults ? 0 : 1;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "errors"))
		return errors();
	if (argc == 3 && !strcmp(argv[1], "rows"))
		return rows(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "hold"))
		return hold(atoi(argv[2]));
	if (argc == 4 && !strcmp(argv[1], "isolate"))
		return isolate(argv[2], atoi(argv[3]));
	if (argc == 5 && !strcmp(argv[1], "zc"))
		return zc(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "killtx"))
		return killtx(argv[2], atoi(argv[3]), atoi(argv[4]));
	if (argc == 5 && !strcmp(argv[1], "asid"))
		return asid(argv[2], atoi(argv[3]), atol(argv[4]));
	if (argc == 6 && !strcmp(argv[1], "churn"))
		return churn(argv[2], atoi(argv[3]), atoi(argv[4]), atoi(argv[5]));
	fprintf(stderr, "usage: accio_selftest errors|rows N|hold PORT|"
		"isolate HOST PORT|zc HOST PORT COUNT|killtx HOST PORT COUNT|"
		"asid HOST PORT FORKS|churn HOST PORT CYCLES KILLS\n");
	return 2;
}
