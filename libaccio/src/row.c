// SPDX-License-Identifier: MIT
/*
 * One ICT row: SIOCACCIO, the row fd's mappings and its wait (row.h).
 * System calls go through syscall(): inside libaccio, ioctl and close are
 * the library's own interposed entries.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "row.h"

/* A ring mapped twice in a row; NULL with errno. */
static uint8_t *map_ring(int fd, uint64_t off, uint32_t size)
{
	uint8_t *base = mmap(NULL, 2 * (size_t)size, PROT_NONE,
			     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int err;

	if (base == MAP_FAILED)
		return NULL;
	if (mmap(base, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
		 fd, off) == MAP_FAILED ||
	    mmap(base + size, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | MAP_FIXED, fd, off) == MAP_FAILED) {
		err = errno;
		munmap(base, 2 * (size_t)size);
		errno = err;
		return NULL;
	}
	return base;
}

/* A kernel without status pages: the registers are always there. */
static const struct accio_row_status row_no_status = { .installed = 1 };

void accio_row_retire(struct accio_row *r)
{
	int err = errno;

	if (r->regs)
		munmap((void *)r->regs, 4096);
	/*
	 * The status page's address stays readable, a page of zeros from now
	 * on, until accio_row_forget(): the row fd's mapping must go (it holds
	 * the row), but a thread may have read the address just before.
	 */
	if (r->status && r->status != &row_no_status &&
	    mmap((void *)r->status, 4096, PROT_READ,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED) {
		munmap((void *)r->status, 4096);
		r->status = &row_no_status;
	}
	if (r->rx)
		munmap(r->rx, 2 * (size_t)r->rx_bytes);
	if (r->tx)
		munmap(r->tx, 2 * (size_t)r->tx_bytes);
	if (r->fd >= 0)
		syscall(SYS_close, r->fd);
	r->regs = NULL;
	r->rx = r->tx = NULL;
	r->fd = -1;
	errno = err;
}

void accio_row_forget(struct accio_row *r)
{
	int err = errno;

	if (r->status && r->status != &row_no_status)
		munmap((void *)r->status, 4096);
	r->status = &row_no_status;
	errno = err;
}

void accio_row_close(struct accio_row *r)
{
	accio_row_retire(r);
	accio_row_forget(r);
}

int accio_row_open(struct accio_row *r, int sock, uint32_t flags,
		   uint32_t rx_bytes, uint32_t tx_bytes)
{
	struct accio_accel a;
	void *p;

	memset(r, 0, sizeof(*r));
	r->fd = -1;
	memset(&a, 0, sizeof(a));
	a.version = ACCIO_UAPI_VERSION;
	a.flags = flags;
	a.rx_bytes = rx_bytes;
	a.tx_bytes = tx_bytes;
	if (syscall(SYS_ioctl, sock, SIOCACCIO, &a) < 0)
		return -1;
	r->fd = a.fd;
	r->index = a.row;
	r->rx_bytes = a.rx_bytes;
	r->tx_bytes = a.tx_bytes;
	r->local_ip = a.local_ip;
	r->remote_ip = a.remote_ip;
	r->local_port = a.local_port;
	r->remote_port = a.remote_port;
	r->paths_gen = a.paths_gen;
	r->status = &row_no_status;
	if (a.status_offset) {
		p = mmap(NULL, 4096, PROT_READ, MAP_SHARED, a.fd, a.status_offset);
		if (p == MAP_FAILED)
			goto fail;
		r->status = p;
	}
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, a.fd, 0);
	if (p == MAP_FAILED)
		goto fail;
	r->regs = p;
	r->rx = map_ring(a.fd, a.rx_offset, a.rx_bytes);
	if (!r->rx)
		goto fail;
	r->tx = map_ring(a.fd, a.tx_offset, a.tx_bytes);
	if (!r->tx)
		goto fail;
	return 0;
fail:
	accio_row_close(r);
	return -1;
}

/*
 * accio_wait(2) takes its arguments in registers (no ioctl dispatch, no
 * copies). On riscv64 the call is made inline: the C library's variadic
 * syscall() costs about thirty instructions a call. A kernel without it
 * answers ENOSYS once; the ioctl serves from then on.
 */
static int wait_by_ioctl;

long accio_row_wait(int fd, int dir, uint32_t need, int timeout_ms)
{
	struct accio_wait w = { .dir = dir, .need = need, .timeout_ms = timeout_ms };
	long r;

	if (!wait_by_ioctl) {
#if defined(__riscv) && __riscv_xlen == 64
		register long a0 __asm__("a0") = fd;
		register long a1 __asm__("a1") = dir;
		register long a2 __asm__("a2") = need;
		register long a3 __asm__("a3") = timeout_ms;
		register long a7 __asm__("a7") = __NR_accio_wait;

		__asm__ volatile("ecall" : "+r"(a0) : "r"(a1), "r"(a2), "r"(a3), "r"(a7)
				 : "memory");
		r = a0;
#else
		r = syscall(__NR_accio_wait, fd, dir, need, timeout_ms);
		if (r < 0)
			r = -errno;
#endif
		if (r >= 0)
			return r;
		if (r != -ENOSYS) {
			errno = (int)-r;
			return -1;
		}
		wait_by_ioctl = 1;
	}
	if (syscall(SYS_ioctl, fd, ACCIO_IOC_WAIT, &w) < 0)
		return -1;
	return w.ready;
}
