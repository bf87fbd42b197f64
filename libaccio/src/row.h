/* SPDX-License-Identifier: MIT */
/*
 * The bottom layer of libaccio: one ICT row as the kernel hands it out.
 *
 *   accio_row_open   SIOCACCIO on a bound UDP socket, then the row fd's
 *                    mappings: the register page at offset 0, the RX and
 *                    the TX ring each mapped twice, back to back, so that
 *                    a record never wraps in virtual memory; the status
 *                    page (read-only)
 *   accio_row_close  the mappings and the row fd (accio_row_retire and
 *                    accio_row_forget: the same in two steps)
 *   accio_row_wait   the row's sleep: accio_wait(2), or ACCIO_IOC_WAIT on a
 *                    kernel without the system call
 *   rec_*            the ring records, laid out by the register map
 *                    (linux/accio_contract.h: generated from the register
 *                    map, carried by the kernel series)
 *
 * Nothing here knows descriptors, sockets' options or policy. libaccio's
 * connections (conn.c), the verbs provider's queue pairs
 * (libaccio/verbs) and the raw ping-pong (apps/udp_pingpong.c) all stand
 * on it; each compiles row.c in.
 */
#ifndef ACCIO_ROW_H
#define ACCIO_ROW_H

#include <endian.h>
#include <stdint.h>
#include <string.h>
#include <linux/accio.h>

#include <linux/accio_contract.h>

#define ROW_HIDDEN __attribute__((visibility("hidden")))

struct accio_row {
	int fd;				/* the row fd, -1: none */
	uint32_t index;			/* ICT row */
	volatile uint64_t *regs;	/* the register page */
	uint8_t *rx, *tx;		/* the rings, each mapped twice */
	uint32_t rx_bytes, tx_bytes;
	uint32_t local_ip, remote_ip;	/* network order; remote 0: any */
	uint16_t local_port, remote_port;	/* network order */
	const volatile struct accio_row_status *status;	/* never NULL once open */
	uint32_t paths_gen;		/* the gen what the owner learnt of the
					 * row's paths holds for: SIOCACCIO's
					 * answer's, then its own (dests, MTU) */
};

/*
 * Accelerate the bound UDP socket sock (flags: ACCIO_ACCEL_*; ring sizes
 * 0 for the kernel's default) and map the row. 0, or -1 with errno and
 * nothing left open or mapped.
 */
ROW_HIDDEN int accio_row_open(struct accio_row *r, int sock, uint32_t flags,
			      uint32_t rx_bytes, uint32_t tx_bytes);

/* Unmap what is mapped and close the row fd; the row may be half open. */
ROW_HIDDEN void accio_row_close(struct accio_row *r);

/*
 * accio_row_close() in two steps, for an owner whose threads read the
 * status page without its locks: retire closes the row, but the status
 * page's address stays readable (zeros: no row, paths_gen 0); forget
 * gives the address back once no thread can still hold it.
 */
ROW_HIDDEN void accio_row_retire(struct accio_row *r);
ROW_HIDDEN void accio_row_forget(struct accio_row *r);

/*
 * Sleep until a side of the row fd is ready (dir ACCIO_WAIT_RX/TX; need:
 * TX bytes that must fit; timeout_ms -1 forever). ACCIO_READY_* or -1
 * with errno.
 */
ROW_HIDDEN long accio_row_wait(int fd, int dir, uint32_t need, int timeout_ms);

/* ---- registers ---------------------------------------------------------- */

/*
 * RX_WPTR without installing an evicted row: the register while the row
 * is there, else where the ring ended when it went (never ahead of the
 * register: a row installed meanwhile may have more). The kernel writes
 * rx_wptr before it clears installed; the fence orders the two loads only
 * where it matters, off the path of a row that is there.
 */
static inline uint64_t row_rx_wptr(const struct accio_row *r)
{
	if (__atomic_load_n(&r->status->installed, __ATOMIC_RELAXED))
		return r->regs[ACCIO_ROW_RX_WPTR / 8];
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return r->status->rx_wptr;
}

/* A route or an Accio NIC's MTU changed since SIOCACCIO or last renewed. */
static inline uint32_t row_paths_gen(const struct accio_row *r)
{
	return r->status->paths_gen;
}

static inline uint64_t row_reg(const struct accio_row *r, unsigned int off)
{
	return r->regs[off / 8];
}

static inline void row_reg_write(struct accio_row *r, unsigned int off, uint64_t v)
{
	r->regs[off / 8] = v;
}

/* Ask the engine to send the records between TX_RPTR and TX_WPTR. */
static inline void row_doorbell(struct accio_row *r)
{
	r->regs[ACCIO_ROW_DOORBELL / 8] = 1;
}

/* ---- ring records ------------------------------------------------------- */

/* A record's bytes in its ring: header and payload, padded. */
static inline uint32_t rec_pad(uint32_t n)
{
	return (n + ACCIO_REC_ALIGN - 1) & ~(uint32_t)(ACCIO_REC_ALIGN - 1);
}

static inline uint32_t rec_rx_bytes(uint32_t len)
{
	return rec_pad(ACCIO_RX_HDR + len);
}

static inline uint32_t rec_tx_bytes(uint32_t len)
{
	return rec_pad(ACCIO_TX_HDR + len);
}

/* An RX record's header, in host order. */
struct rec_rx {
	uint16_t len;		/* payload bytes */
	uint16_t sport;		/* source port */
	uint32_t sip;		/* source IPv4 */
	uint64_t tstamp;	/* hardware time of arrival, ns */
	uint8_t tos, ttl;	/* the IPv4 header's (rec_rx_decode_ip) */
	uint32_t dip;		/* destination IPv4 (rec_rx_decode_ip) */
};

/*
 * The little-endian field at byte off of a record header, from the aligned
 * 8-byte word that holds it: records start 8-byte aligned, so a header is
 * two loads whatever the core's cost of unaligned or byte accesses. The
 * caller's type keeps the field's width.
 */
static inline uint64_t rec_word_field(const uint8_t *h, unsigned int off)
{
	uint64_t w;

	memcpy(&w, __builtin_assume_aligned(h + off / 8 * 8, 8), 8);
	return le64toh(w) >> (8 * (off % 8));
}

/* h: an RX record (or a copy of its header), 8-byte aligned. */
static inline void rec_rx_decode(const uint8_t *h, struct rec_rx *rec)
{
	rec->len = rec_word_field(h, ACCIO_RX_REC_LEN);
	rec->sport = rec_word_field(h, ACCIO_RX_REC_SPORT);
	rec->sip = rec_word_field(h, ACCIO_RX_REC_SIP);
	rec->tstamp = rec_word_field(h, ACCIO_RX_REC_TSTAMP);
}

/* The IPv4 header's fields of a record, which only control messages need. */
static inline void rec_rx_decode_ip(const uint8_t *h, struct rec_rx *rec)
{
	rec->tos = rec_word_field(h, ACCIO_RX_REC_TOS);
	rec->ttl = rec_word_field(h, ACCIO_RX_REC_TTL);
	rec->dip = rec_word_field(h, ACCIO_RX_REC_DIP);
}

static inline void rec_rx_encode(uint8_t *h, const struct rec_rx *rec)
{
	uint16_t len = htole16(rec->len), sport = htole16(rec->sport);
	uint32_t sip = htole32(rec->sip);
	uint64_t ts = htole64(rec->tstamp);
	uint32_t dip = htole32(rec->dip);

	memset(h, 0, ACCIO_RX_HDR);
	h[ACCIO_RX_REC_TOS] = rec->tos;
	h[ACCIO_RX_REC_TTL] = rec->ttl;
	memcpy(h + ACCIO_RX_REC_DIP, &dip, 4);
	memcpy(h + ACCIO_RX_REC_LEN, &len, 2);
	memcpy(h + ACCIO_RX_REC_SPORT, &sport, 2);
	memcpy(h + ACCIO_RX_REC_SIP, &sip, 4);
	memcpy(h + ACCIO_RX_REC_TSTAMP, &ts, 8);
}

/*
 * A TX record's header (also the direct MMIO window's message header) at
 * h, 8-byte aligned: len payload bytes to ip:port, both in network order
 * as a sockaddr_in holds them (ip 0: the row's remote endpoint); len at
 * most ACCIO_MAX_PAYLOAD, as the callers check. The header is one word:
 * one store.
 */
_Static_assert(ACCIO_TX_HDR == 8, "a TX record header is one 8-byte word");

static inline void rec_tx_encode(uint8_t *h, uint32_t len, uint32_t ip, uint16_t port)
{
	uint64_t w = (uint64_t)len << (8 * ACCIO_TX_REC_LEN) |
		     (uint64_t)be16toh(port) << (8 * ACCIO_TX_REC_DPORT) |
		     (uint64_t)be32toh(ip) << (8 * ACCIO_TX_REC_DIP);

	w = htole64(w);
	memcpy(__builtin_assume_aligned(h, 8), &w, 8);
}

#endif /* ACCIO_ROW_H */
