/* SPDX-License-Identifier: MIT */
/* The Accio Rocket SoC for bare-metal programs: addresses, MMIO access to
 * the uncore through its two aliases, the console, ring records. Register
 * offsets and record layouts come from the generated register map
 * (hardware/generated/accio_offsets.h, accio_contract.h). */
#ifndef ACCIO_SOC_H
#define ACCIO_SOC_H
#include <stdint.h>
#include "accio_offsets.h"
#include "accio_contract.h"

/* Ring records: REC_GET(r, RX_REC_LEN) reads a little-endian header field
 * of up to 4 bytes, REC_PUT(r, TX_REC_DPORT, v) writes one; REC_PAD(n) pads
 * a record. */
#define REC_BYTE(r, f, k)	((k) < ACCIO_##f##_SIZE ? (uint32_t)(r)[ACCIO_##f + (k)] << (8 * (k)) : 0u)
#define REC_GET(r, f)		(REC_BYTE(r, f, 0) | REC_BYTE(r, f, 1) | REC_BYTE(r, f, 2) | REC_BYTE(r, f, 3))

static inline void rec_put(uint8_t *r, unsigned int off, unsigned int size, uint64_t v)
{
	unsigned int i;

	for (i = 0; i < size; i++)
		r[off + i] = v >> (8 * i);
}

#define REC_PUT(r, f, v)	rec_put(r, ACCIO_##f, ACCIO_##f##_SIZE, v)
#define REC_PAD(n)		(((n) + ACCIO_REC_ALIGN - 1) & ~(ACCIO_REC_ALIGN - 1u))

#if defined(SOC_DIPLOMATIC)
/*
 * The SoC built with WithAccioUncore (-DSOC_DIPLOMATIC=HARTS): the uncore on
 * the system bus at 0x5000_0000, its interrupts on the PLIC after the
 * 1 + HARTS external ones; the console stays on the MMIO port.
 */
#define SOC_UNCORE_K	0x50000000UL
#define SOC_UNCORE_U	0x50100000UL
#define SOC_CTX		0x50200000UL
#define SOC_CONSOLE	0x70000000UL
#define SOC_PLIC	0x0c000000UL
#define SOC_IRQ_EVENT	(2 + SOC_DIPLOMATIC)
#define SOC_IRQ_WAKE(h)	(3 + SOC_DIPLOMATIC + (h))
#elif !defined(SOC_QEMU)
#define SOC_UNCORE_K	0x60000000UL	/* kernel alias: privileged accesses */
#define SOC_UNCORE_U	0x60100000UL	/* user alias: checked against CTX[hart] */
#define SOC_CTX		0x60200000UL	/* CTX[h] at +8h: the ASID hart h runs */
#define SOC_NIC		0x60300000UL	/* the NIC's registers (AccioNicUncore) */
#define SOC_CONSOLE	0x70000000UL
#define SOC_PLIC	0x0c000000UL
#define SOC_IRQ_EVENT	1		/* PLIC sources */
#define SOC_IRQ_WAKE(h)	(2 + (h))
#define SOC_IRQ_NIC(harts)	(2 + (harts))
#define SOC_IRQ_CONSOLE(harts)	(3 + (harts))
#else
/*
 * The same programs on QEMU's virt machine with the uncore's C model
 * (-DSOC_QEMU, for the calibration): the model takes privilege and ASID
 * from the hart itself, so both aliases are the one device, and there are
 * no context registers; the console is the 16550 UART, marks are not kept.
 */
#define SOC_UNCORE_K	0x11000000UL
#define SOC_UNCORE_U	0x11000000UL
#define SOC_PLIC	0x0c000000UL
#define SOC_UART	0x10000000UL
#define SOC_NIC		0x10200000UL
#define SOC_IRQ_WAKE(h)	(13 + (h))
#endif

/* Where the harness puts a devicetree blob for firmware (the boot ROM's a1) */
#define SOC_DTB		0x82200000UL

static inline void mmio_w64(uintptr_t a, uint64_t v)
{
	*(volatile uint64_t *)a = v;
}

static inline uint64_t mmio_r64(uintptr_t a)
{
	return *(volatile uint64_t *)a;
}

static inline void mmio_w32(uintptr_t a, uint32_t v)
{
	*(volatile uint32_t *)a = v;
}

static inline uint32_t mmio_r32(uintptr_t a)
{
	return *(volatile uint32_t *)a;
}

static inline uintptr_t row_k(unsigned int row, unsigned int reg)
{
	return SOC_UNCORE_K + ACCIO_UNCORE_ROW_BASE + row * ACCIO_UNCORE_ROW_STRIDE + reg;
}

static inline uintptr_t row_u(unsigned int row, unsigned int reg)
{
	return SOC_UNCORE_U + ACCIO_UNCORE_ROW_BASE + row * ACCIO_UNCORE_ROW_STRIDE + reg;
}

static inline uintptr_t hart_k(unsigned int hart, unsigned int reg)
{
	return SOC_UNCORE_K + ACCIO_UNCORE_HART_BASE + hart * ACCIO_UNCORE_HART_STRIDE + reg;
}

static inline uint64_t rdcycle(void)
{
	uint64_t c;

	__asm__ volatile("rdcycle %0" : "=r"(c));
	return c;
}

static inline void fence(void)
{
	__asm__ volatile("fence" ::: "memory");
}

static inline void putch(char c)
{
#ifndef SOC_QEMU
	*(volatile uint8_t *)SOC_CONSOLE = (uint8_t)c;
#else
	*(volatile uint8_t *)SOC_UART = (uint8_t)c;
#endif
}

/* The NIC's part: enabled, station MAC 02:00:00:00:00:02 (the SoC with the
 * NIC in front of the uncore and QEMU's; the diplomatic SoC's wire reaches
 * the uncore directly) */
static inline void nic_up(void)
{
#ifdef SOC_NIC
	*(volatile uint64_t *)(SOC_NIC + ACCIO_NIC_MACADDR) = 0x020000000002ull;
	*(volatile uint64_t *)(SOC_NIC + ACCIO_NIC_CTRL) = ACCIO_NIC_CTRL_ENABLE_MASK;
#endif
}

/* The echo peer's MAC on QEMU's wire (the harness's echo takes any) */
#define SOC_PEER_MAC	0x00c40ec1ac02ull

/* The ASID the kernel tells the uncore hart h runs (no-op on QEMU) */
static inline void ctx_set(unsigned int h, uint64_t asid)
{
#ifndef SOC_QEMU
	*(volatile uint64_t *)(SOC_CTX + 8 * h) = asid;
#else
	(void)h;
	(void)asid;
#endif
}

static inline void puts_(const char *s)
{
	while (*s)
		putch(*s++);
}

static inline void putnum(const char *key, uint64_t v)
{
	char b[24];
	int n = 0;

	puts_(key);
	putch('=');
	do {
		b[n++] = '0' + v % 10;
		v /= 10;
	} while (v);
	while (n)
		putch(b[--n]);
	putch('\n');
}

static inline void puthex(const char *key, uint64_t v)
{
	int i;

	puts_(key);
	puts_("=0x");
	for (i = 60; i >= 0; i -= 4)
		putch("0123456789abcdef"[(v >> i) & 15]);
	putch('\n');
}

/* A test program's verdicts: "ok   WHAT" or "FAIL WHAT", failures counted */
static int failures __attribute__((unused));

static inline void check(int ok, const char *what)
{
	puts_(ok ? "ok   " : "FAIL ");
	puts_(what);
	putch('\n');
	if (!ok)
		failures++;
}

/* The kernel's part of accelerating a connected UDP socket: program a row
 * (local 10.0.2.15:LPORT, remote 10.0.2.2:RPORT, owner ASID, rings) and
 * enable it with STATE (ENABLED and ACCEL at least). */
static inline void row_program(unsigned int row, unsigned int lport, unsigned int rport,
			       uint64_t asid, void *rx, uint64_t rx_size, void *tx,
			       uint64_t tx_size, uint64_t state)
{
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_LOCAL),
		 0x11ull << 48 | (uint64_t)lport << 32 | 0x0a00020f);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_REMOTE), (uint64_t)rport << 32 | 0x0a000202);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_OWNER_ASID), asid);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_DST_MAC), SOC_PEER_MAC);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_RX_BASE), (uintptr_t)rx);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_RX_SIZE), rx_size);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_TX_BASE), (uintptr_t)tx);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_TX_SIZE), tx_size);
	mmio_w64(row_k(row, ACCIO_UNCORE_ROW_STATE), state);
}

/* "mark N cycle C" in the harness's output: a cycle stamp taken outside */
static inline void mark(uint64_t n)
{
#ifndef SOC_QEMU
	mmio_w64(SOC_CONSOLE + 16, n);
#else
	(void)n;
#endif
}
#endif
