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
#include "hw/accio/accio_port.h"

#define TYPE_ACCIO_UNCORE "accio-uncore"
OBJECT_DECLARE_SIMPLE_TYPE(AccioUncoreState, ACCIO_UNCORE)

/*
 * The uncore's timing in cycles of the SoC's one clock (accio_port.h), as
 * calibrated against the RTL SoC by eval/bench_soc.py
 * (eval/results/soc.json); the properties' defaults.
 */
#define ACCIO_UNCORE_TX_FETCH_CYCLES_CAL 50
#define ACCIO_UNCORE_IRQ_DELAY_CYCLES_CAL 29
#define ACCIO_UNCORE_LOAD_CYCLES_CAL 14
#define ACCIO_UNCORE_STORE_CYCLES_CAL 1

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
    AccioPort *nic;         /* link: the NIC's port, the wire */
    AccioIrqLine *irq_line;

    uint32_t rows;
    uint32_t harts;
    uint32_t irq_delay_cycles;
    uint32_t tx_fetch_cycles;
    uint32_t load_cycles;
    uint32_t store_cycles;
};

#endif /* HW_ACCIO_UNCORE_DEV_H */
