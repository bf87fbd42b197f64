/*
 * Accio NIC device model.
 *
 * SPDX-License-Identifier: GPL-2.0-or-later
 */
#ifndef HW_ACCIO_NIC_H
#define HW_ACCIO_NIC_H

#include "hw/sysbus.h"
#include "net/net.h"
#include "qom/object.h"
#include "hw/accio/accio_offsets.h"
#include "hw/accio/accio_wire.h"
#include "hw/accio/accio_port.h"

#define TYPE_ACCIO_NIC "accio-nic"
OBJECT_DECLARE_SIMPLE_TYPE(AccioNICState, ACCIO_NIC)

#define ACCIO_NIC_MMIO_SIZE 0x1000
#define ACCIO_NIC_MAX_DEPTH 256
#define ACCIO_NIC_FRAME_MAX 1518
/* Frames of the offload engine between its DMA and the wire. */
#define ACCIO_NIC_ENG_DEPTH 8
/* Frames received and waiting for the bus (the NIC's receive FIFO). */
#define ACCIO_NIC_RX_FIFO 16
/* Answers of the wire peer (wire-peer=echo) not yet back at the NIC: a
 * queue deep enough for a thousand clients with a request out each. */
#define ACCIO_NIC_PEER_DEPTH 2048

#define ACCIO_NIC_ID_VALUE ACCIO_NIC_ID_RESET

/*
 * The NIC's timing in cycles of the SoC's one clock (accio_port.h), as
 * calibrated against the RTL SoC by eval/bench_soc.py
 * (eval/results/soc.json); the properties' defaults.
 */
#define ACCIO_NIC_BUS_WIDTH_BITS_CAL 13
#define ACCIO_NIC_PIPELINE_CYCLES_CAL 0

/* Index of a statistics counter in AccioNICState.stats. */
#define ACCIO_STAT(reg) ((ACCIO_NIC_##reg - ACCIO_NIC_RX_FRAMES) / 8)
#define ACCIO_STAT_RX_FRAMES         ACCIO_STAT(RX_FRAMES)
#define ACCIO_STAT_RX_BYTES          ACCIO_STAT(RX_BYTES)
#define ACCIO_STAT_TX_FRAMES         ACCIO_STAT(TX_FRAMES)
#define ACCIO_STAT_TX_BYTES          ACCIO_STAT(TX_BYTES)
#define ACCIO_STAT_RX_DROP_NOBUF     ACCIO_STAT(RX_DROP_NOBUF)
#define ACCIO_STAT_RX_DROP_RUNT      ACCIO_STAT(RX_DROP_RUNT)
#define ACCIO_STAT_RX_DROP_OVERSIZE  ACCIO_STAT(RX_DROP_OVERSIZE)
#define ACCIO_STAT_RX_DROP_FILTER    ACCIO_STAT(RX_DROP_FILTER)
#define ACCIO_STAT_RX_DROP_DISABLED  ACCIO_STAT(RX_DROP_DISABLED)
#define ACCIO_STAT_TX_ERRORS         ACCIO_STAT(TX_ERRORS)
#define ACCIO_STAT_SEND_REQ_OVERFLOW ACCIO_STAT(SEND_REQ_OVERFLOW)
#define ACCIO_STAT_RECV_REQ_OVERFLOW ACCIO_STAT(RECV_REQ_OVERFLOW)
#define ACCIO_STAT_TX_DROP_LINKDOWN  ACCIO_STAT(TX_DROP_LINKDOWN)
#define ACCIO_STAT_RX_DROP_CSUM      ACCIO_STAT(RX_DROP_CSUM)
#define ACCIO_STAT_RX_CSUM_OK        ACCIO_STAT(RX_CSUM_OK)
#define ACCIO_STAT_TX_CSUM           ACCIO_STAT(TX_CSUM)
#define ACCIO_STAT_COUNT             (ACCIO_STAT(TX_CSUM) + 1)

/* A FIFO of (a, b) pairs. */
typedef struct AccioRing {
    uint64_t a[ACCIO_NIC_MAX_DEPTH];
    uint64_t b[ACCIO_NIC_MAX_DEPTH];
    uint32_t head;
    uint32_t count;
} AccioRing;

typedef struct AccioTxFrame {
    uint8_t data[ACCIO_NIC_FRAME_MAX];
    uint32_t len;
    bool error;
    bool csum;      /* SEND_REQ.CSUM: fill in the TCP/UDP checksum */
} AccioTxFrame;

struct AccioNICState {
    SysBusDevice parent_obj;

    MemoryRegion mmio;
    qemu_irq irq;
    NICState *nic;
    NICConf conf;
    QEMUTimer *tx_timer;
    QEMUTimer *rx_timer;
    AccioPort *engine;          /* link: the UDP offload engine's port */

    /* properties */
    uint32_t depth;
    uint32_t bus_width_bits;
    uint64_t bus_freq_hz;
    uint32_t pipeline_cycles;
    uint32_t link_mbps;

    /* registers */
    uint64_t ctrl;
    uint64_t macaddr;
    uint64_t intr_mask;
    uint64_t intr_status;
    uint64_t send_tstamp;
    uint64_t recv_tstamp;
    uint32_t rx_buf_len;
    uint64_t stats[ACCIO_STAT_COUNT];

    /* timing: when the DMA engine and the wire are next free */
    uint64_t bus_free_at;
    uint64_t wire_free_at;

    /* send: in flight (wire start, wire end) then completed (len, tstamp) */
    AccioRing tx_inflight;
    AccioTxFrame tx_frames[ACCIO_NIC_MAX_DEPTH];
    AccioRing tx_comp;
    /* receive: posted buffers, completed (len, arrival) */
    AccioRing rx_posted;
    /* receive FIFO: frames between the wire and the end of their DMA */
    AccioTxFrame rxf_frames[ACCIO_NIC_RX_FIFO];
    uint64_t rxf_arrival[ACCIO_NIC_RX_FIFO];
    uint64_t rxf_done[ACCIO_NIC_RX_FIFO];
    uint32_t rxf_head;
    uint32_t rxf_count;
    AccioRing rx_comp;
    /* the offload engine's frames: wire end times, frames */
    QEMUTimer *eng_timer;
    uint64_t eng_end[ACCIO_NIC_ENG_DEPTH];
    AccioTxFrame eng_frames[ACCIO_NIC_ENG_DEPTH];
    uint32_t eng_head;
    uint32_t eng_count;
    AccioPortNotifyFn eng_notify;   /* the engine waits for room */
    void *eng_notify_opaque;

    /* the wire peer: a host on the virtual clock at the far end */
    char *wire_peer;            /* property: "" (the netdev) or "echo" */
    uint64_t peer_delay_ns;     /* property: service time per frame */
    bool peer_echo;
    QEMUTimer *peer_timer;
    AccioTxFrame peer_frames[ACCIO_NIC_PEER_DEPTH];
    uint64_t peer_end[ACCIO_NIC_PEER_DEPTH];  /* answer fully received */
    uint32_t peer_head;
    uint32_t peer_count;
    uint64_t peer_free_at;      /* the peer's processor is free */
    uint64_t peer_wire_free_at; /* the wire towards the NIC is free */
    /* the peer's traffic generator, started by a datagram to gen_port */
    uint32_t peer_gen_port;     /* property; 0: no generator */
    QEMUTimer *gen_timer;
    uint8_t gen_hdr[42];        /* Ethernet, IPv4, UDP headers */
    uint32_t gen_size;          /* payload bytes */
    uint64_t gen_gap_ns;        /* from one frame's start to the next */
    uint64_t gen_left;
    uint64_t gen_seq;
    uint64_t gen_end;           /* the pending frame is fully received */
    uint64_t gen_sent;          /* read-only property */
    uint64_t gen_paused;        /* read-only: the FIFO paused it */
    uint64_t peer_answered;     /* read-only properties (QMP qom-get) */
    /* the wire seen from outside: a capture, a lockstep wire to a QEMU */
    char *pcap_path;            /* property */
    uint32_t pcap_snaplen;      /* property */
    AccioPcap *pcap;
    char *lockstep_spec;        /* property: listen:PATH or connect:PATH */
    char *lockstep_shm;         /* property: INDEX:PATH, the hub's barrier */
    uint64_t lockstep_ns;       /* property: the wire's latency */
    uint64_t lockstep_spin_ns;  /* property: look before a barrier sleeps */
    char *lockstep_trace;       /* property: a record a shared barrier */
    AccioLockstep *lockstep;
    uint64_t peer_ignored;
    uint64_t peer_overflow;
};

#endif /* HW_ACCIO_NIC_H */
