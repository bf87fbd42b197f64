/* SPDX-License-Identifier: MIT */
/*
 * The Accio uncore as a plain C model: I/O Connection Table, per-hart
 * hardware ready queues with the prioritized wake-up interrupt, the UDP
 * offload engine and the control event queue.
 *
 * The model has no dependency on QEMU: the QEMU device wraps it, and the
 * host test harness drives it directly with the vectors in
 * hardware/vectors/. It is the executable specification the RTL follows.
 * Register offsets come from the generated accio_offsets.h; the event types
 * (enum accio_event), the ring record layouts and the shared numbers
 * (ACCIO_MAX_PAYLOAD, ...) from the generated accio_contract.h.
 */
#ifndef ACCIO_UNCORE_H
#define ACCIO_UNCORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "accio_contract.h"

#define ACCIO_MAX_ROWS		4096
#define ACCIO_MAX_HARTS		64
/* What a refused user-mode load returns. */
#define ACCIO_POISON		0xbadacce55badacceULL
/* Who performs a register access: privilege, satp ASID and hart. */
struct accio_access {
	bool user;
	uint16_t asid;
	unsigned int hart;
};

struct accio_uncore_ops {
	/* DMA to and from system memory; 0 on success. */
	int (*dma_read)(void *opaque, uint64_t addr, void *buf, size_t len);
	int (*dma_write)(void *opaque, uint64_t addr, const void *buf, size_t len);
	/*
	 * Hand a built frame to the NIC's wire. Returns the time at which the
	 * frame's first bit goes on the wire, in ns on the clock of now_ns()
	 * (the frame may wait behind others, so it can be later than now).
	 * The engine stores it in the row's TX_TSTAMP as it counts the frame
	 * in TX_PKTS.
	 */
	uint64_t (*transmit)(void *opaque, const uint8_t *frame, size_t len);
	/*
	 * Optional: false while the NIC cannot take another frame. The engine
	 * then leaves the rest of the ring in place (TX_RPTR stops) until
	 * accio_uncore_tx_resume().
	 */
	bool (*tx_ready)(void *opaque);
	/* Lines 0..harts-1: wake-up interrupt of each hart; line harts: events. */
	void (*set_irq)(void *opaque, unsigned int line, int level);
	/* Hardware time for RX timestamps, in ns. */
	uint64_t (*now_ns)(void *opaque);
};

struct accio_uncore;

struct accio_uncore *accio_uncore_new(unsigned int rows, unsigned int harts,
				      const struct accio_uncore_ops *ops,
				      void *opaque);
void accio_uncore_free(struct accio_uncore *u);
void accio_uncore_reset(struct accio_uncore *u);
/* Size of the register window for this configuration, in bytes. */
uint64_t accio_uncore_window(const struct accio_uncore *u);
/* In ops->transmit: whether the frame was read from a TX ring (a doorbell)
 * rather than written into the MMIO transmit window. */
bool accio_uncore_tx_from_ring(const struct accio_uncore *u);

uint64_t accio_uncore_read(struct accio_uncore *u, uint64_t off,
			   const struct accio_access *who);
/* A 64-bit store (registers). */
void accio_uncore_write(struct accio_uncore *u, uint64_t off, uint64_t val,
			const struct accio_access *who);
/* A naturally aligned store of 1, 2, 4 or 8 bytes (the MMIO TX window). */
void accio_uncore_store(struct accio_uncore *u, uint64_t off, uint64_t val,
			unsigned int size, const struct accio_access *who);

/*
 * Offer a received frame to the offload engine. Returns true when the engine
 * took it (delivered to a row or dropped as malformed for the engine); false
 * sends it on along the normal NIC path.
 */
bool accio_uncore_rx(struct accio_uncore *u, const uint8_t *frame, size_t len);
void accio_uncore_link(struct accio_uncore *u, bool up);
/* The NIC has room again: carry on with the rows whose doorbell waits. */
void accio_uncore_tx_resume(struct accio_uncore *u);
/* The station (source) MAC address used for transmitted frames. */
void accio_uncore_set_mac(struct accio_uncore *u, const uint8_t mac[6]);

/*
 * Diagnostics: the live state as text (global counters, each hart's ACCEL
 * and WAKE registers and ready-queue entries, every enabled row's state
 * bits, owner and ring pointers). Writes at most len bytes including the
 * terminating NUL (buf may be NULL when len is 0) and returns the length
 * the whole text needs, like snprintf.
 */
size_t accio_uncore_dump(struct accio_uncore *u, char *buf, size_t len);

#endif /* ACCIO_UNCORE_H */
