// SPDX-License-Identifier: MIT
/*
 * test_nic: the NIC in front of the uncore on the SoC with the Verilog top,
 * driven as its Linux driver drives it. The harness's echo wire answers
 * every frame with its addresses swapped.
 *   1. the NIC answers: ID, the station MAC out of reset, the link up
 *   2. a UDP datagram sent from an odd address with checksum offload
 *      (both checksums zero in memory) comes back into a posted buffer at
 *      an odd address, checked by the receive offload (CSUM_OK), every
 *      byte as sent with the addresses swapped
 *   3. the receive interrupt reaches the PLIC; the stamps are ordered
 *   4. ROUNDS more round trips through the normal path, each byte checked
 *   5. the peer answers an ARP request for 10.0.2.2 and an ICMP echo
 *      request, as a host on the wire does
 * The uncore stays disabled: everything takes the normal path.
 */
#include "soc.h"

#if defined(SOC_NIC) && !defined(SOC_QEMU)
#define ROUNDS	8
#define PAYLOAD	40
#define FLEN	(42 + PAYLOAD)

static uint8_t txbuf[4][128] __attribute__((aligned(64)));
static uint8_t rxbuf[4][2048] __attribute__((aligned(64)));
static unsigned int csum_add(unsigned int s, const uint8_t *p, unsigned int n)
{
	unsigned int i;

	for (i = 0; i + 1 < n; i += 2)
		s += p[i] << 8 | p[i + 1];
	if (n & 1)
		s += p[n - 1] << 8;
	return s;
}

static unsigned int fold(unsigned int s)
{
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s;
}

/* a datagram 10.0.2.15:5000 -> 10.0.2.2:9, both checksums left zero */
static void build(uint8_t *f, unsigned int round)
{
	static const uint8_t head[34] = {
		0x02, 0xac, 0xc1, 0x0e, 0xc4, 0x00, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x00,
		0x45, 0, 0, 20 + 8 + PAYLOAD, 0, 1, 0x40, 0, 64, 17, 0, 0,
		10, 0, 2, 15, 10, 0, 2, 2 };
	unsigned int i;

	for (i = 0; i < 34; i++)
		f[i] = head[i];
	f[34] = 5000 >> 8; f[35] = 5000 & 0xff; f[36] = 0; f[37] = 9;
	f[38] = 0; f[39] = 8 + PAYLOAD; f[40] = 0; f[41] = 0;
	for (i = 0; i < PAYLOAD; i++)
		f[42 + i] = (uint8_t)(round * 31 + i * 7);
}

/* the echo of @f as it must arrive: addresses and ports swapped, checksums filled in */
static int echo_ok(const uint8_t *f, const uint8_t *r)
{
	unsigned int i, s;

	for (i = 0; i < 6; i++)
		if (r[i] != f[6 + i] || r[6 + i] != f[i])
			return 0;
	for (i = 0; i < 4; i++)
		if (r[26 + i] != f[30 + i] || r[30 + i] != f[26 + i])
			return 0;
	if (r[34] != f[36] || r[35] != f[37] || r[36] != f[34] || r[37] != f[35])
		return 0;
	for (i = 12; i < 24; i++)
		if (r[i] != f[i])
			return 0;
	for (i = 38; i < 40; i++)
		if (r[i] != f[i])
			return 0;
	for (i = 42; i < FLEN; i++)
		if (r[i] != f[i])
			return 0;
	if (fold(csum_add(0, r + 14, 20)) != 0xffff)
		return 0;
	s = csum_add(0, r + 26, 8) + 17 + (8 + PAYLOAD);
	return fold(csum_add(s, r + 34, 8 + PAYLOAD)) == 0xffff;
}

static uint64_t wait_comp(unsigned int reg)
{
	uint64_t c, t0 = rdcycle();

	while (!((c = mmio_r64(SOC_NIC + reg)) >> 63))
		if (rdcycle() - t0 > 2000000)
			return 0;
	return c;
}

int main(void)
{
	uint64_t c, sc, t_send, t_recv, t0, t1;
	uint8_t *tx = txbuf[0] + 3, *rx = rxbuf[0] + 5;
	unsigned int k, ok;

	puts_("test_nic: hart 0 up\n");
	check((mmio_r64(SOC_NIC + ACCIO_NIC_ID) & 0xffffffff) == 0x4143494f, "1 the NIC answers with its ID");
	check(mmio_r64(SOC_NIC + ACCIO_NIC_MACADDR) == 0x020000000002ull, "1 the station MAC out of reset");
	check(mmio_r64(SOC_NIC + ACCIO_NIC_STATUS) == 1, "1 the link is up");
	mmio_w64(SOC_NIC + ACCIO_NIC_CTRL, ACCIO_NIC_CTRL_ENABLE_MASK | ACCIO_NIC_CTRL_RXCSUM_MASK);
	mmio_w64(SOC_NIC + ACCIO_NIC_INTR_MASK, ACCIO_NIC_INTR_MASK_RX_MASK);
	check(!(mmio_r32(SOC_PLIC + 0x1000) >> SOC_IRQ_NIC(1) & 1), "3 no NIC interrupt pending yet");

	/* 2: odd addresses both ways, checksums by the NIC */
	build(tx, 0);
	mmio_w64(SOC_NIC + ACCIO_NIC_RECV_REQ, (uintptr_t)rx);
	fence();
	mmio_w64(SOC_NIC + ACCIO_NIC_SEND_REQ, (uintptr_t)tx | (uint64_t)FLEN << 48 |
		 ACCIO_NIC_SEND_REQ_CSUM_MASK);
	c = wait_comp(ACCIO_NIC_RECV_COMP);
	check((c & 0xffff) == FLEN && (c & ACCIO_NIC_RECV_COMP_CSUM_OK_MASK),
	      "2 the echo completes with its length and CSUM_OK");
	check(echo_ok(tx, rx), "2 every byte of the echo, the checksums filled in");
	check(rx[-1] == 0 && rx[FLEN] == 0, "2 nothing beside the buffer written");
	check(mmio_r32(SOC_PLIC + 0x1000) >> SOC_IRQ_NIC(1) & 1, "3 the receive interrupt is pending at the PLIC");
	sc = mmio_r64(SOC_NIC + ACCIO_NIC_SEND_COMP);
	check(sc == (1ull << 63 | FLEN), "2 the send completes");
	t_send = mmio_r64(SOC_NIC + ACCIO_NIC_SEND_TSTAMP);
	t_recv = mmio_r64(SOC_NIC + ACCIO_NIC_RECV_TSTAMP);
	check(t_send && t_recv > t_send, "3 the receive stamp follows the send stamp");
	putnum("wire_rtt_ns", t_recv - t_send);
	check(mmio_r64(SOC_NIC + ACCIO_NIC_TX_CSUM) == 1 && mmio_r64(SOC_NIC + ACCIO_NIC_RX_CSUM_OK) == 1,
	      "2 both offloads counted");

	/* 4: round trips, aligned buffers, each checked */
	ok = 0;
	t0 = rdcycle();
	for (k = 1; k <= ROUNDS; k++) {
		uint8_t *t = txbuf[k & 3], *r = rxbuf[k & 3];

		build(t, k);
		r[0] = 0;
		mmio_w64(SOC_NIC + ACCIO_NIC_RECV_REQ, (uintptr_t)r);
		fence();
		mmio_w64(SOC_NIC + ACCIO_NIC_SEND_REQ, (uintptr_t)t | (uint64_t)FLEN << 48 |
			 ACCIO_NIC_SEND_REQ_CSUM_MASK);
		c = wait_comp(ACCIO_NIC_RECV_COMP);
		ok += (c & 0xffff) == FLEN && echo_ok(t, r) && mmio_r64(SOC_NIC + ACCIO_NIC_SEND_COMP) >> 63;
	}
	t1 = rdcycle();
	check(ok == ROUNDS, "4 every round trip's echo, byte for byte");
	putnum("cycles_per_round_trip", (t1 - t0) / ROUNDS);
	check(mmio_r64(SOC_NIC + ACCIO_NIC_RX_FRAMES) == ROUNDS + 1 &&
	      mmio_r64(SOC_NIC + ACCIO_NIC_TX_FRAMES) == ROUNDS + 1, "4 the frame counters");
	check(mmio_r64(SOC_NIC + ACCIO_NIC_COUNTS) == (64ull << 16 | 64), "4 every request answered");

	/* 5: ARP and ping, as Linux's stack would send them */
	{
		static const uint8_t arp[42] = {
			0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 0x02, 0x08, 0x06,
			0, 1, 0x08, 0, 6, 4, 0, 1, 0x02, 0, 0, 0, 0, 0x02, 10, 0, 2, 15,
			0, 0, 0, 0, 0, 0, 10, 0, 2, 2 };
		static const uint8_t peer[6] = { 0x02, 0xac, 0xc1, 0x0e, 0xc4, 0x00 };
		uint8_t *t = txbuf[0], *r = rxbuf[0];
		unsigned int i, same = 1, tot;

		for (i = 0; i < 42; i++)
			t[i] = arp[i];
		mmio_w64(SOC_NIC + ACCIO_NIC_RECV_REQ, (uintptr_t)r);
		fence();
		mmio_w64(SOC_NIC + ACCIO_NIC_SEND_REQ, (uintptr_t)t | 42ull << 48);
		c = wait_comp(ACCIO_NIC_RECV_COMP);
		for (i = 0; i < 6; i++)
			same &= r[i] == arp[6 + i] && r[6 + i] == peer[i] && r[22 + i] == peer[i] &&
				r[32 + i] == arp[22 + i];
		check((c & 0xffff) == 60 && r[12] == 0x08 && r[13] == 0x06 && r[21] == 2 && same &&
		      r[28] == 10 && r[31] == 2 && r[38] == 10 && r[41] == 15,
		      "5 the peer answers who has 10.0.2.2 with its address");
		mmio_r64(SOC_NIC + ACCIO_NIC_SEND_COMP);

		/* an ICMP echo request with 20 bytes of data (the NIC's checksum
		 * offload is for TCP and UDP: both checksums in software) */
		build(t, 99);
		t[23] = 1;
		t[16] = 0;
		t[17] = 20 + 8 + 20;
		t[34] = 8; t[35] = 0; t[36] = t[37] = 0; t[38] = 0x12; t[39] = 0x34;
		t[40] = 0; t[41] = 1;
		for (i = 42; i < 62; i++)
			t[i] = (uint8_t)i;
		{
			unsigned int sum = fold(csum_add(0, t + 34, 28));

			t[36] = (uint8_t)(~sum >> 8);
			t[37] = (uint8_t)~sum;
			sum = fold(csum_add(0, t + 14, 20));
			t[24] = (uint8_t)(~sum >> 8);
			t[25] = (uint8_t)~sum;
		}
		mmio_w64(SOC_NIC + ACCIO_NIC_RECV_REQ, (uintptr_t)r);
		fence();
		mmio_w64(SOC_NIC + ACCIO_NIC_SEND_REQ, (uintptr_t)t | 62ull << 48);
		c = wait_comp(ACCIO_NIC_RECV_COMP);
		tot = r[16] << 8 | r[17];
		same = tot == 48 && r[23] == 1 && r[34] == 0 && r[38] == 0x12 && r[39] == 0x34 &&
		       r[26] == 10 && r[29] == 2 && r[30] == 10 && r[33] == 15;
		for (i = 42; i < 62; i++)
			same &= r[i] == (uint8_t)i;
		check((c & 0xffff) == 62 && same && fold(csum_add(0, r + 14, 20)) == 0xffff &&
		      fold(csum_add(0, r + 34, 28)) == 0xffff,
		      "5 the peer answers a ping, every byte of its data back");
		mmio_r64(SOC_NIC + ACCIO_NIC_SEND_COMP);
	}
	putnum("failures", failures);
	return failures ? 1 : 0;
}
#else
int main(void)
{
	puts_("test_nic: this SoC has no NIC in front of the uncore\n");
	return 2;
}
#endif
