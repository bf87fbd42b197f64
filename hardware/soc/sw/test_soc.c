// SPDX-License-Identifier: MIT
/*
 * test_soc: the Accio uncore RTL driven by a Rocket core, the way the kernel
 * and libaccio drive it. Hart 0 programs a row through the kernel alias and
 * uses it through the user alias with its ASID in CTX[0]:
 *   1. a datagram sent by doorbell from the TX ring; the wire echoes it and
 *      the engine writes it into the RX ring (DMA through Rocket's front
 *      port, seen by the core without a cache flush); contents checked;
 *   2. the same with the row suspended on RX: the wake-up interrupt comes
 *      through the PLIC, the ready queue names the row;
 *   3. a datagram whose answer matches no row goes to the NIC's normal path;
 *   4. a forged user access (CTX[0] says another address space) is refused:
 *      loads return the poison value, stores are dropped, both counted;
 *   5. a datagram written with stores into the row's MMIO transmit window
 *      (the reorder unit sends it with its last store), echoed into the ring.
 * Prints what it measured (cycles) and exits 0 when everything held.
 */
#include "soc.h"

#define ROW	3
#define ASID	7
#define LPORT	5000
#define RPORT	7000
#define RIP	0x0a000202u	/* 10.0.2.2 */

static uint8_t rx_ring[4096] __attribute__((aligned(4096)));
static uint8_t tx_ring[4096] __attribute__((aligned(4096)));
static uint64_t tx_wptr, rx_rptr;
/* A TX record (len, destination port and IPv4, 0 = the row's remote) */
static uint64_t send(const char *msg, unsigned int len, uint16_t dport)
{
	uint8_t *r = tx_ring + (tx_wptr & 4095);
	unsigned int i;
	uint64_t t0;

	REC_PUT(r, TX_REC_LEN, len);
	REC_PUT(r, TX_REC_DPORT, dport);
	REC_PUT(r, TX_REC_DIP, 0);
	for (i = 0; i < len; i++)
		r[ACCIO_TX_HDR + i] = msg[i];
	tx_wptr += REC_PAD(ACCIO_TX_HDR + len);
	fence();
	t0 = rdcycle();
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_TX_WPTR), tx_wptr);
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_DOORBELL), 1);
	return t0;
}

static int received(const char *msg, unsigned int len)
{
	uint8_t *r = rx_ring + (rx_rptr & 4095);
	unsigned int i, n = REC_GET(r, RX_REC_LEN);
	unsigned int sport = REC_GET(r, RX_REC_SPORT);
	uint32_t sip = REC_GET(r, RX_REC_SIP);
	int ok = n == len && sport == RPORT && sip == RIP;

	for (i = 0; ok && i < len; i++)
		ok = r[ACCIO_RX_HDR + i] == (uint8_t)msg[i];
	rx_rptr += REC_PAD(ACCIO_RX_HDR + n);
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_RX_RPTR), rx_rptr);
	return ok;
}

static void plic_enable(unsigned int src, unsigned int ctx)
{
	mmio_w32(SOC_PLIC + 4 * src, 1);
	mmio_w32(SOC_PLIC + 0x2000 + 0x80 * ctx + 4 * (src / 32), 1u << (src % 32));
	mmio_w32(SOC_PLIC + 0x200000 + 0x1000 * ctx, 0);
}

int main(void)
{
	const char *m1 = "hello from a Rocket core", *m2 = "wake me up", *m3 = "not for a row";
	uint64_t id, t0, t1, v, faults;
	unsigned int ready, claim;

	puts_("test_soc: hart 0 up\n");
#ifndef SOC_QEMU
	/* the console as a 16550: transmitter empty; a divisor write prints nothing */
	*(volatile uint8_t *)(SOC_CONSOLE + 3) = 0x80;
	*(volatile uint8_t *)(SOC_CONSOLE + 0) = 0x01;
	*(volatile uint8_t *)(SOC_CONSOLE + 1) = 0x00;
	*(volatile uint8_t *)(SOC_CONSOLE + 3) = 0x03;
	check(*(volatile uint8_t *)(SOC_CONSOLE + 5) == 0x60 &&
	      *(volatile uint8_t *)(SOC_CONSOLE + 3) == 0x03,
	      "6 the console reads as a 16550 with an empty transmitter");
#endif
	id = mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_ID);
	check((id & 0xffffffff) == 0x41435455, "the uncore answers with its ID");
	mmio_w64(SOC_UNCORE_K + ACCIO_UNCORE_CTRL, 1);
	nic_up();

	/* the kernel's part: program the row, tell the uncore hart 0's ASID */
	row_program(ROW, LPORT, RPORT, ASID, rx_ring, sizeof(rx_ring), tx_ring, sizeof(tx_ring),
		    ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK);
	mmio_w64(SOC_CTX + 8 * 0, ASID);
	check(mmio_r64(SOC_CTX) == ASID, "CTX[0] holds the ASID the kernel wrote");

	/* 1: doorbell, echo, RX ring */
	t0 = send(m1, 24, 0);
	while (mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_WPTR)) == rx_rptr)
		;
	t1 = rdcycle();
	check(received(m1, 24), "1 datagram out by doorbell, its echo in the RX ring, same bytes");
	check(mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_TX_PKTS)) == 1 &&
	      mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_PKTS)) == 1, "row counters: 1 out, 1 in");
	putnum("cycles_doorbell_to_rx_record", t1 - t0);

	/* 2: suspended on RX, woken by the interrupt */
	plic_enable(SOC_IRQ_WAKE(0), 0);
	__asm__ volatile("csrs mie, %0" :: "r"(1ul << 11));	/* MEIE, MIE stays off */
	mmio_w64(row_k(ROW, ACCIO_UNCORE_ROW_STATE),
		 ACCIO_UNCORE_ROW_STATE_ENABLED_MASK | ACCIO_UNCORE_ROW_STATE_ACCEL_MASK |
		 ACCIO_UNCORE_ROW_STATE_RX_SUSP_MASK | ACCIO_UNCORE_ROW_STATE_INTR_MASK |
		 1ull << 8 /* priority 1 */ | 0ull << 16 /* hart 0 */);
	__asm__ volatile("csrr %0, mip" : "=r"(v));
	check(!(v & (1ul << 11)) && !mmio_r64(hart_k(0, ACCIO_UNCORE_HART_RQ_COUNT)),
	      "2 nothing pending before the datagram");
	/* (the hart's clock stops in wfi, and its cycle counter with it) */
	send(m2, 10, 0);
	do {
		__asm__ volatile("wfi");
		__asm__ volatile("csrr %0, mip" : "=r"(v));
	} while (!(v & (1ul << 11)));
	claim = mmio_r32(SOC_PLIC + 0x200004);
	check(claim == SOC_IRQ_WAKE(0), "2 the wake-up interrupt of hart 0 through the PLIC");
	v = mmio_r64(hart_k(0, ACCIO_UNCORE_HART_RQ_POP));
	ready = v & ACCIO_UNCORE_HART_RQ_POP_ROW_MASK;
	check((v & ACCIO_UNCORE_HART_RQ_POP_VALID_MASK) && ready == ROW &&
	      !(v & ACCIO_UNCORE_HART_RQ_POP_TX_MASK), "2 the ready queue names the row (RX)");
	mmio_w64(hart_k(0, ACCIO_UNCORE_HART_WAKE), 1);
	mmio_w32(SOC_PLIC + 0x200004, claim);
	check(received(m2, 10), "2 the datagram that woke the hart, same bytes");

	/* 3: an answer for no row goes to the normal NIC path */
	send(m3, 13, 9);
	for (t0 = rdcycle(); rdcycle() - t0 < 20000;)
		;
	check(mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_PKTS)) == 2 &&
	      mmio_r64(SOC_UNCORE_K + ACCIO_UNCORE_ICT_MISSES) == 1,
	      "3 a reply from port 9 misses the row: ICT miss, normal path");

	/* 4: CTX[0] says another address space: the row refuses */
	faults = mmio_r64(row_k(ROW, ACCIO_UNCORE_ROW_PROT_FAULTS));
	mmio_w64(SOC_CTX, 5);
	v = mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_WPTR));
	mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_RX_RPTR), 0);
	mmio_w64(SOC_CTX, ASID);
	check(v == 0xbadacce55badacceull, "4 a foreign ASID's load returns the poison value");
	check(mmio_r64(row_k(ROW, ACCIO_UNCORE_ROW_RX_RPTR)) == rx_rptr,
	      "4 a foreign ASID's store is dropped");
	check(mmio_r64(row_k(ROW, ACCIO_UNCORE_ROW_PROT_FAULTS)) == faults + 2,
	      "4 both refusals counted on the row");
	check(mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_WPTR)) == rx_rptr,
	      "4 the owner's ASID opens the row again");

	/* 5: the MMIO transmit window: length word, then the payload */
	{
		const char *m5 = "through the MMIO window!";	/* 24 bytes */
		uint64_t w[3];
		unsigned int i;

		for (i = 0; i < 24; i++)
			((uint8_t *)w)[i] = m5[i];
		t0 = rdcycle();
		mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_MMIO_TX), (uint64_t)24 << (8 * ACCIO_TX_REC_LEN));
		for (i = 0; i < 3; i++)
			mmio_w64(row_u(ROW, ACCIO_UNCORE_ROW_MMIO_TX + ACCIO_TX_HDR + 8 * i), w[i]);
		while (mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_RX_WPTR)) == rx_rptr)
			;
		t1 = rdcycle();
		check(received(m5, 24), "5 a datagram through the MMIO window, its echo, same bytes");
		check(mmio_r64(row_u(ROW, ACCIO_UNCORE_ROW_MMIO_TX_NEXT)) == REC_PAD(ACCIO_TX_HDR + 24),
		      "5 the window's next message starts after it");
		putnum("cycles_window_to_rx_record", t1 - t0);
	}

#if defined(SOC_NIC) && !defined(SOC_QEMU)
	/* the frame for no row reached the NIC, which had no buffer for it */
	putnum("nic_passed", mmio_r64(SOC_NIC + ACCIO_NIC_RX_FRAMES) +
			     mmio_r64(SOC_NIC + ACCIO_NIC_RX_DROP_NOBUF));
#endif
	putnum("failures", failures);
	return failures ? 1 : 0;
}
