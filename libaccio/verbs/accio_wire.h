/* SPDX-License-Identifier: MIT */
/*
 * The RoCEv2 wire format of the accio verbs provider: what goes into the
 * UDP payload of a datagram to port 4791 (the engine builds the Ethernet,
 * IPv4 and UDP headers and, on a row accelerated with ACCIO_ACCEL_ROCE,
 * fills in and checks the ICRC), and the 40-byte GRH a UD receive gets.
 * Plain C with no libibverbs dependency, so that the host can test it
 * (test_wire.c).
 *
 *   BTH   12 bytes  opcode, SE|M|PadCnt|TVer, P_Key, reserved, dest QPN (24),
 *                   AckReq|reserved, PSN (24)
 *   DETH   8 bytes  Q_Key, reserved, source QPN (24)
 *   ImmDt  4 bytes  only for SEND_ONLY_WITH_IMMEDIATE
 *   payload, PadCnt zero bytes up to a multiple of 4, 4 ICRC bytes
 *
 * All fields big endian.
 */
#ifndef ACCIO_WIRE_H
#define ACCIO_WIRE_H

#include <arpa/inet.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <linux/accio_contract.h>	/* ACCIO_ROCE_PORT */

#define ACCIO_BTH_BYTES		12
#define ACCIO_DETH_BYTES	8
#define ACCIO_IMMDT_BYTES	4
#define ACCIO_ICRC_BYTES	4
#define ACCIO_GRH_BYTES		40
/* IPv4 + UDP headers in front of the UDP payload on the wire */
#define ACCIO_IP_UDP_BYTES	28

#define ACCIO_OP_UD_SEND_ONLY		0x64
#define ACCIO_OP_UD_SEND_ONLY_IMM	0x65

#define ACCIO_PKEY_DEFAULT	0xffff
#define ACCIO_QPN_MASK		0xffffff
#define ACCIO_PSN_MASK		0xffffff

/* The fields of a UD SEND's headers. */
struct accio_ud_hdr {
	uint8_t opcode;		/* ACCIO_OP_UD_SEND_ONLY or _IMM */
	uint8_t se;		/* solicited event */
	uint16_t pkey;
	uint32_t dqpn;		/* destination QP */
	uint32_t psn;
	uint32_t qkey;
	uint32_t sqpn;		/* source QP */
	uint8_t imm[4];		/* ImmDt as on the wire (network order) */
};

static inline void accio_put_be16(uint8_t *p, uint16_t v)
{
	p[0] = v >> 8;
	p[1] = v;
}

static inline void accio_put_be24(uint8_t *p, uint32_t v)
{
	p[0] = v >> 16;
	p[1] = v >> 8;
	p[2] = v;
}

static inline void accio_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

static inline uint16_t accio_get_be16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t accio_get_be24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t accio_get_be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* Bytes of BTH, DETH and (for _IMM) ImmDt. */
static inline size_t accio_ud_hdr_bytes(uint8_t opcode)
{
	return ACCIO_BTH_BYTES + ACCIO_DETH_BYTES +
	       (opcode == ACCIO_OP_UD_SEND_ONLY_IMM ? ACCIO_IMMDT_BYTES : 0);
}

static inline unsigned int accio_pad(size_t paylen)
{
	return (unsigned int)(-paylen & 3);
}

/* The UDP payload length of a UD SEND carrying paylen bytes. */
static inline size_t accio_ud_bytes(uint8_t opcode, size_t paylen)
{
	return accio_ud_hdr_bytes(opcode) + paylen + accio_pad(paylen) + ACCIO_ICRC_BYTES;
}

/*
 * Write the headers for a payload of paylen bytes at p; the payload goes
 * right after them (at p + the returned length), then accio_ud_trailer().
 */
static inline size_t accio_ud_build(uint8_t *p, const struct accio_ud_hdr *h, size_t paylen)
{
	p[0] = h->opcode;
	p[1] = (uint8_t)((h->se ? 0x80 : 0) | accio_pad(paylen) << 4);	/* M 0, TVer 0 */
	accio_put_be16(p + 2, h->pkey);
	p[4] = 0;
	accio_put_be24(p + 5, h->dqpn & ACCIO_QPN_MASK);
	p[8] = 0;						/* AckReq 0 */
	accio_put_be24(p + 9, h->psn & ACCIO_PSN_MASK);
	accio_put_be32(p + 12, h->qkey);
	p[16] = 0;
	accio_put_be24(p + 17, h->sqpn & ACCIO_QPN_MASK);
	if (h->opcode == ACCIO_OP_UD_SEND_ONLY_IMM) {
		memcpy(p + 20, h->imm, 4);
		return 24;
	}
	return 20;
}

/* The pad bytes and the (zero) ICRC slot after a payload of paylen bytes. */
static inline size_t accio_ud_trailer(uint8_t *end, size_t paylen)
{
	size_t n = accio_pad(paylen) + ACCIO_ICRC_BYTES;

	memset(end, 0, n);
	return n;
}

/* Why a datagram is not a UD SEND this provider takes. */
enum {
	ACCIO_PARSE_OK = 0,
	ACCIO_PARSE_SHORT = -1,		/* shorter than its headers, pad and ICRC */
	ACCIO_PARSE_OPCODE = -2,	/* not UD SEND_ONLY (with or without ImmDt) */
	ACCIO_PARSE_HDR = -3,		/* transport version or P_Key */
};

static inline int accio_pkey_ok(uint16_t pkey)
{
	/* the default partition; the QP is a full member, so either kind of sender */
	return (pkey & 0x7fff) == 0x7fff;
}

/*
 * Parse the UDP payload p of len bytes (ICRC included). On success fill h
 * and the payload's offset and length (without pad and ICRC).
 */
static inline int accio_ud_parse(const uint8_t *p, size_t len, struct accio_ud_hdr *h,
				 size_t *payoff, size_t *paylen)
{
	size_t hl, pad;

	if (len < ACCIO_BTH_BYTES)
		return ACCIO_PARSE_SHORT;
	h->opcode = p[0];
	if (h->opcode != ACCIO_OP_UD_SEND_ONLY && h->opcode != ACCIO_OP_UD_SEND_ONLY_IMM)
		return ACCIO_PARSE_OPCODE;
	hl = accio_ud_hdr_bytes(h->opcode);
	pad = (p[1] >> 4) & 3;
	if (len < hl + pad + ACCIO_ICRC_BYTES)
		return ACCIO_PARSE_SHORT;
	if ((p[1] & 0xf) != 0)
		return ACCIO_PARSE_HDR;
	h->se = p[1] >> 7;
	h->pkey = accio_get_be16(p + 2);
	if (!accio_pkey_ok(h->pkey))
		return ACCIO_PARSE_HDR;
	h->dqpn = accio_get_be24(p + 5);
	h->psn = accio_get_be24(p + 9);
	h->qkey = accio_get_be32(p + 12);
	h->sqpn = accio_get_be24(p + 17);
	if (h->opcode == ACCIO_OP_UD_SEND_ONLY_IMM)
		memcpy(h->imm, p + 20, 4);
	else
		memset(h->imm, 0, 4);
	*payoff = hl;
	*paylen = len - hl - pad - ACCIO_ICRC_BYTES;
	return ACCIO_PARSE_OK;
}

/* ---- reliable connected (RC) packets ----------------------------------- */

/*
 *   BTH   12 bytes  as above; AckReq set on the last packet of a message
 *   RETH  16 bytes  virtual address (64), R_Key, DMA length: RDMA WRITE
 *                   FIRST and ONLY
 *   ImmDt  4 bytes  SEND and RDMA WRITE LAST/ONLY with immediate
 *   AETH   4 bytes  syndrome (8), MSN (24): ACKNOWLEDGE
 *   payload, pad, ICRC
 */
#define ACCIO_RETH_BYTES	16
#define ACCIO_AETH_BYTES	4

#define ACCIO_OP_RC_SEND_FIRST		0x00
#define ACCIO_OP_RC_SEND_MIDDLE		0x01
#define ACCIO_OP_RC_SEND_LAST		0x02
#define ACCIO_OP_RC_SEND_LAST_IMM	0x03
#define ACCIO_OP_RC_SEND_ONLY		0x04
#define ACCIO_OP_RC_SEND_ONLY_IMM	0x05
#define ACCIO_OP_RC_WRITE_FIRST		0x06
#define ACCIO_OP_RC_WRITE_MIDDLE	0x07
#define ACCIO_OP_RC_WRITE_LAST		0x08
#define ACCIO_OP_RC_WRITE_LAST_IMM	0x09
#define ACCIO_OP_RC_WRITE_ONLY		0x0a
#define ACCIO_OP_RC_WRITE_ONLY_IMM	0x0b
#define ACCIO_OP_RC_READ_REQUEST	0x0c
#define ACCIO_OP_RC_ACK			0x11

/* AETH syndromes */
#define ACCIO_AETH_ACK		0x1f	/* ACK; credits not counted */
#define ACCIO_AETH_RNR_NAK	0x20	/* | the RNR timer code (5 bits) */
#define ACCIO_AETH_NAK_SEQ	0x60	/* PSN sequence error */
#define ACCIO_AETH_NAK_INV	0x61	/* invalid request */
#define ACCIO_AETH_NAK_ACCESS	0x62	/* remote access error */

struct accio_rc_hdr {
	uint8_t opcode;
	uint8_t se;
	uint8_t ackreq;
	uint32_t dqpn;
	uint32_t psn;
	uint64_t va;		/* RETH */
	uint32_t rkey;
	uint32_t dmalen;
	uint8_t syndrome;	/* AETH */
	uint32_t msn;
	uint8_t imm[4];		/* ImmDt as on the wire (network order) */
};

static inline int accio_rc_has_reth(uint8_t op)
{
	return op == ACCIO_OP_RC_WRITE_FIRST || op == ACCIO_OP_RC_WRITE_ONLY ||
	       op == ACCIO_OP_RC_WRITE_ONLY_IMM;
}

static inline int accio_rc_has_imm(uint8_t op)
{
	return op == ACCIO_OP_RC_SEND_LAST_IMM || op == ACCIO_OP_RC_SEND_ONLY_IMM ||
	       op == ACCIO_OP_RC_WRITE_LAST_IMM || op == ACCIO_OP_RC_WRITE_ONLY_IMM;
}

/* The last (or only) packet of a message. */
static inline int accio_rc_is_last(uint8_t op)
{
	return op == ACCIO_OP_RC_SEND_LAST || op == ACCIO_OP_RC_SEND_LAST_IMM ||
	       op == ACCIO_OP_RC_SEND_ONLY || op == ACCIO_OP_RC_SEND_ONLY_IMM ||
	       op == ACCIO_OP_RC_WRITE_LAST || op == ACCIO_OP_RC_WRITE_LAST_IMM ||
	       op == ACCIO_OP_RC_WRITE_ONLY || op == ACCIO_OP_RC_WRITE_ONLY_IMM;
}

static inline int accio_rc_is_send(uint8_t op)
{
	return op <= ACCIO_OP_RC_SEND_ONLY_IMM;
}

static inline int accio_rc_is_write(uint8_t op)
{
	return op >= ACCIO_OP_RC_WRITE_FIRST && op <= ACCIO_OP_RC_WRITE_ONLY_IMM;
}

/* The first (or only) packet of a message. */
static inline int accio_rc_is_first(uint8_t op)
{
	return op == ACCIO_OP_RC_SEND_FIRST || op == ACCIO_OP_RC_SEND_ONLY ||
	       op == ACCIO_OP_RC_SEND_ONLY_IMM || op == ACCIO_OP_RC_WRITE_FIRST ||
	       op == ACCIO_OP_RC_WRITE_ONLY || op == ACCIO_OP_RC_WRITE_ONLY_IMM;
}

static inline size_t accio_rc_hdr_bytes(uint8_t op)
{
	return ACCIO_BTH_BYTES + (accio_rc_has_reth(op) ? ACCIO_RETH_BYTES : 0) +
	       (accio_rc_has_imm(op) ? ACCIO_IMMDT_BYTES : 0) +
	       (op == ACCIO_OP_RC_ACK ? ACCIO_AETH_BYTES : 0);
}

/* The UDP payload length of an RC packet carrying paylen bytes. */
static inline size_t accio_rc_bytes(uint8_t op, size_t paylen)
{
	return accio_rc_hdr_bytes(op) + paylen + accio_pad(paylen) + ACCIO_ICRC_BYTES;
}

/* Write the headers at p (the payload follows, then accio_ud_trailer()). */
static inline size_t accio_rc_build(uint8_t *p, const struct accio_rc_hdr *h, size_t paylen)
{
	size_t n = ACCIO_BTH_BYTES;

	p[0] = h->opcode;
	p[1] = (uint8_t)((h->se ? 0x80 : 0) | accio_pad(paylen) << 4);
	accio_put_be16(p + 2, ACCIO_PKEY_DEFAULT);
	p[4] = 0;
	accio_put_be24(p + 5, h->dqpn & ACCIO_QPN_MASK);
	p[8] = h->ackreq ? 0x80 : 0;
	accio_put_be24(p + 9, h->psn & ACCIO_PSN_MASK);
	if (accio_rc_has_reth(h->opcode)) {
		accio_put_be32(p + n, (uint32_t)(h->va >> 32));
		accio_put_be32(p + n + 4, (uint32_t)h->va);
		accio_put_be32(p + n + 8, h->rkey);
		accio_put_be32(p + n + 12, h->dmalen);
		n += ACCIO_RETH_BYTES;
	}
	if (accio_rc_has_imm(h->opcode)) {
		memcpy(p + n, h->imm, 4);
		n += ACCIO_IMMDT_BYTES;
	}
	if (h->opcode == ACCIO_OP_RC_ACK) {
		p[n] = h->syndrome;
		accio_put_be24(p + n + 1, h->msn & ACCIO_QPN_MASK);
		n += ACCIO_AETH_BYTES;
	}
	return n;
}

/*
 * Parse an RC packet (UDP payload p of len bytes, ICRC included): SEND,
 * RDMA WRITE, RDMA READ request and ACKNOWLEDGE headers. ACCIO_PARSE_OPCODE
 * for any other opcode (UD, UC, atomics, ...).
 */
static inline int accio_rc_parse(const uint8_t *p, size_t len, struct accio_rc_hdr *h,
				 size_t *payoff, size_t *paylen)
{
	size_t hl, pad, n = ACCIO_BTH_BYTES;

	if (len < ACCIO_BTH_BYTES)
		return ACCIO_PARSE_SHORT;
	memset(h, 0, sizeof(*h));
	h->opcode = p[0];
	if (h->opcode > ACCIO_OP_RC_READ_REQUEST && h->opcode != ACCIO_OP_RC_ACK)
		return ACCIO_PARSE_OPCODE;
	hl = h->opcode == ACCIO_OP_RC_READ_REQUEST ? ACCIO_BTH_BYTES + ACCIO_RETH_BYTES :
						     accio_rc_hdr_bytes(h->opcode);
	pad = (p[1] >> 4) & 3;
	if (len < hl + pad + ACCIO_ICRC_BYTES)
		return ACCIO_PARSE_SHORT;
	if ((p[1] & 0xf) != 0 || !accio_pkey_ok(accio_get_be16(p + 2)))
		return ACCIO_PARSE_HDR;
	h->se = p[1] >> 7;
	h->dqpn = accio_get_be24(p + 5);
	h->ackreq = p[8] >> 7;
	h->psn = accio_get_be24(p + 9);
	if (accio_rc_has_reth(h->opcode) || h->opcode == ACCIO_OP_RC_READ_REQUEST) {
		h->va = (uint64_t)accio_get_be32(p + n) << 32 | accio_get_be32(p + n + 4);
		h->rkey = accio_get_be32(p + n + 8);
		h->dmalen = accio_get_be32(p + n + 12);
		n += ACCIO_RETH_BYTES;
	}
	if (accio_rc_has_imm(h->opcode)) {
		memcpy(h->imm, p + n, 4);
		n += ACCIO_IMMDT_BYTES;
	}
	if (h->opcode == ACCIO_OP_RC_ACK) {
		h->syndrome = p[n];
		h->msn = accio_get_be24(p + n + 1);
	}
	*payoff = hl;
	*paylen = len - hl - pad - ACCIO_ICRC_BYTES;
	return ACCIO_PARSE_OK;
}

/* a - b between two 24-bit PSNs, as a signed distance. */
static inline int32_t accio_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

/* The IPv4 header checksum over n bytes (n even). */
static inline uint16_t accio_ip_csum(const uint8_t *p, size_t n)
{
	uint32_t s = 0;
	size_t i;

	for (i = 0; i < n; i += 2)
		s += accio_get_be16(p + i);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/*
 * The GRH of a RoCEv2 datagram received over IPv4, as a UD receive
 * buffer gets it: 20 zero bytes, then the IPv4 header. saddr and daddr in
 * network order (as the bytes of an in_addr); udp_bytes: the UDP payload
 * length (ICRC included).
 */
static inline void accio_grh_ipv4(uint8_t *g, uint32_t saddr, uint32_t daddr, size_t udp_bytes)
{
	uint8_t *ip = g + 20;

	memset(g, 0, ACCIO_GRH_BYTES);
	ip[0] = 0x45;					/* version 4, IHL 5 */
	accio_put_be16(ip + 2, (uint16_t)(udp_bytes + ACCIO_IP_UDP_BYTES));
	ip[8] = 64;					/* TTL */
	ip[9] = 17;					/* UDP */
	memcpy(ip + 12, &saddr, 4);
	memcpy(ip + 16, &daddr, 4);
	accio_put_be16(ip + 10, accio_ip_csum(ip, 20));
}

/* True if the 16-byte GID is IPv4-mapped (::ffff:a.b.c.d); *addr: a.b.c.d. */
static inline int accio_gid_ipv4(const uint8_t *gid, uint32_t *addr)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	if (memcmp(gid, prefix, sizeof(prefix)))
		return 0;
	memcpy(addr, gid + 12, 4);
	return 1;
}

#endif /* ACCIO_WIRE_H */
