/*
 * Accio uncore device: the C model of hardware/model on the system bus.
 *
 * Every access is tagged with the privilege mode, the satp ASID and the
 * index of the hart that issued it, which the model uses for the ICT's
 * protection check. Interrupt lines 0..harts-1 are the harts' wake-up
 * interrupts, line "harts" the control event interrupt. Frames reach the
 * engine from the Accio NIC and leave through it, each device pushing to
 * the other's port (accio_port.h; the link property "nic").
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */

#include "qemu/osdep.h"
#include "qemu/log.h"
#include "qemu/module.h"
#include "qemu/plugin.h"
#include "qapi/error.h"
#include "hw/irq.h"
#include "hw/sysbus.h"
#include "hw/qdev-properties.h"
#include "hw/core/cpu.h"
#include "system/dma.h"
#include "system/cpu-timers.h"
#include "cpu.h"
#include "hw/accio/accio_port.h"
#include "hw/accio/accio_uncore_dev.h"

static int dev_dma_read(void *opaque, uint64_t addr, void *buf, size_t len)
{
    return dma_memory_read(&address_space_memory, addr, buf, len,
                           MEMTXATTRS_UNSPECIFIED) == MEMTX_OK ? 0 : -1;
}

static int dev_dma_write(void *opaque, uint64_t addr, const void *buf,
                         size_t len)
{
    if (dma_memory_write(&address_space_memory, addr, buf, len,
                         MEMTXATTRS_UNSPECIFIED) != MEMTX_OK) {
        return -1;
    }
    qemu_plugin_dma_write(addr, len);       /* a timing model's caches */
    return 0;
}

static uint64_t dev_now(void *opaque)
{
    return qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL);
}

/* Returns the wire time of the frame's first bit (TX_TSTAMP). */
static uint64_t dev_transmit(void *opaque, const uint8_t *frame, size_t len)
{
    AccioUncoreState *s = opaque;
    AccioPortFrame f = {
        .buf = frame,
        .len = len,
        .delay_ns = accio_uncore_tx_from_ring(s->model) ?
                    accio_soc_cycles_ns(s->tx_fetch_cycles) : 0,
    };

    if (s->nic && accio_port_push(s->nic, &f)) {
        return f.wire_ns;
    }
    return dev_now(opaque);
}

/* The NIC took the engine's frames out: carry on with the waiting rows. */
static void dev_tx_space(void *opaque)
{
    AccioUncoreState *s = opaque;

    accio_uncore_tx_resume(s->model);
}

static bool dev_tx_ready(void *opaque)
{
    AccioUncoreState *s = opaque;

    return !s->nic || accio_port_can_push(s->nic, dev_tx_space, s);
}

/*
 * Interrupt delivery: a line rises irq-delay-cycles after the model raised it
 * (the synchronizers and the interrupt controller's pipeline of a real
 * SoC; 0: at once) and falls at once, so that a line cleared meanwhile
 * never rises.
 */
static void dev_irq_timer(void *opaque)
{
    AccioIrqLine *l = opaque;

    if (l->want) {
        qemu_set_irq(l->s->irq[l->line], 1);
    }
}

static void dev_set_irq(void *opaque, unsigned int line, int level)
{
    AccioUncoreState *s = opaque;
    AccioIrqLine *l;

    if (!s->irq || line > s->harts) {
        return;
    }
    if (!s->irq_delay_cycles) {
        qemu_set_irq(s->irq[line], level);
        return;
    }
    l = &s->irq_line[line];
    l->want = level;
    if (!level) {
        timer_del(l->timer);
        qemu_set_irq(s->irq[line], 0);
    } else if (!timer_pending(l->timer)) {
        timer_mod(l->timer, qemu_clock_get_ns(QEMU_CLOCK_VIRTUAL) +
                  accio_soc_cycles_ns(s->irq_delay_cycles));
    }
}

static const struct accio_uncore_ops dev_ops = {
    .dma_read = dev_dma_read,
    .dma_write = dev_dma_write,
    .transmit = dev_transmit,
    .tx_ready = dev_tx_ready,
    .set_irq = dev_set_irq,
    .now_ns = dev_now,
};

/* Who is accessing: the hart running this access and its mode and ASID. */
static void who_is_it(struct accio_access *who)
{
    memset(who, 0, sizeof(*who));
    if (current_cpu) {
        CPURISCVState *env = cpu_env(current_cpu);

        who->user = env->priv == PRV_U;
        who->asid = get_field(env->satp, SATP64_ASID);
        who->hart = current_cpu->cpu_index;
    }
}

static uint64_t accio_uncore_mmio_read(void *opaque, hwaddr addr,
                                       unsigned size)
{
    AccioUncoreState *s = opaque;
    struct accio_access who;

    who_is_it(&who);
    /* the core waits for the uncore's answer: a load's round trip */
    icount_charge(current_cpu, (int64_t)s->load_cycles - 1);
    if (size != 8) {
        return 0;   /* registers are 64-bit; the window reads 0 */
    }
    return accio_uncore_read(s->model, addr, &who);
}

static void accio_uncore_mmio_write(void *opaque, hwaddr addr, uint64_t val,
                                    unsigned size)
{
    AccioUncoreState *s = opaque;
    struct accio_access who;

    who_is_it(&who);
    icount_charge(current_cpu, (int64_t)s->store_cycles - 1);
    accio_uncore_store(s->model, addr, val, size, &who);
}

static const MemoryRegionOps accio_uncore_ops = {
    .read = accio_uncore_mmio_read,
    .write = accio_uncore_mmio_write,
    .endianness = DEVICE_LITTLE_ENDIAN,
    .valid = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
    .impl = {
        .min_access_size = 1,
        .max_access_size = 8,
    },
};

/*
 * The engine's port: the NIC offers every frame it received and keeps
 * those the engine declines (not for its rows) for its own queue.
 */
static size_t accio_uncore_port_push(AccioPort *port, AccioPortFrame *f)
{
    AccioUncoreState *s = ACCIO_UNCORE(port);

    return accio_uncore_rx(s->model, f->buf, f->len) ? f->len : 0;
}

static void accio_uncore_port_set_link(AccioPort *port, bool up)
{
    AccioUncoreState *s = ACCIO_UNCORE(port);

    accio_uncore_link(s->model, up);
}

static void accio_uncore_port_set_station(AccioPort *port,
                                          const uint8_t mac[6])
{
    AccioUncoreState *s = ACCIO_UNCORE(port);

    accio_uncore_set_mac(s->model, mac);
}

static void accio_uncore_reset_hold(DeviceState *dev)
{
    AccioUncoreState *s = ACCIO_UNCORE(dev);

    accio_uncore_reset(s->model);
}

static void accio_uncore_realize(DeviceState *dev, Error **errp)
{
    AccioUncoreState *s = ACCIO_UNCORE(dev);
    unsigned int i;

    s->model = accio_uncore_new(s->rows, s->harts, &dev_ops, s);
    if (!s->model) {
        error_setg(errp, "accio-uncore: rows must be 1..%d and harts 1..%d",
                   ACCIO_MAX_ROWS, ACCIO_MAX_HARTS);
        return;
    }
    memory_region_init_io(&s->mmio, OBJECT(s), &accio_uncore_ops, s,
                          "accio-uncore", accio_uncore_window(s->model));
    sysbus_init_mmio(SYS_BUS_DEVICE(dev), &s->mmio);
    s->irq = g_new0(qemu_irq, s->harts + 1);
    s->irq_line = g_new0(AccioIrqLine, s->harts + 1);
    for (i = 0; i <= s->harts; i++) {
        sysbus_init_irq(SYS_BUS_DEVICE(dev), &s->irq[i]);
        s->irq_line[i].s = s;
        s->irq_line[i].line = i;
        s->irq_line[i].timer = timer_new_ns(QEMU_CLOCK_VIRTUAL, dev_irq_timer,
                                            &s->irq_line[i]);
    }
}

static void accio_uncore_unrealize(DeviceState *dev)
{
    AccioUncoreState *s = ACCIO_UNCORE(dev);

    unsigned int i;

    for (i = 0; i <= s->harts; i++) {
        timer_free(s->irq_line[i].timer);
    }
    g_free(s->irq_line);
    accio_uncore_free(s->model);
    g_free(s->irq);
}

/*
 * The "state" property: the model's live state as text (rows, ring
 * pointers, ready queues, ACCEL/WAKE registers), for a host that diagnoses
 * a guest which stopped: QMP qom-get works whatever the guest is doing.
 */
static char *accio_uncore_get_state(Object *obj, Error **errp)
{
    AccioUncoreState *s = ACCIO_UNCORE(obj);
    size_t len = accio_uncore_dump(s->model, NULL, 0) + 1;
    char *text = g_malloc(len);

    accio_uncore_dump(s->model, text, len);
    return text;
}

static const Property accio_uncore_properties[] = {
    DEFINE_PROP_UINT32("rows", AccioUncoreState, rows, 64),
    DEFINE_PROP_UINT32("harts", AccioUncoreState, harts, 4),
    /*
     * timing in cycles of the SoC's clock, as calibrated against the RTL
     * SoC (eval/bench_soc.py): a wake-up line rises irq-delay-cycles
     * after the model raised it, the engine reads a TX ring record in
     * tx-fetch-cycles, a hart's uncached load from the uncore takes
     * load-cycles in all and a store store-cycles (a hart's instruction
     * being one cycle, the access costs that many less one more)
     */
    DEFINE_PROP_UINT32("irq-delay-cycles", AccioUncoreState, irq_delay_cycles,
                       ACCIO_UNCORE_IRQ_DELAY_CYCLES_CAL),
    DEFINE_PROP_UINT32("tx-fetch-cycles", AccioUncoreState, tx_fetch_cycles,
                       ACCIO_UNCORE_TX_FETCH_CYCLES_CAL),
    DEFINE_PROP_UINT32("load-cycles", AccioUncoreState, load_cycles,
                       ACCIO_UNCORE_LOAD_CYCLES_CAL),
    DEFINE_PROP_UINT32("store-cycles", AccioUncoreState, store_cycles,
                       ACCIO_UNCORE_STORE_CYCLES_CAL),
    DEFINE_PROP_LINK("nic", AccioUncoreState, nic, TYPE_ACCIO_PORT,
                     AccioPort *),
};

static void accio_uncore_class_init(ObjectClass *klass, void *data)
{
    DeviceClass *dc = DEVICE_CLASS(klass);
    AccioPortClass *pc = ACCIO_PORT_CLASS(klass);

    dc->realize = accio_uncore_realize;
    dc->unrealize = accio_uncore_unrealize;
    dc->desc = "Accio uncore (ICT, ready queues, UDP offload engine)";
    device_class_set_legacy_reset(dc, accio_uncore_reset_hold);
    device_class_set_props(dc, accio_uncore_properties);
    object_class_property_add_str(klass, "state", accio_uncore_get_state,
                                  NULL);
    pc->push = accio_uncore_port_push;
    pc->set_link = accio_uncore_port_set_link;
    pc->set_station = accio_uncore_port_set_station;
}

static const TypeInfo accio_uncore_type_info = {
    .name = TYPE_ACCIO_UNCORE,
    .parent = TYPE_SYS_BUS_DEVICE,
    .instance_size = sizeof(AccioUncoreState),
    .class_init = accio_uncore_class_init,
    .interfaces = (InterfaceInfo[]) {
        { TYPE_ACCIO_PORT },
        { }
    },
};

static void accio_uncore_register_types(void)
{
    type_register_static(&accio_uncore_type_info);
}

type_init(accio_uncore_register_types)
