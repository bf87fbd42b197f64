/*
 * The Accio NIC's wire, seen from outside the NIC: a capture of every frame
 * in virtual time (pcap), and a wire to a second QEMU whose virtual clock
 * runs in lockstep with this one's.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_ACCIO_WIRE_H
#define HW_ACCIO_WIRE_H

#include "qapi/error.h"

/* ---- capture ------------------------------------------------------------ */

typedef struct AccioPcap AccioPcap;

/*
 * A pcap file with nanosecond timestamps (magic a1b23c4d, link type
 * Ethernet) that records the first @snaplen bytes of each frame at the
 * virtual time it crossed the wire.
 */
AccioPcap *accio_pcap_open(const char *path, uint32_t snaplen, Error **errp);
void accio_pcap_frame(AccioPcap *p, const uint8_t *buf, size_t len,
                      uint64_t t_ns);
void accio_pcap_close(AccioPcap *p);

/* ---- lockstep wire ------------------------------------------------------ */

typedef struct AccioLockstep AccioLockstep;

/* Hands a frame from the peer to the NIC, at virtual time @t_ns (= now). */
typedef void AccioWireDeliver(void *opaque, const uint8_t *buf, size_t len,
                              uint64_t t_ns);

/*
 * @spec is "listen:PATH" or "connect:PATH" (a Unix stream socket): the two
 * QEMUs meet there at start-up. Needs -icount. Both clocks stop at common
 * barriers less than @latency_ns of virtual time apart, and a frame leaving
 * one NIC at t reaches the other at t + @latency_ns: the peer cannot have
 * passed that time yet, so both SoCs together repeat exactly from run to
 * run. Barriers are skipped while both SoCs are idle. At a barrier the
 * wait for the peer looks for up to @spin_ns before it sleeps
 * (accio_lockstep.h, ls_wait_in); 0: it sleeps at once. @shm_spec, when
 * not empty, is "INDEX:PATH": the far end is the hub of accio cluster, and
 * this SoC meets the others at every barrier in the memory it shares at
 * PATH, at place INDEX (accio_lockstep.h, LsShm).
 */
AccioLockstep *accio_lockstep_new(const char *spec, const char *shm_spec,
                                  uint64_t latency_ns, uint64_t spin_ns,
                                  AccioWireDeliver *deliver, void *opaque,
                                  Error **errp);
/*
 * With the shared barrier (@shm_spec): write a record for every barrier
 * this SoC reaches there to @path, three 64-bit integers in the host's
 * byte order: the barrier's virtual time in ns, the wall time in ns it ran
 * since it left the barrier before (0 at its first), and the wall time in
 * ns it then waited there for the others. Buffered (1 MiB) and written out
 * as QEMU exits. False (and @errp set) when @path cannot be opened.
 */
bool accio_lockstep_trace(AccioLockstep *l, const char *path, Error **errp);
/* The NIC is enabled: the first call joins the peer's clock (blocks). */
void accio_lockstep_start(AccioLockstep *l);
/* A frame leaves this NIC at virtual time @t_ns. */
void accio_lockstep_send(AccioLockstep *l, const uint8_t *buf, size_t len,
                         uint64_t t_ns);
void accio_lockstep_free(AccioLockstep *l);

#endif /* HW_ACCIO_WIRE_H */
