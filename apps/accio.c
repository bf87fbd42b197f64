// SPDX-License-Identifier: MIT
/*
 * accio: the operator's view of the Accio uncore in the guest.
 *
 *   accio stat [PID...]
 *
 * One line per accelerated socket of every process (or of the PIDs
 * given): its ICT row, the fill of its RX and TX rings, the row's
 * hardware counters (datagrams received, sent, dropped for a full ring),
 * and, for programs running libaccio, the datagrams that took the fast
 * path or the kernel's fallback and the sleeps in the kernel. The rows
 * come from /proc/PID/fdinfo of each row fd (any program that uses
 * SIOCACCIO), the library's counters from its statistics file under
 * /run/accio. A process with an accelerated socket and no file shows "-".
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "statfile.h"

struct rowinfo {
	int fd;
	long long row;		/* -1: the connection has no hardware row now */
	unsigned long long rx_w, rx_r, rx_size, tx_w, tx_r, tx_size;
	unsigned long long rx_pkts, tx_pkts, rx_drops, tx_errors, prot_faults;
};

static int read_rowinfo(int pid, int fd, struct rowinfo *ri)
{
	char path[64], line[256];
	FILE *f;
	int seen = 0;

	snprintf(path, sizeof(path), "/proc/%d/fdinfo/%d", pid, fd);
	f = fopen(path, "r");
	if (!f)
		return -1;
	memset(ri, 0, sizeof(*ri));
	ri->fd = fd;
	while (fgets(line, sizeof(line), f)) {
		seen |= sscanf(line, "row: %lld", &ri->row) == 1;
		sscanf(line, "rx_wptr_rptr_size: %llu %llu %llu", &ri->rx_w, &ri->rx_r,
		       &ri->rx_size);
		sscanf(line, "tx_wptr_rptr_size: %llu %llu %llu", &ri->tx_w, &ri->tx_r,
		       &ri->tx_size);
		sscanf(line, "rx_pkts: %llu", &ri->rx_pkts);
		sscanf(line, "tx_pkts: %llu", &ri->tx_pkts);
		sscanf(line, "rx_drops: %llu", &ri->rx_drops);
		sscanf(line, "tx_errors: %llu", &ri->tx_errors);
		sscanf(line, "prot_faults: %llu", &ri->prot_faults);
	}
	fclose(f);
	return seen ? 0 : -1;
}

/* The library's statistics file of pid, mapped read-only, or NULL. */
static const struct accio_statfile *statfile_of(int pid)
{
	const char *dir = getenv("ACCIO_STAT_DIR");
	const struct accio_statfile *sf;
	char path[256];
	struct stat st;
	int fd;

	snprintf(path, sizeof(path), "%s/%d", dir && *dir ? dir : ACCIO_STATFILE_DIR, pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) < 0 || st.st_size < (off_t)sizeof(*sf)) {
		close(fd);
		return NULL;
	}
	sf = mmap(NULL, sizeof(*sf), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (sf == MAP_FAILED)
		return NULL;
	if (memcmp(sf->magic, ACCIO_STATFILE_MAGIC, 8) || sf->pid != pid) {
		munmap((void *)sf, sizeof(*sf));
		return NULL;
	}
	return sf;
}

static void comm_of(int pid, char *buf, size_t len)
{
	char path[64];
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	f = fopen(path, "r");
	buf[0] = 0;
	if (f) {
		if (fgets(buf, len, f))
			buf[strcspn(buf, "\n")] = 0;
		fclose(f);
	}
}

static unsigned long totals[3];	/* sockets on rows, processes, sockets on the kernel path */
static const char *const kpath_names[] = ACCIO_KPATH_NAMES;

static void show_pid(int pid)
{
	const struct accio_statfile *sf = NULL;
	struct rowinfo ri;
	char path[64], link[64], comm[32], fdcol[16], rowcol[24];
	struct dirent *de;
	DIR *d;
	int fd, i, n = 0, have;
	ssize_t l;

	snprintf(path, sizeof(path), "/proc/%d/fd", pid);
	d = opendir(path);
	if (!d)
		return;
	comm_of(pid, comm, sizeof(comm));
	while ((de = readdir(d))) {
		if (!isdigit((unsigned char)de->d_name[0]))
			continue;
		fd = atoi(de->d_name);
		snprintf(path, sizeof(path), "/proc/%d/fd/%d", pid, fd);
		l = readlink(path, link, sizeof(link) - 1);
		if (l < 0)
			continue;
		link[l] = 0;
		if (strcmp(link, "anon_inode:[accio-row]") || read_rowinfo(pid, fd, &ri))
			continue;
		if (!n++)
			sf = statfile_of(pid);
		for (i = 0; sf && i < ACCIO_STATFILE_SLOTS; i++)
			if (sf->slot[i].fd >= 0 && (int)sf->slot[i].rowfd == fd)
				break;
		have = sf && i < ACCIO_STATFILE_SLOTS;
		if (have)
			snprintf(fdcol, sizeof(fdcol), "%d", sf->slot[i].fd);
		else
			snprintf(fdcol, sizeof(fdcol), "-");
		if (ri.row >= 0)
			snprintf(rowcol, sizeof(rowcol), "%lld", ri.row);
		else
			snprintf(rowcol, sizeof(rowcol), "-");
		printf("%-7d %-15.15s %5s %4s %8llu %8llu %10llu %10llu %8llu ",
		       pid, comm, fdcol, rowcol, ri.rx_w - ri.rx_r, ri.tx_w - ri.tx_r,
		       ri.rx_pkts, ri.tx_pkts, ri.rx_drops);
		if (have) {
			const struct accio_stats *s = &sf->slot[i].st;

			printf("%10llu %9llu %10llu %9llu %9llu %8llu ring\n",
			       (unsigned long long)s->rx_ring, (unsigned long long)s->rx_kernel,
			       (unsigned long long)s->tx_ring, (unsigned long long)s->tx_mmio,
			       (unsigned long long)s->tx_kernel, (unsigned long long)s->waits);
		} else {
			printf("%10s %9s %10s %9s %9s %8s ring\n", "-", "-", "-", "-", "-", "-");
		}
		totals[0]++;
	}
	closedir(d);
	if (!n)
		sf = statfile_of(pid);
	/* UDP sockets the library keeps on the kernel path, and why */
	for (i = 0; sf && i < ACCIO_STATFILE_SLOTS; i++) {
		const struct accio_statslot *sl = &sf->slot[i];
		int k = sl->kpath;

		if (sl->fd < 0 || k <= ACCIO_KPATH_ROW || k >= ACCIO_KPATH_N)
			continue;
		printf("%-7d %-15.15s %5d %4s %8s %8s %10s %10s %8s %10s %9llu %10s %9s %9llu %8s "
		       "kernel:%s\n", pid, comm, sl->fd, "-", "-", "-", "-", "-", "-", "-",
		       (unsigned long long)sl->st.rx_kernel, "-", "-",
		       (unsigned long long)sl->st.tx_kernel, "-", kpath_names[k]);
		totals[2]++;
		n++;
	}
	if (n)
		totals[1]++;
	if (sf && sf->overflow)
		printf("%-7d %-15.15s (%llu more sockets without a slot)\n", pid,
		       comm, (unsigned long long)sf->overflow);
	if (sf)
		munmap((void *)sf, sizeof(*sf));
}

static int cmd_stat(int argc, char **argv)
{
	struct dirent *de;
	DIR *d;
	int i;

	printf("%-7s %-15s %5s %4s %8s %8s %10s %10s %8s %10s %9s %10s %9s %9s %8s %s\n",
	       "PID", "COMMAND", "FD", "ROW", "RX_FILL", "TX_FILL", "RX_PKTS", "TX_PKTS",
	       "RX_DROPS", "RX_RING", "RX_KERNEL", "TX_RING", "TX_MMIO", "TX_KERNEL", "WAITS",
	       "PATH");
	if (argc > 0) {
		for (i = 0; i < argc; i++) {
			char *end;
			long pid = strtol(argv[i], &end, 10);

			if (*end || pid <= 0) {
				fprintf(stderr, "accio stat: bad PID '%s'\n", argv[i]);
				return 2;
			}
			show_pid(pid);
		}
	} else {
		d = opendir("/proc");
		if (!d) {
			perror("accio stat: /proc");
			return 1;
		}
		while ((de = readdir(d)))
			if (isdigit((unsigned char)de->d_name[0]))
				show_pid(atoi(de->d_name));
		closedir(d);
	}
	printf("%lu accelerated sockets, %lu on the kernel path, in %lu processes\n",
	       totals[0], totals[2], totals[1]);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 2 && !strcmp(argv[1], "stat"))
		return cmd_stat(argc - 2, argv + 2);
	fprintf(stderr, "usage: accio stat [PID...]\n");
	return 2;
}
