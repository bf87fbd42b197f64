/*
 * Accio port: how the Accio NIC and the uncore's UDP offload engine hand
 * each other frames, in the shape of hw/stream.h's StreamSink.
 *
 * Both devices implement the TYPE_ACCIO_PORT interface, and each has a
 * link property to the other's port, which the machine sets before it
 * realizes them:
 *
 *   accio-nic.engine -> the uncore: the frames the NIC received, the
 *                       link's state and the station's MAC address
 *   accio-uncore.nic -> the NIC: the frames the engine built, for the wire
 *
 * so that neither device knows the other's type. An unset link leaves the
 * device on its own: a NIC without an engine keeps every frame for its
 * own queue; an engine without a NIC sends its frames nowhere.
 *
 * Both ends run on the SoC's one clock (below): the times a frame carries
 * are nanoseconds of QEMU_CLOCK_VIRTUAL.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_ACCIO_PORT_H
#define HW_ACCIO_PORT_H

#include "qom/object.h"

#define TYPE_ACCIO_PORT "accio-port"

typedef struct AccioPortClass AccioPortClass;
DECLARE_CLASS_CHECKERS(AccioPortClass, ACCIO_PORT, TYPE_ACCIO_PORT)
#define ACCIO_PORT(obj) \
     INTERFACE_CHECK(AccioPort, (obj), TYPE_ACCIO_PORT)

typedef struct AccioPort AccioPort;

typedef void (*AccioPortNotifyFn)(void *opaque);

/* A whole Ethernet frame (without FCS) pushed to a port. */
typedef struct AccioPortFrame {
    const uint8_t *buf;
    size_t len;
    /*
     * in: the frame is ready for the port this long after now (the
     * engine's fetch of a TX ring record; 0: at once)
     */
    uint64_t delay_ns;
    /*
     * out: set by a port that puts the frame on a wire when it takes it:
     * the time its first bit goes out, which may be later than now when
     * frames ahead of it are still on their way
     */
    uint64_t wire_ns;
} AccioPortFrame;

struct AccioPortClass {
    InterfaceClass parent;
    /**
     * push - offer a frame to the port's device. Returns the bytes taken:
     * @f->len when the device took the frame, 0 when it did not. The
     * NIC refuses a frame only when it has no room for it (the sender
     * did not ask can_push() first) or the frame is longer than an
     * Ethernet frame; the engine declines the frames that are not for
     * its ICT rows, which the NIC then keeps for its own queue.
     * @port: the port to push to
     * @f: the frame; the device copies what it keeps
     */
    size_t (*push)(AccioPort *port, AccioPortFrame *f);
    /**
     * can_push - whether the port's device takes a frame now. If not
     * implemented, it always does. On false the device calls
     * @notify(@notify_opaque) once, when it takes frames again (the
     * NIC: when a frame of its engine queue left for the wire, or when
     * the link came back), and forgets it; a later false remembers the
     * caller anew.
     * @notify: optional; only called if false is returned
     * @notify_opaque: opaque data to pass to @notify
     */
    bool (*can_push)(AccioPort *port, AccioPortNotifyFn notify,
                     void *notify_opaque);
    /**
     * set_link - the NIC tells its engine that the link went down (@up
     * false) or came back. Optional.
     */
    void (*set_link)(AccioPort *port, bool up);
    /**
     * set_station - the NIC tells its engine the station's MAC address,
     * the source of the frames the engine builds: at reset and whenever
     * software writes it. Optional.
     */
    void (*set_station)(AccioPort *port, const uint8_t mac[6]);
};

size_t accio_port_push(AccioPort *port, AccioPortFrame *f);
bool accio_port_can_push(AccioPort *port, AccioPortNotifyFn notify,
                         void *notify_opaque);
void accio_port_set_link(AccioPort *port, bool up);
void accio_port_set_station(AccioPort *port, const uint8_t mac[6]);

/*
 * The SoC's one clock: harts, bus, NIC and uncore (62.5 MHz without
 * -icount; with it, one instruction's time). The devices' timing
 * properties count cycles of it.
 */
#define ACCIO_SOC_CYCLE_NS 16
uint64_t accio_soc_cycle_ns(void);
uint64_t accio_soc_cycles_ns(uint64_t cycles);

#endif /* HW_ACCIO_PORT_H */
