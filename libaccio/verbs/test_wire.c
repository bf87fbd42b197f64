// SPDX-License-Identifier: MIT
/*
 * The accio verbs provider's wire format on the host (make -C
 * libaccio/verbs test): UD SEND headers built and parsed back for every
 * pad count, with and without ImmDt, one datagram byte for byte, what the
 * parser refuses, the GRH of an IPv4 datagram, IPv4-mapped GIDs; RC packets (SEND, RDMA WRITE, ACK) built and parsed
 * back, one RDMA WRITE ONLY and one ACK byte for byte, and PSN distances
 * across the 24-bit wrap.
 */
#include <stdio.h>
#include <stdlib.h>

#include "accio_wire.h"

static int failures;

#define CHECK(cond)                                                            \
	do {                                                                   \
		if (!(cond)) {                                                 \
			fprintf(stderr, "%s:%d: %s\n", __FILE__, __LINE__,     \
				#cond);                                        \
			failures++;                                            \
		}                                                              \
	} while (0)

/* Build a UD SEND of paylen bytes (payload bytes i * 7 + 1) into buf. */
static size_t build(uint8_t *buf, const struct accio_ud_hdr *h, size_t paylen)
{
	size_t n = accio_ud_build(buf, h, paylen), i;

	for (i = 0; i < paylen; i++)
		buf[n + i] = (uint8_t)(i * 7 + 1);
	n += paylen;
	return n + accio_ud_trailer(buf + n, paylen);
}

static void round_trips(void)
{
	static const uint8_t ops[] = { ACCIO_OP_UD_SEND_ONLY, ACCIO_OP_UD_SEND_ONLY_IMM };
	uint8_t buf[2048];
	size_t o, paylen, i;

	for (o = 0; o < sizeof(ops); o++) {
		for (paylen = 0; paylen <= 1024; paylen += (paylen < 16 ? 1 : 251)) {
			struct accio_ud_hdr h = {
				.opcode = ops[o], .se = (uint8_t)(paylen & 1),
				.pkey = ACCIO_PKEY_DEFAULT, .dqpn = 0x00abcdef,
				.psn = (uint32_t)(0xfffff0 + paylen), .qkey = 0x80010000u + (uint32_t)paylen,
				.sqpn = 0x000011, .imm = { 0xde, 0xad, 0xbe, (uint8_t)paylen },
			};
			struct accio_ud_hdr g = { 0 };
			size_t n = build(buf, &h, paylen), off = 0, len = 0;
			size_t hl = ops[o] == ACCIO_OP_UD_SEND_ONLY_IMM ? 24 : 20;
			unsigned int pad = (4 - paylen % 4) % 4;

			CHECK(n == accio_ud_bytes(ops[o], paylen));
			CHECK(n == hl + paylen + pad + 4);
			CHECK(n % 4 == 0);
			CHECK(accio_ud_hdr_bytes(ops[o]) == hl);
			/* BTH and DETH fields, as rxe reads them */
			CHECK(buf[0] == ops[o]);
			CHECK(((buf[1] >> 4) & 3) == pad);
			CHECK((buf[1] & 0x4f) == 0);		/* M 0, TVer 0 */
			CHECK((buf[1] >> 7) == (paylen & 1));
			CHECK(buf[2] == 0xff && buf[3] == 0xff && buf[4] == 0);
			CHECK(buf[5] == 0xab && buf[6] == 0xcd && buf[7] == 0xef);
			CHECK(buf[8] == 0);			/* AckReq 0 */
			CHECK(accio_get_be24(buf + 9) == ((0xfffff0 + paylen) & 0xffffff));
			CHECK(accio_get_be32(buf + 12) == 0x80010000u + paylen);
			CHECK(buf[16] == 0 && accio_get_be24(buf + 17) == 0x11);
			/* rxe's payload_size(): paylen - header - pad - ICRC */
			CHECK(n - hl - ((buf[1] >> 4) & 3) - 4 == paylen);
			for (i = 0; i < pad + 4; i++)
				CHECK(buf[hl + paylen + i] == 0);

			CHECK(accio_ud_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_OK);
			CHECK(off == hl && len == paylen);
			CHECK(g.opcode == h.opcode && g.se == h.se && g.pkey == h.pkey);
			CHECK(g.dqpn == h.dqpn && g.psn == (h.psn & ACCIO_PSN_MASK) && g.qkey == h.qkey);
			CHECK(g.sqpn == h.sqpn);
			if (ops[o] == ACCIO_OP_UD_SEND_ONLY_IMM)
				CHECK(!memcmp(g.imm, h.imm, 4) && !memcmp(buf + 20, h.imm, 4));
			for (i = 0; i < paylen; i++)
				CHECK(buf[off + i] == (uint8_t)(i * 7 + 1));
			/* one byte less: one payload byte less, or too short */
			CHECK(accio_ud_parse(buf, n - 1, &g, &off, &len) ==
			      (paylen ? ACCIO_PARSE_OK : ACCIO_PARSE_SHORT));
			CHECK(!paylen || len == paylen - 1);
		}
	}
}

/* One datagram byte for byte. */
static void golden(void)
{
	static const uint8_t want[] = {
		0x64, 0xb0, 0xff, 0xff, 0x00, 0x12, 0x34, 0x56,	/* BTH: SE, pad 3 */
		0x00, 0xab, 0xcd, 0xef,
		0x11, 0x22, 0x33, 0x44, 0x00, 0x00, 0x00, 0x42,	/* DETH */
		0x01, 0x08, 0x0f, 0x16, 0x1d,			/* payload */
		0x00, 0x00, 0x00,				/* pad */
		0x00, 0x00, 0x00, 0x00,				/* ICRC slot */
	};
	static const uint8_t want_imm[] = {
		0x65, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x02,	/* BTH: pad 0 */
		0x00, 0x00, 0x00, 0x07,
		0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x03,	/* DETH */
		0x0a, 0x0b, 0x0c, 0x0d,				/* ImmDt */
		0x01, 0x08, 0x0f, 0x16,				/* payload */
		0x00, 0x00, 0x00, 0x00,				/* ICRC slot */
	};
	struct accio_ud_hdr h = {
		.opcode = ACCIO_OP_UD_SEND_ONLY, .se = 1, .pkey = 0xffff, .dqpn = 0x123456,
		.psn = 0xabcdef, .qkey = 0x11223344, .sqpn = 0x42,
	};
	struct accio_ud_hdr hi = {
		.opcode = ACCIO_OP_UD_SEND_ONLY_IMM, .pkey = 0xffff, .dqpn = 2, .psn = 7,
		.qkey = 1, .sqpn = 3, .imm = { 0x0a, 0x0b, 0x0c, 0x0d },
	};
	uint8_t buf[64];

	memset(buf, 0xee, sizeof(buf));
	CHECK(build(buf, &h, 5) == sizeof(want));
	CHECK(!memcmp(buf, want, sizeof(want)));
	memset(buf, 0xee, sizeof(buf));
	CHECK(build(buf, &hi, 4) == sizeof(want_imm));
	CHECK(!memcmp(buf, want_imm, sizeof(want_imm)));
}

static void refusals(void)
{
	struct accio_ud_hdr h = {
		.opcode = ACCIO_OP_UD_SEND_ONLY, .pkey = 0xffff, .dqpn = 5, .qkey = 9, .sqpn = 6,
	};
	struct accio_ud_hdr g = { 0 };
	uint8_t buf[64];
	size_t n = build(buf, &h, 8), off = 0, len = 0;

	CHECK(n == 32);
	CHECK(accio_ud_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_OK && len == 8);
	CHECK(accio_ud_parse(buf, 11, &g, &off, &len) == ACCIO_PARSE_SHORT);
	CHECK(accio_ud_parse(buf, 23, &g, &off, &len) == ACCIO_PARSE_SHORT);
	CHECK(accio_ud_parse(buf, 24, &g, &off, &len) == ACCIO_PARSE_OK && len == 0);
	buf[1] = 3 << 4;		/* pad 3 on a 4-byte datagram body: too short */
	CHECK(accio_ud_parse(buf, 24, &g, &off, &len) == ACCIO_PARSE_SHORT);
	CHECK(accio_ud_parse(buf, 27, &g, &off, &len) == ACCIO_PARSE_OK && len == 0);
	buf[1] = 0;
	buf[0] = 0x04;			/* RC SEND_ONLY */
	CHECK(accio_ud_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_OPCODE);
	buf[0] = 0x6a;			/* UD, not a SEND_ONLY */
	CHECK(accio_ud_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_OPCODE);
	buf[0] = ACCIO_OP_UD_SEND_ONLY;
	buf[1] = 1;			/* TVer 1 */
	CHECK(accio_ud_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_HDR);
	buf[1] = 0;
	buf[2] = 0x00;			/* P_Key 0x00ff: another partition */
	CHECK(accio_ud_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_HDR);
	buf[2] = 0x7f;			/* 0x7fff: a limited member of the default one */
	CHECK(accio_ud_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_OK);
	CHECK(accio_ud_parse(buf, 0, &g, &off, &len) == ACCIO_PARSE_SHORT);
}

static void grh(void)
{
	uint8_t g[ACCIO_GRH_BYTES], zero[20] = { 0 };
	uint32_t s = htonl(0x0a000301), d = htonl(0x0a000302);
	const uint8_t *ip = g + 20;

	accio_grh_ipv4(g, s, d, 32);
	CHECK(!memcmp(g, zero, 20));
	CHECK(ip[0] == 0x45 && ip[1] == 0);
	CHECK(accio_get_be16(ip + 2) == 60);		/* 20 IPv4 + 8 UDP + 32 */
	CHECK(accio_get_be16(ip + 4) == 0 && accio_get_be16(ip + 6) == 0);
	CHECK(ip[8] == 64 && ip[9] == 17);
	CHECK(accio_get_be16(ip + 10) == 0x60af);	/* computed independently */
	CHECK(accio_ip_csum(ip, 20) == 0);		/* a valid header sums to 0xffff */
	CHECK(ip[12] == 10 && ip[13] == 0 && ip[14] == 3 && ip[15] == 1);
	CHECK(ip[16] == 10 && ip[17] == 0 && ip[18] == 3 && ip[19] == 2);
	/* libibverbs takes a GRH whose first word is not IPv6's for IPv4 */
	CHECK((g[0] >> 4) != 6 && (ip[0] >> 4) == 4);
}

static void gids(void)
{
	uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 2, 15 };
	uint8_t v6[16] = { 0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0x50, 0x54, 0, 0xff, 0xfe, 0x12, 0x34, 0x56 };
	uint32_t a = 0;

	CHECK(accio_gid_ipv4(v4, &a) && a == htonl(0x0a00020f));
	CHECK(!accio_gid_ipv4(v6, &a));
	v4[10] = 0;
	CHECK(!accio_gid_ipv4(v4, &a));
}

static void rc(void)
{
	static const uint8_t ops[] = {
		ACCIO_OP_RC_SEND_FIRST, ACCIO_OP_RC_SEND_MIDDLE, ACCIO_OP_RC_SEND_LAST,
		ACCIO_OP_RC_SEND_LAST_IMM, ACCIO_OP_RC_SEND_ONLY, ACCIO_OP_RC_SEND_ONLY_IMM,
		ACCIO_OP_RC_WRITE_FIRST, ACCIO_OP_RC_WRITE_MIDDLE, ACCIO_OP_RC_WRITE_LAST,
		ACCIO_OP_RC_WRITE_LAST_IMM, ACCIO_OP_RC_WRITE_ONLY, ACCIO_OP_RC_WRITE_ONLY_IMM,
		ACCIO_OP_RC_ACK,
	};
	static const uint8_t write_only[] = {
		0x0a, 0x10, 0xff, 0xff, 0x00, 0x40, 0x00, 0x01, 0x80, 0x12, 0x34, 0x56,
		0x00, 0x00, 0xaa, 0xaa, 0xbf, 0x50, 0x30, 0x00, 0x00, 0x00, 0x01, 0x00,
		0x00, 0x00, 0x00, 0x03, 'a', 'b', 'c', 0, 0, 0, 0, 0,
	};
	static const uint8_t ack[] = {
		0x11, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x11, 0x00, 0xff, 0xff, 0xff,
		0x60, 0x00, 0x00, 0x07, 0, 0, 0, 0,
	};
	uint8_t buf[2048];
	size_t o, paylen;

	for (o = 0; o < sizeof(ops); o++) {
		for (paylen = 0; paylen <= 1024; paylen += (paylen < 8 ? 1 : 509)) {
			struct accio_rc_hdr h = {
				.opcode = ops[o], .se = 1, .ackreq = (uint8_t)(paylen & 1),
				.dqpn = 0x400001, .psn = 0xfffffe, .va = 0x0000aaaabbbbcccc,
				.rkey = 0x1200, .dmalen = 4096, .syndrome = 0x1f, .msn = 77,
				.imm = { 1, 2, 3, 4 },
			};
			struct accio_rc_hdr g;
			size_t n = accio_rc_build(buf, &h, paylen), off = 0, len = 0;

			if (ops[o] == ACCIO_OP_RC_ACK && paylen)
				continue;
			memset(buf + n, 0x5a, paylen);
			n += paylen;
			n += accio_ud_trailer(buf + n, paylen);
			CHECK(n == accio_rc_bytes(ops[o], paylen));
			CHECK(n % 4 == 0);
			CHECK(accio_rc_parse(buf, n, &g, &off, &len) == ACCIO_PARSE_OK);
			CHECK(off == accio_rc_hdr_bytes(ops[o]) && len == paylen);
			CHECK(g.opcode == ops[o] && g.dqpn == h.dqpn && g.psn == h.psn);
			CHECK(g.ackreq == h.ackreq && g.se == 1);
			if (accio_rc_has_reth(ops[o]))
				CHECK(g.va == h.va && g.rkey == h.rkey && g.dmalen == h.dmalen);
			else
				CHECK(g.va == 0 && g.rkey == 0);
			if (accio_rc_has_imm(ops[o]))
				CHECK(!memcmp(g.imm, h.imm, 4));
			if (ops[o] == ACCIO_OP_RC_ACK)
				CHECK(g.syndrome == 0x1f && g.msn == 77);
			CHECK(accio_rc_parse(buf, n - 1, &g, &off, &len) == ACCIO_PARSE_SHORT ||
			      (n - 1) >= accio_rc_hdr_bytes(ops[o]) + 4);
		}
	}
	/* RDMA WRITE ONLY of "abc" to 0xaaaabf503000, R_Key 0x100, PSN 0x123456 */
	{
		struct accio_rc_hdr h = {
			.opcode = ACCIO_OP_RC_WRITE_ONLY, .ackreq = 1, .dqpn = 0x400001,
			.psn = 0x123456, .va = 0xaaaabf503000ull, .rkey = 0x100, .dmalen = 3,
		};
		size_t n = accio_rc_build(buf, &h, 3);

		memcpy(buf + n, "abc", 3);
		n += 3;
		n += accio_ud_trailer(buf + n, 3);
		CHECK(n == sizeof(write_only) && !memcmp(buf, write_only, n));
	}
	/* a NAK (PSN sequence error) at PSN 0xffffff, MSN 7, to QP 0x11 */
	{
		struct accio_rc_hdr h = {
			.opcode = ACCIO_OP_RC_ACK, .dqpn = 0x11, .psn = 0xffffff,
			.syndrome = ACCIO_AETH_NAK_SEQ, .msn = 7,
		};
		size_t n = accio_rc_build(buf, &h, 0);

		n += accio_ud_trailer(buf + n, 0);
		CHECK(n == sizeof(ack) && !memcmp(buf, ack, n));
	}
	/* UD, UC and atomic opcodes are not this parser's */
	{
		struct accio_rc_hdr g;
		size_t off, len;

		memcpy(buf, ack, sizeof(ack));
		buf[0] = 0x64;
		CHECK(accio_rc_parse(buf, sizeof(ack), &g, &off, &len) == ACCIO_PARSE_OPCODE);
		buf[0] = 0x24;
		CHECK(accio_rc_parse(buf, sizeof(ack), &g, &off, &len) == ACCIO_PARSE_OPCODE);
		buf[0] = 0x13;
		CHECK(accio_rc_parse(buf, sizeof(ack), &g, &off, &len) == ACCIO_PARSE_OPCODE);
		buf[0] = 0x11;
		buf[2] = 0x00;	/* another partition */
		CHECK(accio_rc_parse(buf, sizeof(ack), &g, &off, &len) == ACCIO_PARSE_HDR);
	}
	CHECK(accio_psn_diff(0x000001, 0xffffff) == 2);
	CHECK(accio_psn_diff(0xffffff, 0x000001) == -2);
	CHECK(accio_psn_diff(0x123456, 0x123456) == 0);
	CHECK(accio_psn_diff(0x7fffff, 0) == 0x7fffff);
}

int main(void)
{
	round_trips();
	rc();
	golden();
	refusals();
	grh();
	gids();
	if (failures) {
		fprintf(stderr, "test_wire: %d failed\n", failures);
		return 1;
	}
	printf("test_wire: ok\n");
	return 0;
}
