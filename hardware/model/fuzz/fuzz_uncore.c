// SPDX-License-Identifier: MIT
/*
 * libFuzzer target: the uncore's C model (register interface, frame
 * parser, rings, MMIO transmit window, ready queues, events) driven by a
 * byte string read as a program of operations. Built with clang's
 * -fsanitize=fuzzer,address,undefined by `make -C hardware/model fuzz`.
 *
 * Input: a header byte (rows = 1 + (b & 63), harts = 1 + (b >> 6)),
 * then operations, each an opcode byte and its operands (little endian):
 *
 *   0 write   u32 off, u64 val, u8 who     register store of 8 bytes
 *   1 store   u32 off, u8 size, u64 val, u8 who   1/2/4/8-byte store
 *   2 read    u32 off, u8 who              register load
 *   3 rx      u16 len, len bytes           a frame from the wire
 *   4 mem     u32 off, u8 len, len bytes   into system memory
 *   5 link    u8 up
 *   6 time    u32 ns                       the clock moves forward
 *   7 nic     u8 ready                     the NIC can take frames, or not
 *   8 dump
 *   9 reset
 *
 * "who": bit 0 user mode, bits 1..2 hart, bits 3..7 the ASID. Register
 * offsets are taken modulo the configuration's window; the engine's DMA
 * reaches 4 MiB of memory at 0x80000000 and fails outside it. An input
 * that ends inside an operation ends there. hardware/model/fuzz/seeds.py
 * makes seeds from hardware/vectors; fuzz2vec.py turns an input back into
 * a vector file for vecrun and the RTL.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "accio_uncore.h"

#define MEM_BASE	0x80000000ULL
#define MEM_SIZE	(4u << 20)	/* as the vectors' memory */

struct fz {
	uint8_t mem[MEM_SIZE];
	uint64_t now;
	int nic_ready;
	uint64_t frames;
};

static int f_dma_read(void *o, uint64_t a, void *b, size_t n)
{
	struct fz *f = o;

	if (a < MEM_BASE || a + n > MEM_BASE + MEM_SIZE || a + n < a)
		return -1;
	memcpy(b, f->mem + (a - MEM_BASE), n);
	return 0;
}

static int f_dma_write(void *o, uint64_t a, const void *b, size_t n)
{
	struct fz *f = o;

	if (a < MEM_BASE || a + n > MEM_BASE + MEM_SIZE || a + n < a)
		return -1;
	memcpy(f->mem + (a - MEM_BASE), b, n);
	return 0;
}

static uint64_t f_transmit(void *o, const uint8_t *frame, size_t n)
{
	struct fz *f = o;
	volatile uint8_t sink = 0;
	size_t i;

	/* touch every byte: the sanitizers see a frame built out of bounds */
	for (i = 0; i < n; i++)
		sink ^= frame[i];
	(void)sink;
	if (n > 14 + 20 + 8 + ACCIO_MAX_PAYLOAD)
		abort();	/* the engine must never build an oversize frame */
	f->frames++;
	return f->now;
}

static bool f_tx_ready(void *o)
{
	return ((struct fz *)o)->nic_ready;
}

static void f_set_irq(void *o, unsigned int line, int level)
{
	(void)o;
	(void)line;
	(void)level;
}

static uint64_t f_now(void *o)
{
	return ((struct fz *)o)->now;
}

static const struct accio_uncore_ops ops = {
	.dma_read = f_dma_read,
	.dma_write = f_dma_write,
	.transmit = f_transmit,
	.tx_ready = f_tx_ready,
	.set_irq = f_set_irq,
	.now_ns = f_now,
};

struct in {
	const uint8_t *p;
	size_t left;
};

static int take(struct in *in, void *dst, size_t n)
{
	if (in->left < n)
		return -1;
	memcpy(dst, in->p, n);
	in->p += n;
	in->left -= n;
	return 0;
}

static void who_of(uint8_t b, struct accio_access *who)
{
	who->user = b & 1;
	who->hart = b >> 1 & 3;
	who->asid = b >> 3;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fz f;
	struct in in = { data, size };
	struct accio_access who;
	struct accio_uncore *u;
	uint8_t op, b, buf[2048], sz;
	uint32_t ns, addr, off;
	uint64_t val, window;
	uint16_t len;

	if (take(&in, &b, 1))
		return 0;
	memset(&f, 0, sizeof(f));
	f.nic_ready = 1;
	u = accio_uncore_new(1 + (b & 63), 1 + (b >> 6), &ops, &f);
	if (!u)
		abort();
	window = accio_uncore_window(u);
	while (!take(&in, &op, 1)) {
		switch (op % 10) {
		case 0:
			if (take(&in, &off, 4) || take(&in, &val, 8) || take(&in, &b, 1))
				goto out;
			who_of(b, &who);
			accio_uncore_write(u, (off % window) & ~7ULL, val, &who);
			break;
		case 1:
			if (take(&in, &off, 4) || take(&in, &sz, 1) || take(&in, &val, 8) ||
			    take(&in, &b, 1))
				goto out;
			who_of(b, &who);
			sz = 1u << (sz & 3);
			accio_uncore_store(u, (off % window) & ~(uint64_t)(sz - 1), val, sz,
					   &who);
			break;
		case 2:
			if (take(&in, &off, 4) || take(&in, &b, 1))
				goto out;
			who_of(b, &who);
			accio_uncore_read(u, (off % window) & ~7ULL, &who);
			break;
		case 3:
			if (take(&in, &len, 2))
				goto out;
			len %= sizeof(buf);
			if (take(&in, buf, len))
				goto out;
			accio_uncore_rx(u, buf, len);
			break;
		case 4:
			if (take(&in, &addr, 4) || take(&in, &sz, 1) || take(&in, buf, sz))
				goto out;
			if ((size_t)addr + sz <= MEM_SIZE)
				memcpy(f.mem + addr, buf, sz);
			break;
		case 5:
			if (take(&in, &b, 1))
				goto out;
			accio_uncore_link(u, b & 1);
			break;
		case 6:
			if (take(&in, &ns, 4))
				goto out;
			f.now += ns;
			break;
		case 7:
			if (take(&in, &b, 1))
				goto out;
			f.nic_ready = b & 1;
			if (f.nic_ready)
				accio_uncore_tx_resume(u);
			break;
		case 8:
			accio_uncore_dump(u, (char *)buf, sizeof(buf));
			break;
		case 9:
			accio_uncore_reset(u);
			break;
		}
	}
out:
	accio_uncore_free(u);
	return 0;
}
