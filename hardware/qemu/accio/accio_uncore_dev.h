/*
 * Accio uncore device (wraps the C model of hardware/model).
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_ACCIO_UNCORE_DEV_H
#define HW_ACCIO_UNCORE_DEV_H

#include "hw/sysbus.h"
#include "qom/object.h"
#include "qemu/timer.h"
#include "hw/accio/accio_uncore.h"

#define TYPE_ACCIO_UNCORE "accio-uncore"
OBJECT_DECLARE_SIMPLE_TYPE(AccioUncoreState, ACCIO_UNCORE)

typedef struct AccioNICState AccioNICState;

typedef struct AccioIrqLine {
    struct AccioUncoreState *s;
    unsigned int line;
    QEMUTimer *timer;       /* a delayed rise */
    bool want;              /* the model's level */
} AccioIrqLine;

struct AccioUncoreState {
    SysBusDevice parent_obj;

    MemoryRegion mmio;
    qemu_irq *irq;          /* harts wake-up lines, then the event line */
    struct accio_uncore *model;
    AccioNICState *nic;     /* the wire, set by the machine */
    AccioIrqLine *irq_line;

    uint32_t rows;
    uint32_t harts;
    uint32_t irq_delay_cycles;
    uint32_t tx_fetch_cycles;
    uint32_t load_cycles;
    uint32_t store_cycles;
};

/* The NIC offers every received frame; true when the engine took it. */
bool accio_uncore_offer(AccioUncoreState *s, const uint8_t *frame, size_t len);
void accio_uncore_link_changed(AccioUncoreState *s, bool up);
void accio_uncore_set_station(AccioUncoreState *s, const uint8_t mac[6]);
/* The NIC took the engine's frames out: room for more. */
void accio_uncore_tx_space(AccioUncoreState *s);

#endif /* HW_ACCIO_UNCORE_DEV_H */
