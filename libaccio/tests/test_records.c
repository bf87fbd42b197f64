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
	/* 1472 bytes from 10.0.2.2:7777 at 0x0102030405060708 ns */
	static const uint8_t img[16] __attribute__((aligned(8))) = {
		0xc0, 0x05, 0x61, 0x1e, 0x02, 0x02, 0x00, 0x0a,
		0x08, 0x07, 0x06, 0x05, 0x04, 0x03, 0x02, 0x01,
	};
	uint8_t back[16] __attribute__((aligned(8)));
	struct rec_rx h;

	rec_rx_decode(img, &h);
	CHECK(h.len == 1472);
	CHECK(h.sport == 7777);
	CHECK(h.sip == 0x0a000202);
	CHECK(h.tstamp == 0x0102030405060708ull);
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
	CHECK(h.len == 0 && h.sport == 0 && h.sip == 0 && h.tstamp == UINT64_MAX);
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
	CHECK(rec_rx_bytes(ACCIO_MAX_PAYLOAD) == 1488);
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
