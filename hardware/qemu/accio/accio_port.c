/*
 * Accio port: the interface between the Accio NIC and the uncore's UDP
 * offload engine (accio_port.h), and the SoC's one clock.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/module.h"
#include "system/cpu-timers.h"
#include "hw/accio/accio_port.h"

size_t accio_port_push(AccioPort *port, AccioPortFrame *f)
{
    AccioPortClass *k = ACCIO_PORT_GET_CLASS(port);

    return k->push(port, f);
}

bool accio_port_can_push(AccioPort *port, AccioPortNotifyFn notify,
                         void *notify_opaque)
{
    AccioPortClass *k = ACCIO_PORT_GET_CLASS(port);

    return k->can_push ? k->can_push(port, notify, notify_opaque) : true;
}

void accio_port_set_link(AccioPort *port, bool up)
{
    AccioPortClass *k = ACCIO_PORT_GET_CLASS(port);

    if (k->set_link) {
        k->set_link(port, up);
    }
}

void accio_port_set_station(AccioPort *port, const uint8_t mac[6])
{
    AccioPortClass *k = ACCIO_PORT_GET_CLASS(port);

    if (k->set_station) {
        k->set_station(port, mac);
    }
}

/*
 * One clock for the SoC: the harts, the bus, the NIC's pipeline and the
 * uncore run at the same frequency, the harts' (an instruction a cycle:
 * 2^shift ns under -icount; without it, the evaluation's 62.5 MHz).
 */
uint64_t accio_soc_cycle_ns(void)
{
    return icount_enabled() ? icount_to_ns(1) : ACCIO_SOC_CYCLE_NS;
}

uint64_t accio_soc_cycles_ns(uint64_t cycles)
{
    return cycles * accio_soc_cycle_ns();
}

static const TypeInfo accio_port_info = {
    .name = TYPE_ACCIO_PORT,
    .parent = TYPE_INTERFACE,
    .class_size = sizeof(AccioPortClass),
};

static void accio_port_register_types(void)
{
    type_register_static(&accio_port_info);
}

type_init(accio_port_register_types)
