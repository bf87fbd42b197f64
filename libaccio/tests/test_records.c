// SPDX-License-Identifier: MIT
/*
 * Ring records (row.h) on the host: the byte images the engine reads and
 * writes, as the register map lays them out (accio_contract.h), for
 * lengths, ports and addresses at their extremes; record sizes with their
 * padding.
 */
#include <arpa/inet.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "row.h"

static void rx_image(void)
{
	/*
	 * 1472 bytes from 10.0.2.2:7777 to 10.0.2.15 at 0x0102030405060708 ns,
	 * TOS 0xb9, TTL 63
	 */
	static const uint8_t img[24] __attribute__((aligned(8))) = {
		0xc0, 0x05, 0x61, 0x1e, 0x02, 0x02, 0x00, 0x0a,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
		0xb9, 0x3f, 0x00, 0x00, 0x0f, 0x02, 0x00, 0x0a,
	};
	uint8_t back[24] __attribute__((aligned(8)));
	struct rec_rx h;

	CHECK(ACCIO_RX_HDR == sizeof(img));
	rec_rx_decode(img, &h);
	rec_rx_decode_ip(img, &h);
	CHECK(h.len == 1472);
	CHECK(h.sport == 7777);
	CHECK(h.sip == 0x0a000202);
	CHECK(h.tstamp == 0x0102030405060708ull);
	CHECK(h.tos == 0xb9 && h.ttl == 63 && h.dip == 0x0a00020f);
	rec_rx_encode(back, &h);
	CHECK(!memcmp(back, img, sizeof(img)));
}

static void rx_fields_apart(void)
{
	uint8_t img[ACCIO_RX_HDR] __attribute__((aligned(8)));
	struct rec_rx h;

	/* all ones in one field leave the others at 0 */
	memset(img, 0, sizeof(img));
	memset(img + ACCIO_RX_REC_SPORT, 0xff, 2);
	rec_rx_decode(img, &h);
	CHECK(h.len == 0 && h.sport == 0xffff && h.sip == 0 && h.tstamp == 0);
	memset(img, 0, sizeof(img));
	memset(img + ACCIO_RX_REC_SIP, 0xff, 4);
	rec_rx_decode(img, &h);
	CHECK(h.len == 0 && h.sport == 0 && h.sip == 0xffffffff && h.tstamp == 0);
	memset(img, 0, sizeof(img));
	memset(img + ACCIO_RX_REC_TSTAMP, 0xff, 8);
	rec_rx_decode(img, &h);
	rec_rx_decode_ip(img, &h);
	CHECK(h.len == 0 && h.sport == 0 && h.sip == 0 && h.tstamp == UINT64_MAX);
	CHECK(h.tos == 0 && h.ttl == 0 && h.dip == 0);
	memset(img, 0, sizeof(img));
	memset(img + ACCIO_RX_REC_TTL, 0xff, 1);
	rec_rx_decode(img, &h);
	rec_rx_decode_ip(img, &h);
	CHECK(h.tstamp == 0 && h.tos == 0 && h.ttl == 0xff && h.dip == 0);
	memset(img, 0, sizeof(img));
	memset(img + ACCIO_RX_REC_DIP, 0xff, 4);
	rec_rx_decode_ip(img, &h);
	CHECK(h.tos == 0 && h.ttl == 0 && h.dip == 0xffffffff);
}

static void tx_image(void)
{
	uint8_t h[ACCIO_TX_HDR] __attribute__((aligned(8)));
	static const uint8_t want[8] = { 0x20, 0x04, 0xb7, 0x12, 0x02, 0x03, 0x00, 0x0a };

	/* ip and port in network order, as a sockaddr_in has them */
	rec_tx_encode(h, 1056, htonl(0x0a000302), htons(ACCIO_ROCE_PORT));
	CHECK(!memcmp(h, want, 8));
	rec_tx_encode(h, 64, 0, 0);	/* the connected peer */
	CHECK(h[0] == 64 && !h[1] && !h[2] && !h[3] && !h[4] && !h[5] && !h[6] && !h[7]);
	rec_tx_encode(h, ACCIO_MAX_PAYLOAD, htonl(0xffffffff), htons(0xffff));
	CHECK(h[ACCIO_TX_REC_LEN] == (ACCIO_MAX_PAYLOAD & 0xff));
	CHECK(h[ACCIO_TX_REC_LEN + 1] == ACCIO_MAX_PAYLOAD >> 8);
	CHECK(h[ACCIO_TX_REC_DPORT] == 0xff && h[ACCIO_TX_REC_DIP + 3] == 0xff);
}

static void sizes(void)
{
	CHECK(rec_rx_bytes(0) == ACCIO_RX_HDR);
	CHECK(rec_rx_bytes(1) == ACCIO_RX_HDR + ACCIO_REC_ALIGN);
	CHECK(rec_rx_bytes(8) == ACCIO_RX_HDR + 8);
	CHECK(rec_rx_bytes(ACCIO_MAX_PAYLOAD) == 1496);
	CHECK(rec_tx_bytes(0) == ACCIO_TX_HDR);
	CHECK(rec_tx_bytes(9) == ACCIO_TX_HDR + 16);
	CHECK(rec_tx_bytes(ACCIO_MAX_PAYLOAD) == 1480);
	CHECK(rec_pad(7) == 8 && rec_pad(8) == 8 && rec_pad(0) == 0);
}

int main(void)
{
	rx_image();
	rx_fields_apart();
	tx_image();
	sizes();
	CHECK_DONE("records");
}
